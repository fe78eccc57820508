/**
 * The gateway's own CPU per request, with no network: gateway.fetch in-process, an upstream fetch that
 * answers from memory the way createUndiciFetch does (called with (url, init), a push-readable body),
 * and the response taken the way node/serve.ts takes it (a direct writer). Compared with building the
 * same Request and Response objects alone. A profiling aid, not in RESULTS.md:
 * `node .build/bench/gateway-request-cost.js [requests]` (add --cpu-prof to see where it goes).
 */
import { FETCH_TAKES_INIT, PUSH_ONLY } from '../src/client/push-source.ts';
import { createGateway } from '../src/server/create-gateway.ts';
import { directBodyOfResponse } from '../src/server/http/response-output.ts';
import { ONE_TOKEN_CHAT as body, lightChatRequest } from './light-request.ts';
import { pushResponse } from './push-response.ts';

const chunk = (delta: string, finish: string | null) =>
  `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"sim","choices":[{"index":0,"delta":${delta},"logprobs":null,"finish_reason":${finish === null ? 'null' : `"${finish}"`}}]}\n\n`;
const upstreamBody = new TextEncoder().encode(
  `${chunk('{"role":"assistant","content":""}', null)}${chunk('{"content":"Hi"}', null)}${chunk('{"content":""}', 'length')}data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"sim","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}\n\ndata: [DONE]\n\n`,
);

/** When the gateway called the upstream fetch, the upstream body arrived, and the first byte left. */
const marks = { start: 0, fetch: 0, chunk: 0, write: 0 };
const markChunk = (): void => {
  marks.chunk = performance.now();
};
const upstreamFetch = async (_url: string, init: RequestInit) => {
  marks.fetch = performance.now();
  return pushResponse(upstreamBody, (init as Record<symbol, unknown>)[PUSH_ONLY] === true, markChunk);
};
(upstreamFetch as unknown as Record<symbol, unknown>)[FETCH_TAKES_INIT] = true;

const gateway = createGateway({
  upstreams: [
    {
      name: 'memory',
      url: 'http://upstream.invalid',
      dialects: ['openai-chat'],
      models: ['sim'],
      fetch: upstreamFetch as unknown as (request: Request) => Promise<Response>,
    },
  ],
});

function standardRequest(): Request {
  return new Request('http://gateway.invalid/v1/chat/completions', {
    method: 'POST',
    headers: [['content-type', 'application/json']],
    body,
    signal: new AbortController().signal,
  });
}

/** The two parts of the gateway's time that add to TTFT: request -> upstream call, upstream bytes -> out. */
const toUpstream: number[] = [];
const toClient: number[] = [];

async function viaGateway(): Promise<void> {
  marks.start = performance.now();
  marks.write = 0;
  const response = await gateway.fetch(lightChatRequest());
  await new Promise<void>((resolve) => {
    directBodyOfResponse(response)!.attach({
      write: () => {
        if (marks.write === 0) marks.write = performance.now();
        return true;
      },
      end: (text) => {
        if (marks.write === 0 && text !== undefined && text !== '') marks.write = performance.now();
        resolve();
      },
      destroy: () => resolve(),
    });
  });
  toUpstream.push(marks.fetch - marks.start);
  toClient.push(marks.write - marks.chunk);
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

/** For scale: what a standard Request (the adapter's old input) and the upstream Response cost alone. */
async function baseline(): Promise<void> {
  await standardRequest().arrayBuffer();
  pushResponse(upstreamBody, false);
}

const n = Number(process.argv.slice(2).find((arg) => /^\d+$/.test(arg)) ?? 5000);
// `--gateway-only`: profile the gateway without the baseline's samples in the same profile.
const subjects = [
  ['gateway', viaGateway],
  ['Request + Response objects alone', baseline],
] as const;
for (const [name, fn] of process.argv.includes('--gateway-only') ? subjects.slice(0, 1) : subjects) {
  for (let i = 0; i < 1000; i++) await fn();
  toUpstream.length = 0;
  toClient.length = 0;
  const cpu = process.cpuUsage();
  const wall = performance.now();
  for (let i = 0; i < n; i++) await fn();
  const used = process.cpuUsage(cpu);
  console.log(
    `${name}: ${((used.user + used.system) / n).toFixed(1)} µs CPU, ${(((performance.now() - wall) / n) * 1000).toFixed(1)} µs wall per request`,
  );
  if (toUpstream.length > 0) {
    console.log(
      `  on the TTFT path (median): request -> upstream fetch called ${(median(toUpstream) * 1000).toFixed(1)} µs, upstream bytes -> first write ${(median(toClient) * 1000).toFixed(1)} µs`,
    );
  }
}
await gateway.close();
