import type { Dialect } from '../../src/dialects/dialect.ts';
import { DIALECTS } from '../../src/dialects/registry.ts';
import { StreamDecoder } from '../../src/dialects/stream-decoder.ts';
import type { ChatRequest } from '../../src/events/chat-request.ts';
import type { StreamEvent } from '../../src/events/stream-event.ts';
import type { Sim } from '../../src/sim/index.ts';

/** Every registered dialect (the sim tests run over whatever has landed). */
export const dialects = (): Dialect[] => Object.values(DIALECTS);

export interface PostOptions {
  headers?: Record<string, string>;
  signal?: AbortSignal;
  path?: string;
}

/** POSTs a normalized request to the sim in `dialect`'s own body shape. */
export function post(
  sim: Sim,
  dialect: Dialect,
  request: ChatRequest,
  options: PostOptions = {},
): Promise<Response> {
  const body = dialect.toRequestBody({ model: 'sim', includeUsage: true, ...request });
  return postRaw(sim, options.path ?? (dialect.paths[0] as string), body, options);
}

export function postRaw(sim: Sim, path: string, body: unknown, options: PostOptions = {}): Promise<Response> {
  const init: RequestInit = {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...options.headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  };
  if (options.signal !== undefined) init.signal = options.signal;
  return sim.fetch(new Request(`http://sim.test${path}`, init));
}

export interface Read {
  chunks: Uint8Array[];
  /** What `read()` rejected with, when the body errored. */
  error?: unknown;
}

/** Every read of a body, as it came, and how it ended. */
export async function readChunks(response: Response): Promise<Read> {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const chunks: Uint8Array[] = [];
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { chunks };
      chunks.push(value);
    }
  } catch (error) {
    return { chunks, error };
  }
}

export interface Decoded {
  events: StreamEvent[];
  comments: number;
  complete: boolean;
  sawTerminator: boolean;
  text: string;
  raw: string;
}

/** Reads -> events through the same StreamDecoder the client uses (not the client itself). */
export function decode(dialect: Dialect, chunks: readonly Uint8Array[]): Decoded {
  const events: StreamEvent[] = [];
  let comments = 0;
  const decoder = new StreamDecoder(dialect, (event) => events.push(event), {
    onComment: () => (comments += 1),
  });
  for (const chunk of chunks) decoder.feed(chunk);
  decoder.end();
  return {
    events,
    comments,
    complete: decoder.state.complete,
    sawTerminator: decoder.state.sawTerminator,
    text: textOf(events),
    raw: new TextDecoder().decode(concat(chunks)),
  };
}

/** POST, read everything, decode. */
export async function run(
  sim: Sim,
  dialect: Dialect,
  request: ChatRequest,
  options: PostOptions = {},
): Promise<Decoded & Read & { response: Response }> {
  const response = await post(sim, dialect, request, options);
  const read = await readChunks(response);
  return { response, ...read, ...decode(dialect, read.chunks) };
}

export function textOf(events: readonly StreamEvent[]): string {
  return events.map((event) => (event.type === 'text' ? event.text : '')).join('');
}

export function ofType<T extends StreamEvent['type']>(
  events: readonly StreamEvent[],
  type: T,
): Extract<StreamEvent, { type: T }>[] {
  return events.filter((event): event is Extract<StreamEvent, { type: T }> => event.type === type);
}

export function concat(chunks: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((sum, chunk) => sum + chunk.length, 0));
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.length;
  }
  return out;
}

export const ask = (content: string, extra: ChatRequest = {}): ChatRequest => ({
  messages: [{ role: 'user', content }],
  ...extra,
});

/** A virtual clock: `sleep` moves time forward by exactly what was asked (plus `overshoot`). */
export class FakeClock {
  time: number;
  readonly sleeps: number[] = [];
  readonly overshoot: number;

  constructor(start = 1_767_225_600_000, overshoot = 0) {
    this.time = start;
    this.overshoot = overshoot;
  }

  readonly now = (): number => this.time;

  readonly sleep = async (ms: number): Promise<void> => {
    this.sleeps.push(ms);
    this.time += ms + this.overshoot;
    await Promise.resolve();
  };
}

/**
 * A clock that stands still and lets the first `free` sleeps pass at once; later sleeps hang until
 * their signal aborts, so a test can stop a stream at an exact token.
 */
export class GatedClock {
  readonly sleeps: number[] = [];
  free: number;

  constructor(free: number) {
    this.free = free;
  }

  readonly now = (): number => 1_767_225_600_000;

  readonly sleep = (ms: number, signal: AbortSignal): Promise<void> => {
    this.sleeps.push(ms);
    if (this.sleeps.length <= this.free) return Promise.resolve();
    return new Promise((resolve) => {
      if (signal.aborted) resolve();
      else signal.addEventListener('abort', () => resolve(), { once: true });
    });
  };
}

/** Waits (on real macrotasks) until `check` holds; fails after `ms`. */
export async function until(check: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}
