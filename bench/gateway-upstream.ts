/**
 * The upstream of the gateway bench, in its own process: the simulator (openai-chat as vLLM writes it,
 * 50 tokens/s) served on loopback by src/node/serve.ts. Each response body is watched on its way out:
 * the time every content frame left the simulator is logged under the request's `x-request-id`, so the
 * bench can match chunk k's arrival at the client against the moment the upstream sent it, with the time
 * the request reached the upstream (so the simulator's own, jittered, time to the first token can be
 * taken out of each stream's TTFT). Times are
 * `process.hrtime` (CLOCK_MONOTONIC, one clock for every process on the machine), in ms.
 *
 * Talks to the bench over IPC: sends `{ ready, url }`; answers `{ take: true }` with the send logs of
 * finished streams (and forgets them).
 */
import { serve } from '../src/node/serve.ts';
import { createSim } from '../src/sim/create-sim.ts';

/** Milliseconds on the machine-wide monotonic clock. */
export function monoMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** Per request id: when the request reached the upstream, and when each content frame left it (ms). */
export type SendLog = Record<string, { received: number; sent: number[] }>;

const tokensPerSecond = Number(process.env.BENCH_TPS ?? 50);
const sim = createSim({
  timing: { tokensPerSecond, ttftMs: Number(process.env.BENCH_TTFT_MS ?? 20), jitter: 0.1 },
});
const logs: SendLog = {};
const decoder = new TextDecoder();

/** Counts the frames of an OpenAI chunk stream piece that carry text (`delta.content` not empty). */
function contentFrames(text: string): number {
  let count = 0;
  for (const block of text.split('\n\n')) {
    if (!block.startsWith('data: {')) continue;
    const payload = JSON.parse(block.slice(6)) as { choices?: { delta?: { content?: string } }[] };
    const content = payload.choices?.[0]?.delta?.content;
    if (typeof content === 'string' && content !== '') count += 1;
  }
  return count;
}

const served = await serve(async (request) => {
  const received = monoMs();
  const id = request.headers.get('x-request-id');
  const response = await sim.fetch(request);
  if (id === null || response.body === null || !response.ok) return response;
  const log: number[] = [];
  logs[id] = { received, sent: log };
  const watched = response.body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        // The sim writes whole frames; each content frame is stamped as it leaves.
        const at = monoMs();
        const n = contentFrames(decoder.decode(chunk));
        for (let i = 0; i < n; i++) log.push(at);
        controller.enqueue(chunk);
      },
    }),
  );
  return new Response(watched, { status: response.status, headers: response.headers });
});

process.on('message', (message: { take?: boolean; exit?: boolean }) => {
  if (message.exit === true) process.exit(0);
  if (message.take === true) {
    const out = { ...logs };
    for (const key of Object.keys(logs)) delete logs[key];
    process.send?.({ logs: out });
  }
});
process.send?.({ ready: true, url: served.url });
