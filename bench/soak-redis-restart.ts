// The Redis part of `npm run soak`: streams on one gateway replica, their clients cut and
// resumed on another, while the shared Redis is killed (-9, after a SAVE) and restarted from its
// snapshot, then stopped with SIGTERM and restarted after a second down. Every resumed stream must be
// complete with contiguous ids, or end with its dialect's error (or be refused with a 4xx/503): never
// silently short. Bounded in time: new streams start for `durationMs`, every read has a deadline.
import { openAiChat } from '../src/dialects/openai-chat/index.ts';
import { StreamDecoder } from '../src/dialects/stream-decoder.ts';
import type { StreamEvent } from '../src/events/stream-event.ts';
import type { Frame } from '../src/wire/frame.ts';
import { SseDecoder } from '../src/wire/sse-decoder.ts';
import { startPersistentRedis, startRedisReplica } from './persistent-redis.ts';

export interface RedisRestartSoakOptions {
  /** How long new streams keep starting, ms (the restarts happen within it). */
  durationMs: number;
  /** Streams open at once on the producing replica. */
  concurrency: number;
  tokensPerSecond: number;
  log?: ((line: string) => void) | undefined;
}

export interface RedisRestartSoakReport {
  ok: boolean;
  streams: number;
  /** Complete, every id from 1 on. */
  complete: number;
  /** Ended with the dialect's error event. */
  errored: number;
  /** Refused before streaming (404 / 410 / 503). */
  refused: number;
  /** What must never happen: a clean finish with ids missing, a cut, a hang. */
  failures: string[];
  restarts: string[];
}

const READ_DEADLINE_MS = 30000;

const replica = (redisUrl: string, tokensPerSecond: number) =>
  startRedisReplica(redisUrl, tokensPerSecond, { heartbeatMs: 200, producerTimeoutMs: 2000, blockMs: 500 });

/** Reads SSE frames until the body ends, `stopAfter` frames arrived, or the deadline. */
async function readFrames(
  response: Response,
  stopAfter: number,
): Promise<{ frames: Frame[]; ended: boolean; timedOut: boolean }> {
  const frames: Frame[] = [];
  const decoder = new SseDecoder({ onFrame: (frame) => frames.push(frame) });
  const reader = response.body!.getReader();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    reader.cancel().catch(() => {});
  }, READ_DEADLINE_MS);
  try {
    for (;;) {
      const next = await reader.read();
      if (next.done) return { frames, ended: !timedOut, timedOut };
      decoder.feed(next.value);
      if (frames.length >= stopAfter) {
        await reader.cancel();
        return { frames, ended: false, timedOut: false };
      }
    }
  } catch {
    return { frames, ended: false, timedOut };
  } finally {
    clearTimeout(timer);
  }
}

const post = (url: string, maxTokens: number, lastEventId?: string) =>
  fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: Object.assign(
      { 'content-type': 'application/json' },
      lastEventId === undefined ? {} : { 'last-event-id': lastEventId },
    ),
    body: JSON.stringify({
      model: 'sim',
      stream: true,
      messages: [{ role: 'user', content: 'tell me about the sea' }],
      max_tokens: maxTokens,
    }),
    signal: AbortSignal.timeout(READ_DEADLINE_MS),
  });

type Verdict = 'complete' | 'errored' | 'refused' | string;

/** One stream: started on A, cut after a few events, resumed on B (at once or a little later). */
async function oneStream(a: string, b: string, random: () => number): Promise<Verdict> {
  const maxTokens = 20 + Math.floor(random() * 80);
  const first = await readFrames(await post(a, maxTokens), 1 + Math.floor(random() * 5));
  if (first.frames.length === 0) return 'the first request wrote no event';
  const lastId = first.frames.at(-1)!.id!;
  // Some follow live at once, some come back after a while (maybe across a restart).
  await new Promise((resolve) => setTimeout(resolve, random() < 0.5 ? 0 : random() * 2000));
  const response = await post(b, 1, lastId);
  if (response.status !== 200) {
    await response.body?.cancel();
    return [404, 410, 503].includes(response.status) ? 'refused' : `resume answered ${response.status}`;
  }
  const resumed = await readFrames(response, Number.POSITIVE_INFINITY);
  if (resumed.timedOut) return `resume of ${lastId} hung for ${READ_DEADLINE_MS} ms`;
  const all = [...first.frames, ...resumed.frames];
  const events: StreamEvent[] = [];
  const decoder = new StreamDecoder(openAiChat, (event) => events.push(event));
  decoder.feed(new TextEncoder().encode(all.map((f) => `data: ${f.data}\n\n`).join('')));
  decoder.end();
  if (events.some((e) => e.type === 'error')) return 'errored';
  if (!resumed.ended || !decoder.state.complete) return `resume of ${lastId} was cut without an error`;
  const seqs = all.map((f) => Number(f.id!.split('.')[1]));
  for (let i = 0; i < seqs.length; i++)
    if (seqs[i] !== i + 1)
      return `resume of ${lastId} finished cleanly with event ${i + 1} missing (silently short)`;
  return 'complete';
}

export async function runRedisRestartSoak(options: RedisRestartSoakOptions): Promise<RedisRestartSoakReport> {
  const log = options.log ?? (() => {});
  const redis = await startPersistentRedis();
  const a = await replica(redis.url, options.tokensPerSecond);
  const b = await replica(redis.url, options.tokensPerSecond);
  const report: RedisRestartSoakReport = {
    ok: false,
    streams: 0,
    complete: 0,
    errored: 0,
    refused: 0,
    failures: [],
    restarts: [],
  };
  let seed = 12345;
  const random = () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const started = Date.now();
  const end = started + options.durationMs;
  const restarts = (async () => {
    const at = (fraction: number) => sleep(Math.max(0, started + options.durationMs * fraction - Date.now()));
    await at(0.2);
    await redis.save();
    await at(0.35);
    await redis.stop('SIGKILL');
    await redis.start();
    report.restarts.push(`kill -9 at ${Date.now() - started} ms, restarted from the SAVE at 20 %`);
    await at(0.6);
    await redis.stop('SIGTERM');
    await sleep(1000);
    await redis.start();
    report.restarts.push(`SIGTERM at ${Math.round(options.durationMs * 0.6)} ms, restarted after 1 s down`);
  })();
  try {
    const worker = async () => {
      while (Date.now() < end) {
        report.streams += 1;
        let verdict: Verdict;
        try {
          verdict = await oneStream(a.url, b.url, random);
        } catch (error) {
          // A request refused at the socket (the producer's store failing is not the question here).
          verdict = `request failed: ${(error as Error).message}`;
        }
        if (verdict === 'complete') report.complete += 1;
        else if (verdict === 'errored') report.errored += 1;
        else if (verdict === 'refused') report.refused += 1;
        else report.failures.push(verdict);
      }
    };
    await Promise.all([restarts, ...Array.from({ length: options.concurrency }, worker)]);
  } finally {
    await Promise.all([a.close(), b.close()]);
    await redis.close();
  }
  report.ok = report.failures.length === 0 && report.errored + report.refused > 0;
  if (report.errored + report.refused === 0)
    report.failures.push('no stream met the lost data: the restarts did not bite (the check proved nothing)');
  log(formatRedisRestartReport(report));
  return report;
}

export function formatRedisRestartReport(report: RedisRestartSoakReport): string {
  const lines = [
    `redis restarts: ${report.streams} resumed streams; ${report.complete} complete and contiguous, ${report.errored} ended with an error, ${report.refused} refused; ${report.failures.length} silently short, cut or hung`,
    ...report.restarts.map((r) => `  ${r}`),
    ...report.failures.slice(0, 10).map((f) => `  failure: ${f}`),
    report.ok ? 'redis restarts: OK' : 'redis restarts: FAILED',
  ];
  return lines.join('\n');
}
