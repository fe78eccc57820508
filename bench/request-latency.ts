/**
 * Where a single request's added latency goes: N sequential one-token requests straight to the
 * simulator and through the gateway (both served on loopback in this process), timed from the request
 * to the first content byte. A profiling aid, not part of RESULTS.md:
 * `node --cpu-prof .build/bench/request-latency.js 300`.
 */
import { request as httpRequest } from 'node:http';
import { createNodeHttpFetch } from '../src/node/node-http-fetch.ts';
import { serve } from '../src/node/serve.ts';
import { createGateway } from '../src/server/create-gateway.ts';
import { createSim } from '../src/sim/create-sim.ts';

function timeToFirstContent(url: string, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    let done = false;
    const req = httpRequest(
      url,
      { method: 'POST', headers: { 'content-type': 'application/json' } },
      (res) => {
        res.on('data', (chunk: Buffer) => {
          if (!done && chunk.includes('"content":"') && !chunk.includes('"content":""')) {
            done = true;
            resolve(performance.now() - started);
          }
        });
        res.on('end', () => {
          if (!done) reject(new Error('no content'));
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const n = Number(process.argv[2] ?? 200);
const sim = createSim({ timing: { ttftMs: 0, tokensPerSecond: 1000, loadMs: 0 } });
const simServed = await serve(sim.fetch);
const gateway = createGateway({
  upstreams: [
    {
      name: 'sim',
      url: simServed.url,
      dialects: ['openai-chat'],
      models: ['sim'],
      fetch: createNodeHttpFetch(),
    },
  ],
});
const gatewayServed = await serve(gateway.fetch);
const body = JSON.stringify({
  model: 'sim',
  stream: true,
  max_tokens: 2,
  messages: [{ role: 'user', content: 'hi' }],
});
const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
for (let round = 0; round < 3; round++) {
  const direct: number[] = [];
  const via: number[] = [];
  for (let i = 0; i < n; i++) {
    direct.push(await timeToFirstContent(`${simServed.url}/v1/chat/completions`, body));
    via.push(await timeToFirstContent(`${gatewayServed.url}/v1/chat/completions`, body));
  }
  console.log(
    `round ${round}: direct p50 ${median(direct).toFixed(3)} ms, via gateway p50 ${median(via).toFixed(3)} ms, added ${(median(via) - median(direct)).toFixed(3)} ms`,
  );
}
await gatewayServed.close();
await simServed.close();
