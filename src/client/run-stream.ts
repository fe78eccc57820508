import { TokenwireError } from '../errors.ts';
import type { Result } from '../events/result.ts';
import { type PreparedRequest, prepareRequest, type StreamRequest } from './build-request.ts';
import { HttpError, MAX_ERROR_BODY_BYTES, RequestFailedError } from './client-errors.ts';
import { errorText } from './error-text.ts';
import { MetricsRecorder } from './metrics-recorder.ts';
import { FETCH_TAKES_INIT, PUSH_ONLY } from './push-source.ts';
import { readBounded } from './read-bounded.ts';
import type { RunHooks, StreamOptions } from './stream-options.ts';
import { NEVER_ABORTED, StreamReader } from './stream-reader.ts';
import { Deadlines, type TimeoutKind } from './timeouts.ts';

export type { RunHooks, StreamOptions } from './stream-options.ts';

/** The default clock: one function for every run, not a closure per request. */
const monotonicNow = (): number => performance.now();

/**
 * Sends one streaming request and reads it to the end: the core of `stream()` and `complete()`.
 *
 * Failures before a response arrives (bad arguments, refused connection, connect timeout, abort, an
 * HTTP error status) reject with a typed error. Once a 2xx response has begun, nothing throws: a cut,
 * a timeout, an abort, a server error event, bad framing or a malformed payload all resolve to a
 * Result with `complete: false`, the reason, and the partial text — never presented as finished.
 */
export function runStream(
  input: StreamRequest,
  options: StreamOptions = {},
  hooks: RunHooks = {},
): Promise<Result> {
  let prepared: PreparedRequest;
  try {
    prepared = prepareRequest(input, options.lastEventId);
  } catch (error) {
    return Promise.reject(error);
  }
  // Two steps, so the request is not held for the whole stream: a suspended async function keeps its
  // parameters, and `open`, which takes the prepared request (its body: the whole prompt), ends when the
  // response is in; `readToEnd`, suspended for the rest of the stream, gets only what reading needs.
  return open(prepared, options, hooks).then(readToEnd);
}

/** A stream whose response has begun: what reading it to the end needs. */
interface OpenedStream {
  reader: StreamReader;
  signal: AbortSignal;
  options: StreamOptions;
  hooks: RunHooks;
  metrics: MetricsRecorder;
  /** The Request to keep alive while reading (see `open`), if one was built. */
  outgoing: Request | undefined;
  /** Stops the timer. */
  stop(): void;
  /** The timeout that expired, if one did. */
  expired(): TimeoutKind | undefined;
}

async function open(
  prepared: PreparedRequest,
  options: StreamOptions,
  hooks: RunHooks,
): Promise<OpenedStream> {
  const now = options.now ?? monotonicNow;
  const metrics = new MetricsRecorder(now);
  // AbortControllers and Requests are costly in Node 20 (each signal is made transferable): only the
  // ones this request needs are created.
  const timeouts = options.timeouts;
  const timed =
    timeouts !== undefined &&
    (timeouts.connectMs !== undefined ||
      timeouts.firstByteMs !== undefined ||
      timeouts.idleMs !== undefined ||
      timeouts.totalMs !== undefined);
  // The consumer's controller belongs to this request alone (the async iterable's, the gateway's): a
  // timed run's timeouts abort it too. The caller's signal may be shared by many concurrent requests (a
  // page, a CLI run, a bench level; Node warns past 10 listeners on one), so it joins through
  // AbortSignal.any (which holds its dependants weakly: no listener on the shared signal).
  const internal = timed ? (hooks.consumer ?? new AbortController()) : undefined;
  const own = internal !== undefined ? internal.signal : hooks.consumer?.signal;
  const signal =
    own === undefined
      ? options.signal === undefined
        ? NEVER_ABORTED
        : AbortSignal.any([options.signal])
      : options.signal === undefined
        ? own
        : AbortSignal.any([own, options.signal]);
  if (signal.aborted) {
    throw new RequestFailedError(
      'aborted',
      `${prepared.method} ${prepared.url} was aborted before it was sent`,
      { url: prepared.url },
    );
  }

  let expired: TimeoutKind | undefined;
  // Every way out of this run stops the timer.
  const stop = () => deadlines.stop();
  const deadlines = new Deadlines(
    timeouts ?? {},
    (kind) => {
      expired = kind;
      internal?.abort(new TokenwireError(`${kind}-timeout`, `${kind} timeout`));
    },
    now,
  );

  const fetchFn = options.fetch ?? globalThis.fetch;
  let response: Response | undefined;
  const init: RequestInit = { method: prepared.method, headers: prepared.headers };
  // Not the shared never-aborted signal: every Request would add a listener to it (1000 streams in
  // flight, 1000 listeners and Node's MaxListenersExceededWarning).
  if (signal !== NEVER_ABORTED) init.signal = signal;
  if (prepared.body !== undefined) init.body = prepared.body;
  // A fetch that takes (url, init) itself (node/undici-fetch.ts) gets them as they are; any other gets
  // one Request, held until the stream ends: undici follows an abort from the Request we pass to the one
  // it sends only while ours is alive, so a collected Request would silently lose the cancel.
  const takesInit = (fetchFn as unknown as Record<symbol, unknown>)[FETCH_TAKES_INIT] === true;
  // This reader takes a push source wherever there is one: no ReadableStream is needed for the body.
  if (takesInit) (init as Record<symbol, unknown>)[PUSH_ONLY] = true;
  const outgoing = takesInit ? undefined : new Request(prepared.url, init);
  try {
    response = await (outgoing === undefined
      ? (fetchFn as unknown as (url: string, init: RequestInit) => Promise<Response>)(prepared.url, init)
      : fetchFn(outgoing));
  } catch (cause) {
    stop();
    throw requestFailure(prepared, expired, options.signal, hooks.consumer?.signal, cause);
  }
  deadlines.headers();
  metrics.headers();
  options.onResponse?.(response);

  if (!response.ok) {
    let body: string;
    try {
      body = await readBounded(response, MAX_ERROR_BODY_BYTES);
    } finally {
      stop();
    }
    throw new HttpError({
      method: prepared.method,
      url: prepared.url,
      status: response.status,
      statusText: response.statusText,
      body,
      headers: Object.fromEntries(response.headers),
    });
  }

  // The reader lets the Response go once it has its body: an open stream holds no Response.
  const reader = new StreamReader(prepared, response, options, hooks, metrics, deadlines, now);
  return { reader, signal, options, hooks, metrics, outgoing, stop, expired: () => expired };
}

async function readToEnd(stream: OpenedStream): Promise<Result> {
  const { reader, options, hooks, metrics } = stream;
  try {
    await reader.read(stream.signal);
  } finally {
    stream.stop();
    keepAlive(stream.outgoing);
  }
  const outcome = reader.outcome(stream.expired(), options.signal, hooks.consumer?.signal);
  return reader.builder.build({
    complete: outcome.incomplete === undefined,
    incomplete: outcome.incomplete,
    error: outcome.error,
    dialect: reader.dialect?.id,
    metrics: metrics.finish(reader.builder.usage, reader.builder.timings),
  });
}

function requestFailure(
  prepared: PreparedRequest,
  expired: TimeoutKind | undefined,
  userSignal: AbortSignal | undefined,
  consumerSignal: AbortSignal | undefined,
  cause: unknown,
): RequestFailedError {
  const target = `${prepared.method} ${prepared.url}`;
  const url = prepared.url;
  if (expired === 'connect' || expired === 'total') {
    return new RequestFailedError(
      expired === 'connect' ? 'connect-timeout' : 'total-timeout',
      `${target}: no response headers in time (${expired} timeout)`,
      { url, cause },
    );
  }
  if (userSignal?.aborted === true || consumerSignal?.aborted === true) {
    return new RequestFailedError('aborted', `${target} was aborted before the response arrived`, {
      url,
      cause,
    });
  }
  return new RequestFailedError('network', `${target} failed: ${errorText(cause)}`, { url, cause });
}

/** Keeps a value reachable up to this call (see the comment on `outgoing`). */
function keepAlive(value: unknown): void {
  if (value === null) throw new Error('unreachable');
}
