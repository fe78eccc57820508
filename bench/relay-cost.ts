/**
 * CPU per relayed chunk and per request, in one process (a profiling aid, not in RESULTS.md): the
 * simulator on loopback, reached directly, through a bare node:http proxy and through the gateway;
 * the route's CPU minus the direct run's, divided by chunks (long streams) or by requests (one-token
 * streams). `node .build/bench/relay-cost.js`.
 */
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '../src/node/serve.ts';
import { createUndiciFetch } from '../src/node/undici-fetch.ts';
import { createGateway } from '../src/server/create-gateway.ts';
import { createSim } from '../src/sim/create-sim.ts';

const sim = createSim({ timing: { ttftMs: 0, tokensPerSecond: 100000, loadMs: 0, jitter: 0 } });
const simServed = await serve(sim.fetch);
const upstream = new URL(simServed.url);
const agent = new (await import('node:http')).Agent({
  keepAlive: true,
  maxSockets: Number.POSITIVE_INFINITY,
});
const bare = createServer((req, res) => {
  const out = httpRequest(
    {
      host: upstream.hostname,
      port: upstream.port,
      path: req.url,
      method: req.method,
      headers: req.headers,
      agent,
    },
    (incoming) => {
      res.writeHead(incoming.statusCode ?? 502, incoming.headers);
      incoming.pipe(res);
    },
  );
  req.pipe(out);
});
await new Promise<void>((resolve) => bare.listen(0, '127.0.0.1', resolve));
const bareUrl = `http://127.0.0.1:${(bare.address() as AddressInfo).port}`;
const gateway = createGateway({
  upstreams: [
    {
      name: 'sim',
      url: simServed.url,
      dialects: ['openai-chat'],
      models: ['sim'],
      fetch: createUndiciFetch(),
    },
  ],
});
const gatewayServed = await serve(gateway.fetch);
const clientAgent = new (await import('node:http')).Agent({
  keepAlive: true,
  maxSockets: Number.POSITIVE_INFINITY,
});

function run(base: string, tokens: number): Promise<void> {
  const body = JSON.stringify({
    model: 'sim',
    stream: true,
    max_tokens: tokens,
    messages: [{ role: 'user', content: 'hi' }],
  });
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${base}/v1/chat/completions`,
      { method: 'POST', agent: clientAgent, headers: { 'content-type': 'application/json' } },
      (res) => {
        res.on('data', () => {});
        res.on('end', resolve);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function cpu(base: string, streams: number, tokens: number, parallel: number): Promise<number> {
  const before = process.cpuUsage();
  for (let i = 0; i < streams; i += parallel)
    await Promise.all(Array.from({ length: parallel }, () => run(base, tokens)));
  const used = process.cpuUsage(before);
  return used.user + used.system;
}

const routes = { direct: simServed.url, bare: bareUrl, gateway: gatewayServed.url };
const only = process.argv[2];
for (const [label, streams, tokens] of [
  ['per chunk (2000-token streams)', 4, 2000],
  ['per request (1-token streams)', 400, 1],
] as const) {
  if (only !== undefined && !label.includes(only)) continue;
  for (let round = 0; round < 4; round++) {
    const result: Record<string, number> = {};
    for (const [name, base] of Object.entries(routes)) result[name] = await cpu(base, streams, tokens, 4);
    if (round === 0) continue; // warm-up
    const unit = label.startsWith('per chunk') ? streams * tokens : streams;
    const bareCost = (result.bare! - result.direct!) / unit;
    const gatewayCost = (result.gateway! - result.direct!) / unit;
    console.log(
      `${label}: bare ${bareCost.toFixed(1)} µs, gateway ${gatewayCost.toFixed(1)} µs (${(gatewayCost / bareCost).toFixed(2)}×)`,
    );
  }
}
await gatewayServed.close();
await simServed.close();
bare.close();
process.exit(0);
