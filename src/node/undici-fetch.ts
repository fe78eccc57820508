import type { Dispatcher } from 'undici';
import {
  FETCH_TAKES_INIT,
  PUSH_ONLY,
  PUSH_SOURCE,
  type PushSink,
  type PushSource,
  type PushSubscription,
} from '../client/push-source.ts';
import { LightHeaders, lightResponse } from '../server/http/light-headers.ts';
import { importOptional } from './optional-package.ts';

/** undici's `Agent` class: all the upstream fetch needs of undici. */
type AgentClass = typeof import('undici').Agent;

let Agent: AgentClass | undefined;
let loadingAgent: Promise<AgentClass> | undefined;

/**
 * undici's `Agent` alone (its pools, clients and HTTP/1.1 parser: 23 of undici's 110 modules), not the
 * whole package: `import('undici')` also loads its fetch, WebSocket, EventSource, cache, mock and proxy
 * code, which the gateway never calls (memory: bench/README.md "Why the code is shaped as it is").
 * undici 7 has no `exports` map, so the deep path resolves; if a later undici moves it, the whole
 * package is loaded instead.
 */
const AGENT_MODULE = 'undici/lib/dispatcher/agent.js';

async function importAgent(): Promise<AgentClass> {
  try {
    // A variable specifier: the deep path has no type declarations (the type is undici's own Agent).
    return ((await import(AGENT_MODULE)) as { default: AgentClass }).default;
  } catch {
    // A missing package is said by the import of the package below, with its own error.
    return (await import('undici')).Agent;
  }
}

/**
 * Loads undici's Agent (undici is an optional peer dependency: only the upstream fetch needs it).
 * Rejects with a `MissingPackageError` naming `npm install undici` when it is not installed.
 * `serve --upstream` and `bench` await it at start-up; `createUndiciFetch` loads it at the first
 * request otherwise.
 */
export async function loadUndici(): Promise<void> {
  await loadAgent();
}

/** undici's Agent, loaded once (`loadUndici`); its type stays out of the public declarations. */
function loadAgent(): Promise<AgentClass> {
  loadingAgent ??= importOptional('undici', "tokenwire's upstream fetch", importAgent).then((loaded) => {
    Agent = loaded;
    return loaded;
  });
  return loadingAgent;
}

export interface UndiciFetchOptions {
  /** Connections per upstream origin at most. Default: no limit (a gateway relays many streams at once). */
  connections?: number | undefined;
  /**
   * After a stream's terminal event, how long the rest of its body (the chunked trailer) is drained so
   * the connection can serve the next request; a server that never ends the body is then cut. Default 2000.
   */
  finishDrainMs?: number | undefined;
  /** The undici dispatcher to send through. Default: an `Agent` of its own, keep-alive, no undici timeouts. */
  dispatcher?: UndiciDispatcher | undefined;
}

/**
 * An undici `Dispatcher` (an `Agent`, `Pool`, `ProxyAgent`…), declared by its shape: undici is an
 * optional peer dependency, and importing its types here would make these declarations need it.
 */
export interface UndiciDispatcher {
  dispatch(options: object, handler: object): boolean;
  close(): Promise<void>;
}

/**
 * A fetch for the gateway's upstreams built on undici's `dispatch`, the callback API under its fetch:
 * keep-alive connections (`http:` and `https:`), and the response read by callbacks — no Request,
 * Response or Web Streams machinery and no promise per chunk. The body is a standard
 * ReadableStream and also a push source (client/push-source.ts) that tokenwire's client reads by events;
 * a PUSH_ONLY caller gets a stand-in Response with no stream at all. undici's own headers and body
 * timeouts are off: the client's timeouts (client/timeouts.ts) decide when an upstream is too slow.
 */
export function createUndiciFetch(options: UndiciFetchOptions = {}): (request: Request) => Promise<Response> {
  const finishDrainMs = options.finishDrainMs ?? 2000;
  const agentOf = (AgentOf: AgentClass): Dispatcher =>
    new AgentOf({
      connections: options.connections ?? null,
      headersTimeout: 0,
      bodyTimeout: 0,
    });
  // undici is loaded lazily (an optional peer): the Agent is made now if it is, else at the first request.
  // A dispatcher handed over is undici's own (UndiciDispatcher is its shape).
  let dispatcher: Dispatcher | undefined =
    (options.dispatcher as Dispatcher | undefined) ?? (Agent === undefined ? undefined : agentOf(Agent));
  const undiciFetch = async (input: Request | string | URL, init?: RequestInit): Promise<Response> => {
    const request = typeof input === 'string' || input instanceof URL ? undefined : input;
    const href = request?.url ?? String(input);
    const url = parsedUrl(href);
    if (url === undefined) return request !== undefined ? fetch(request) : fetch(href, init);
    let body: string | Uint8Array | undefined;
    const headers: Record<string, string> = {};
    let method: string;
    let signal: AbortSignal | undefined;
    let pushOnly = false;
    if (request !== undefined) {
      body = request.body === null ? undefined : new Uint8Array(await request.arrayBuffer());
      request.headers.forEach((value, key) => {
        if (key !== 'content-length') headers[key] = value;
      });
      method = request.method;
      signal = request.signal;
    } else {
      body = bodyOf(init?.body);
      const given = init?.headers;
      if (given !== undefined && given !== null && !Array.isArray(given) && !(given instanceof Headers)) {
        // The client passes a plain object: no Headers round trip.
        for (const key in given) {
          const name = key.toLowerCase();
          if (name !== 'content-length') headers[name] = String((given as Record<string, string>)[key]);
        }
      } else {
        new Headers(given).forEach((value, key) => {
          if (key !== 'content-length') headers[key] = value;
        });
      }
      method = init?.method ?? 'GET';
      signal = init?.signal ?? undefined;
      pushOnly = (init as Record<symbol, unknown> | undefined)?.[PUSH_ONLY] === true;
    }
    // (No content-length is copied: undici sets the length of the body it is given.)
    if (signal?.aborted === true) throw abortError(signal);
    if (dispatcher === undefined) dispatcher = agentOf(await loadAgent());
    const through = dispatcher;
    return new Promise<Response>((resolve, reject) => {
      const call = new UpstreamCall(href, method, pushOnly, finishDrainMs, signal, resolve, reject);
      through.dispatch(
        {
          origin: url.origin,
          path: url.path,
          method: method as Dispatcher.HttpMethod,
          headers,
          body: body ?? null,
        },
        call,
      );
    });
  };
  (undiciFetch as unknown as Record<symbol, unknown>)[FETCH_TAKES_INIT] = true;
  return undiciFetch as (request: Request) => Promise<Response>;
}

interface Target {
  origin: string;
  path: string;
}

/**
 * The origin and path of an `http:` or `https:` URL (undefined for any other scheme), parsed once per
 * URL: a gateway calls the same few upstream URLs all day, and `new URL` is on the path to its first token.
 */
const parsedUrls = new Map<string, Target | undefined>();
const PARSED_URLS_MAX = 256;

function parsedUrl(href: string): Target | undefined {
  if (parsedUrls.has(href)) return parsedUrls.get(href);
  const url = new URL(href);
  const target =
    url.protocol === 'http:' || url.protocol === 'https:'
      ? { origin: url.origin, path: `${url.pathname}${url.search}` }
      : undefined;
  if (parsedUrls.size >= PARSED_URLS_MAX) parsedUrls.clear();
  parsedUrls.set(href, target);
  return target;
}

function bodyOf(body: RequestInit['body']): string | Uint8Array | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string' || body instanceof Uint8Array) return body;
  throw new TypeError('createUndiciFetch: only string and Uint8Array request bodies are supported');
}

const CUT_MID_BODY = 'the upstream connection closed mid-body';

/** Body bytes held for a reader that has not come yet before the upstream is held back. */
const EARLY_BYTES_MAX = 256 * 1024;

/**
 * One upstream request, as undici's dispatch handler (its callback interface), and the body's reader
 * once the answer came: the response's body goes to whichever reader comes first (the push source or
 * the ReadableStream). One object per request instead of a closure per callback.
 */
class UpstreamCall implements Dispatcher.DispatchHandler, PushSource, PushSubscription {
  readonly #href: string;
  readonly #method: string;
  readonly #pushOnly: boolean;
  readonly #finishDrainMs: number;
  #signal: AbortSignal | undefined;
  #resolve: ((response: Response) => void) | undefined;
  #reject: ((error: unknown) => void) | undefined;
  /** undici's abort for this request (from onConnect). */
  #abort: ((reason: Error) => void) | undefined;
  /** undici's resume after a pause (from onHeaders). */
  #resumeReading: (() => void) | undefined;
  /** The caller's abort, if it came before undici's `onConnect`. */
  #aborted: Error | undefined;
  #paused = false;
  /** Who reads the body: decided by the first to ask. */
  #owner: 'push' | 'stream' | undefined;
  #sink: PushSink | undefined;
  #stream: ReadableStreamDefaultController<Uint8Array> | undefined;
  /** Chunks that came before the reader did (delivered on the reader's first turn). */
  #early: Uint8Array[] | undefined;
  #earlyBytes = 0;
  /** The body's end as undici reported it: 'end', or the error. */
  #ended: { error?: unknown } | undefined;
  /** The reader has what it needs (push `finish` or `cancel`): the rest is drained or dropped. */
  #done = false;
  #drainTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    href: string,
    method: string,
    pushOnly: boolean,
    finishDrainMs: number,
    signal: AbortSignal | undefined,
    resolve: (response: Response) => void,
    reject: (error: unknown) => void,
  ) {
    this.#href = href;
    this.#method = method;
    this.#pushOnly = pushOnly;
    this.#finishDrainMs = finishDrainMs;
    this.#resolve = resolve;
    this.#reject = reject;
    if (signal !== undefined) {
      this.#signal = signal;
      signal.addEventListener('abort', this, { once: true });
    }
  }

  /** The caller's signal aborted: the request is cut (undici closes its connection: the server sees it). */
  handleEvent(): void {
    const error = abortError(this.#signal!);
    this.#detachSignal();
    this.#aborted = error;
    this.#abort?.(error);
    this.#settleError(error);
  }

  #detachSignal(): void {
    this.#signal?.removeEventListener('abort', this);
    this.#signal = undefined;
  }

  // undici's handler callbacks.

  onConnect(abort: (reason?: Error) => void): void {
    this.#abort = abort;
    // Aborted while undici was still connecting or queueing: cut it before it is written.
    if (this.#aborted !== undefined) abort(this.#aborted);
  }

  onHeaders(status: number, rawHeaders: Buffer[], resume: () => void, statusText: string): boolean {
    this.#resumeReading = resume;
    const nullBody = status === 204 || status === 304 || this.#method === 'HEAD';
    const raw: string[] = new Array(rawHeaders.length);
    for (let i = 0; i < rawHeaders.length; i++) raw[i] = rawHeaders[i]!.toString('latin1');
    const resolve = this.#resolve;
    this.#resolve = undefined;
    this.#reject = undefined;
    if (resolve === undefined) return true;
    if (nullBody) {
      this.#owner = 'stream';
      resolve(new Response(null, { status, statusText, headers: pairs(raw) }));
    } else if (this.#pushOnly && status >= 200 && status < 300) {
      // A caller that reads by events only (PUSH_ONLY: tokenwire's client) gets a stand-in for a good
      // answer: no ReadableStream, no undici Response or Headers (see push-source.ts).
      const headers = LightHeaders.fromRaw(raw);
      resolve(lightResponse({ status, statusText, headers, url: this.#href }, PUSH_SOURCE, this));
    } else {
      const stream = new ReadableStream<Uint8Array>(
        {
          pull: (controller) => this.#pull(controller),
          cancel: () => this.cancel(),
        },
        { highWaterMark: 0 },
      );
      (stream as unknown as Record<symbol, unknown>)[PUSH_SOURCE] = this;
      resolve(new Response(stream, { status, statusText, headers: pairs(raw) }));
    }
    return true;
  }

  onData(chunk: Buffer): boolean {
    // (undici may report an empty piece of body: nothing to hand on.)
    if (this.#done || chunk.length === 0) return !this.#paused;
    const bytes = new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.length);
    if (this.#sink !== undefined) this.#sink.chunk(bytes);
    else if (this.#stream !== undefined) {
      this.#stream.enqueue(bytes);
      if ((this.#stream.desiredSize ?? 1) <= 0) this.#paused = true;
    } else {
      if (this.#early === undefined) this.#early = [bytes];
      else this.#early.push(bytes);
      // Nobody reads yet: hold the upstream back past a bound rather than buffer a body without limit.
      this.#earlyBytes += bytes.length;
      if (this.#earlyBytes >= EARLY_BYTES_MAX) this.#paused = true;
    }
    return !this.#paused;
  }

  onComplete(): void {
    this.#detachSignal();
    if (this.#drainTimer !== undefined) clearTimeout(this.#drainTimer);
    this.#finishBody({});
  }

  onError(error: Error): void {
    this.#detachSignal();
    if (this.#drainTimer !== undefined) clearTimeout(this.#drainTimer);
    if (this.#settleError(error)) return;
    this.#finishBody({ error: new Error(CUT_MID_BODY, { cause: error }) });
  }

  /** Rejects the fetch if it has not answered yet; false once it has. */
  #settleError(error: unknown): boolean {
    const reject = this.#reject;
    this.#resolve = undefined;
    this.#reject = undefined;
    reject?.(error);
    return reject !== undefined;
  }

  /** undici reported the body's end: kept for a reader still to come, handed to the one there is. */
  #finishBody(end: { error?: unknown }): void {
    if (this.#ended !== undefined) return;
    this.#ended = end;
    this.#deliverEnd(end);
  }

  /** The body's end to whichever reader has it (none yet: nothing). */
  #deliverEnd(end: { error?: unknown }): void {
    if (this.#done) return;
    if (this.#sink !== undefined) {
      this.#done = true;
      if (end.error !== undefined) this.#sink.error(end.error);
      else this.#sink.end();
    } else if (this.#stream !== undefined) {
      if (end.error !== undefined) this.#stream.error(end.error);
      else this.#stream.close();
    }
  }

  // The ReadableStream's reader.

  #pull(controller: ReadableStreamDefaultController<Uint8Array>): void {
    if (this.#owner === 'push') return;
    if (this.#owner === undefined) {
      this.#owner = 'stream';
      this.#stream = controller;
      const early = this.#early;
      this.#early = undefined;
      if (early !== undefined) for (const bytes of early) controller.enqueue(bytes);
      if (this.#ended !== undefined) {
        this.#deliverEnd(this.#ended);
        return;
      }
    }
    this.resume();
  }

  // The push source and its subscription.

  subscribe(sink: PushSink): PushSubscription {
    if (this.#owner !== undefined) throw new TypeError('this body is already being read');
    this.#owner = 'push';
    const early = this.#early;
    const ended = this.#ended;
    if (early === undefined && ended === undefined) {
      this.#sink = sink;
      return this;
    }
    // What came before the reader is handed over on its next turn, as a stream reader would get it (never
    // inside `subscribe`), then the reader takes chunks as they come.
    this.#early = undefined;
    queueMicrotask(() => {
      // Reading was held back for want of a reader (EARLY_BYTES_MAX): the reader's own pace decides now.
      const held = this.#paused;
      this.#paused = false;
      if (early !== undefined) for (const bytes of early) if (!this.#done) sink.chunk(bytes);
      if (this.#done) return;
      this.#sink = sink;
      if (ended !== undefined) this.#deliverEnd(ended);
      else if (held && !this.#paused) this.#resumeReading?.();
    });
    return this;
  }

  pause(): void {
    this.#paused = true;
  }

  resume(): void {
    if (!this.#paused) return;
    this.#paused = false;
    this.#resumeReading?.();
  }

  cancel(): void {
    this.#done = true;
    this.#detachSignal();
    if (this.#ended === undefined) this.#abort?.(new Error('the reader cancelled the upstream body'));
  }

  finish(): void {
    this.#done = true;
    if (this.#ended !== undefined) return;
    // The terminal event came; the body's own end (the chunked trailer) is usually in the same read,
    // which undici parses right after this callback: look once it has, so the usual request sets no
    // timer. Until the end comes the rest is read and dropped, so the connection is kept for the next
    // request (a new one costs the upstream a TCP handshake); a server that never ends the body is cut.
    this.resume();
    queueMicrotask(() => {
      if (this.#ended !== undefined) return;
      const timer = setTimeout(
        () => this.#abort?.(new Error('the upstream did not end the body')),
        this.#finishDrainMs,
      );
      timer.unref();
      this.#drainTimer = timer;
    });
  }
}

/** Raw header strings (name, value, name, value…) as pairs for a standard Response. */
function pairs(raw: readonly string[]): [string, string][] {
  const out: [string, string][] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) out.push([raw[i]!, raw[i + 1]!]);
  return out;
}

function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new DOMException('The operation was aborted.', 'AbortError');
}
