// One gateway replica for the cross-replica resume tests: an in-process simulator behind a gateway whose
// resume store is Redis (REDIS_URL), served on 127.0.0.1 port 0. Prints {"url", "replica"} as one JSON
// line once listening; SIGTERM closes it gracefully, SIGKILL is the crash the tests want.
import { DIALECT_IDS } from '../../src/dialects/dialect.ts';
import { RedisResumeStore } from '../../src/node/redis-resume-store.ts';
import { serve } from '../../src/node/serve.ts';
import { createGateway } from '../../src/server/create-gateway.ts';
import { createSim } from '../../src/sim/create-sim.ts';

const redisUrl = process.env.REDIS_URL;
if (redisUrl === undefined) throw new Error('REDIS_URL is not set');
const store = new RedisResumeStore({
  url: redisUrl,
  heartbeatMs: 100,
  producerTimeoutMs: 600,
  blockMs: 200,
});
await store.ready();
const sim = createSim({ timing: { tokensPerSecond: Number(process.env.SIM_TPS ?? 100), loadMs: 0 } });
const gateway = createGateway({
  upstreams: [
    { name: 'sim', url: 'http://sim.internal', dialects: DIALECT_IDS, fetch: sim.fetch, models: ['sim'] },
  ],
  resumeStore: store,
  keepStreamOnDisconnect: true,
  keepaliveMs: 0,
});
const served = await serve(gateway.fetch);
process.stdout.write(`${JSON.stringify({ url: served.url, replica: store.replicaId })}\n`);
process.on('SIGTERM', () => {
  void gateway
    .close()
    .then(() => served.close())
    .then(() => process.exit(0));
});
