// `npm run soak`: the bounded reliability soak (not part of `npm test`; test/server/soak-short.test.ts
// runs a short one). 1000 concurrent streams through the gateway for 30 s by default, over loopback.
// Then streams resumed across two replicas while their Redis is killed and restarted from
// a snapshot (soak-redis-restart.ts; --redis-restart-s 0 skips it).
// Usage: node --expose-gc .build/bench/soak.js [--concurrency N] [--duration-s S] [--tps N] [--seed N]
//        [--redis-restart-s S]
import { parseArgs } from 'node:util';
import { runRedisRestartSoak } from './soak-redis-restart.ts';
import { formatSoakReport, runSoak } from './soak-run.ts';

const { values } = parseArgs({
  options: {
    concurrency: { type: 'string', default: '1000' },
    'duration-s': { type: 'string', default: '30' },
    tps: { type: 'string', default: '2' },
    seed: { type: 'string', default: '1' },
    'warmup-s': { type: 'string', default: '20' },
    'redis-restart-s': { type: 'string', default: '10' },
  },
});
const concurrency = Number(values.concurrency);
const report = await runSoak({
  concurrency,
  durationMs: Number(values['duration-s']) * 1000,
  warmupConcurrency: concurrency,
  warmupMs: Number(values['warmup-s']) * 1000,
  tokensPerSecond: Number(values.tps),
  seed: Number(values.seed),
  checkRss: true,
  rssTolerance: 0.1,
  rssSettleMs: 60000,
  log: (line) => process.stderr.write(`${line}\n`),
});
process.stdout.write(`${formatSoakReport(report)}\n`);
let redisOk = true;
const redisSeconds = Number(values['redis-restart-s']);
if (redisSeconds > 0) {
  const redis = await runRedisRestartSoak({
    durationMs: redisSeconds * 1000,
    concurrency: 20,
    tokensPerSecond: 20,
    log: (text) => process.stdout.write(`${text}\n`),
  });
  redisOk = redis.ok;
}
process.exitCode = report.ok && redisOk ? 0 : 1;
