import { type Dialect, type DialectDecoder, DialectError, type Framing } from '../dialects/dialect.ts';
import { detectDialect } from '../dialects/registry.ts';
import { snippet, TokenwireError } from '../errors.ts';
import type { IncompleteReason, Result, ResultError } from '../events/result.ts';
import { ResultBuilder } from '../events/result.ts';
import type { StreamEvent } from '../events/stream-event.ts';
import { concatBytes } from '../wire/concat-bytes.ts';
import type { Frame } from '../wire/frame.ts';
import { NdjsonDecoder } from '../wire/ndjson-decoder.ts';
import { SseDecoder } from '../wire/sse-decoder.ts';
import type { InvalidUtf8Policy } from '../wire/utf8.ts';
import { type PreparedRequest, prepareRequest, type StreamRequest } from './build-request.ts';
import { HttpError, MAX_ERROR_BODY_BYTES, RequestFailedError } from './client-errors.ts';
import { CumulativeTextFilter } from './cumulative-text.ts';
import { describeFraming, framingOfContentType, sniffFraming } from './framing.ts';
import { MetricsRecorder } from './metrics-recorder.ts';
import { FETCH_TAKES_INIT, PUSH_ONLY, type PushSource, pushSourceOf } from './push-source.ts';
import { Deadlines, type TimeoutKind, type TimeoutOptions } from './timeouts.ts';

export interface StreamOptions {
  /**
   * The fetch to use: a proxy-aware fetch, or any `(Request) => Response` handler (the simulator or the
   * gateway in-process). It is called with one Request. Default: global fetch.
   */
  fetch?: ((request: Request) => Promise<Response> | Response) | undefined;
  /** Abort the request; the server sees its connection close. */
  signal?: AbortSignal | undefined;
  timeouts?: TimeoutOptions | undefined;
  /** Clock for metrics, in ms. Default `performance.now`. */
  now?: (() => number) | undefined;
  /** Bound on one line / one event. Default 1 MiB. */
  maxLineBytes?: number | undefined;
  /** Bytes that are not UTF-8: fail the stream (`error`, default) or decode them as U+FFFD (`replace`). */
  invalidUtf8?: InvalidUtf8Policy | undefined;
  /** Detect servers that repeat the whole text in every event and pass on only the new part. Default on. */
  detectCumulativeText?: boolean | undefined;
  /** Drop reasoning events. */
  dropReasoning?: boolean | undefined;
  /**
   * Read text frames shaped like an earlier one without `JSON.parse` (same events; see
   * `TextFrameTemplate`). Default on; false parses every frame.
   */
  frameTemplates?: boolean | undefined;
  /** Resume a gateway stream after this SSE event id (sent as `Last-Event-ID`). */
  lastEventId?: string | undefined;
  /** Every frame as it arrived (raw view), with its arrival time in ms since the request began. */
  onFrame?: ((frame: Frame, atMs: number) => void) | undefined;
  /** Every SSE comment line (keepalives), with its arrival time. */
  onComment?: ((text: string, atMs: number) => void) | undefined;
  /** Every read from the network, with its arrival time (before decoding). */
  onChunk?: ((chunk: Uint8Array, atMs: number) => void) | undefined;
  /**
   * The response, once its headers are in. Its body is the client's to read: with a fetch that pushes
   * (createUndiciFetch of `tokenwire/node`), a successful response is a stand-in with `status`,
   * `statusText`, `ok`, `url`, `headers` (get, has, forEach, iteration) and a null `body` (push-source.ts).
   */
  onResponse?: ((response: Response) => void) | undefined;
}

/** Internal hooks used by the async-iterable wrapper and the gateway. */
export interface RunHooks {
  onEvent?: ((event: StreamEvent) => void) | undefined;
  /** Called after each read's events were delivered (a relay flushes its encoder here). */
  afterChunk?: (() => void) | undefined;
  /** Called after each read; a returned promise pauses reading until it settles (backpressure). */
  backpressure?: (() => Promise<void> | undefined) | undefined;
  /**
   * A controller of this request alone that its owner aborts to stop it (the wrapper when its consumer
   * stops early, the gateway when its client leaves). Unlike `StreamOptions.signal`, never shared, so a
   * timed run aborts this same controller when a timeout expires rather than building its own and
   * linking the two (an AbortSignal is about 1 KiB and 3 µs in Node 20; the link, a listener more).
   */
  consumer?: AbortController | undefined;
}

const SNIFF_BYTES = 16;

/** The default clock: one function for every run, not a closure per request. */
const monotonicNow = (): number => performance.now();

/** The signal of a request nobody can abort. */
const NEVER_ABORTED = new AbortController().signal;

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

class StreamReader {
  readonly builder = new ResultBuilder();
  dialect: Dialect | undefined;
  #decoder: DialectDecoder | undefined;
  #wire: SseDecoder | NdjsonDecoder | undefined;
  #framing: Framing | undefined;
  #failure: ResultError | undefined;
  #failureReason: IncompleteReason | undefined;
  #readError: unknown;
  #eof = false;
  #cutInFrame = false;
  /** First bytes held until they show the framing. */
  #head: Uint8Array | undefined;
  #announced: Framing | undefined;
  #contentType: string | null = null;
  readonly #cumulative: CumulativeTextFilter | undefined;
  /** The request's URL (dialect detection reads its path); the rest of the request is not kept. */
  readonly #url: string;
  /** The request's output cap: the Responses decoder reads llama-server's `completed` at it as cut. */
  readonly #maxOutputTokens: number | undefined;
  /** Until reading starts: then only the body is kept. */
  #response: Response | undefined;
  readonly #options: StreamOptions;
  readonly #hooks: RunHooks;
  readonly #metrics: MetricsRecorder;
  readonly #deadlines: Deadlines;
  readonly #now: () => number;
  #emit: (event: StreamEvent) => void;

  constructor(
    prepared: PreparedRequest,
    response: Response,
    options: StreamOptions,
    hooks: RunHooks,
    metrics: MetricsRecorder,
    deadlines: Deadlines,
    now: () => number,
  ) {
    this.#url = prepared.url;
    this.#maxOutputTokens = prepared.maxOutputTokens;
    this.#response = response;
    this.#options = options;
    this.#hooks = hooks;
    this.#metrics = metrics;
    this.#deadlines = deadlines;
    this.#now = now;
    this.dialect = prepared.dialect;
    this.#cumulative = options.detectCumulativeText === false ? undefined : new CumulativeTextFilter();
    const onEvent = hooks.onEvent;
    const deliver = (event: StreamEvent) => {
      this.#metrics.event(event);
      this.builder.add(event);
      if (onEvent !== undefined) onEvent(event);
    };
    const cumulative = this.#cumulative;
    this.#emit =
      cumulative === undefined
        ? deliver
        : (event) => {
            if (cumulative.settled) {
              // Plain deltas from here on: later frames go straight to `deliver`.
              this.#emit = deliver;
              deliver(event);
              return;
            }
            if (event.type === 'text') {
              const text = cumulative.next(event.text);
              if (text !== '') deliver(text === event.text ? event : { type: 'text', text });
              return;
            }
            const held = cumulative.flush();
            if (held !== '') deliver({ type: 'text', text: held });
            deliver(event);
          };
  }

  async read(signal: AbortSignal): Promise<void> {
    // Taken in a method of its own, so this frame (suspended for the whole stream) holds only the source.
    const source = this.#takeBody();
    if (source === undefined) return;
    if (source.kind === 'one-document') return this.#oneDocument(source.response, source.contentType);
    if (source.kind === 'push') await this.#readPushed(source.push, signal);
    else await this.#readPulled(source.body, signal);
    if (this.#head !== undefined && this.#eof && this.#wire === undefined) this.#start(this.#head);
    if (this.#wire !== undefined && this.#failure === undefined) {
      try {
        this.#cutInFrame = this.#wire.end();
        if (this.#decoder !== undefined) this.#decoder.end(this.#emit);
        const held = this.#cumulative?.flush();
        if (held !== undefined && held !== '') this.#emit({ type: 'text', text: held });
      } catch (error) {
        this.#decodeFailure(error);
      }
    }
  }

  /** The response's body as a push source or a stream; the Response itself is let go. */
  #takeBody():
    | { kind: 'push'; push: PushSource }
    | { kind: 'pulled'; body: ReadableStream<Uint8Array> }
    | { kind: 'one-document'; response: Response; contentType: string }
    | undefined {
    const response = this.#response!;
    this.#response = undefined;
    // A PUSH_ONLY response carries its source itself, with a null body.
    const pushOnly = pushSourceOf(response);
    const body = response.body;
    if (body === null && pushOnly === undefined) {
      this.#eof = true;
      return undefined;
    }
    const contentType = response.headers.get('content-type');
    const announced = framingOfContentType(contentType);
    if (
      announced === undefined &&
      contentType !== null &&
      /json/i.test(contentType) &&
      !/ndjson|jsonl/i.test(contentType)
    ) {
      return { kind: 'one-document', response, contentType };
    }
    this.#announced = announced;
    this.#contentType = contentType;
    const push = pushOnly ?? pushSourceOf(body);
    return push !== undefined ? { kind: 'push', push } : { kind: 'pulled', body: body! };
  }

  async #oneDocument(response: Response, contentType: string): Promise<void> {
    const text = await readBounded(response, this.#options.maxLineBytes ?? 1024 * 1024);
    this.#fail(
      'malformed',
      'not-streaming',
      `the server answered with one JSON document (Content-Type: ${contentType}) instead of a stream: ` +
        `streaming was not enabled or this endpoint does not stream. Body: ${snippet(text)}`,
    );
  }

  /** Reads a Web Streams body: one awaited read per chunk. */
  async #readPulled(body: ReadableStream<Uint8Array>, signal: AbortSignal): Promise<void> {
    const reader = body.getReader();
    // Set while reading waits for the consumer: an abort ends the wait (the consumer that stopped
    // taking events may be the one aborting).
    let resume: (() => void) | undefined;
    const onAbort = () => {
      reader.cancel(signal.reason).catch(() => {});
      resume?.();
    };
    if (signal !== NEVER_ABORTED) signal.addEventListener('abort', onAbort, { once: true });
    try {
      for (;;) {
        const next = await reader.read();
        if (next.done) {
          this.#eof = true;
          break;
        }
        if (!this.#chunk(next.value)) break;
        const pause = this.#hooks.backpressure?.();
        if (pause !== undefined) {
          // Waiting for the consumer is not the server being idle.
          this.#deadlines.hold();
          if (signal === NEVER_ABORTED) await pause;
          else if (!signal.aborted)
            await new Promise<void>((resolve) => {
              resume = resolve;
              pause.then(resolve, resolve);
            });
          resume = undefined;
          this.#deadlines.release();
          if (signal.aborted) break;
        }
      }
    } catch (error) {
      this.#readError = error;
    } finally {
      signal.removeEventListener('abort', onAbort);
      if (!this.#eof) reader.cancel().catch(() => {});
      else reader.releaseLock();
    }
  }

  /** Reads a pushed body (see push-source.ts): chunks handled as they come, no promise per chunk. */
  #readPushed(source: PushSource, signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      let settled = false;
      const finish = () => {
        if (settled) return;
        settled = true;
        signal.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        subscription.cancel(signal.reason);
        finish();
      };
      const subscription = source.subscribe({
        chunk: (bytes) => {
          if (settled) return;
          if (!this.#chunk(bytes)) {
            // After the terminal event the connection is still good: let the source keep it.
            if (this.#decoder?.terminated === true && subscription.finish !== undefined)
              subscription.finish();
            else subscription.cancel();
            finish();
            return;
          }
          const pause = this.#hooks.backpressure?.();
          if (pause !== undefined) {
            subscription.pause();
            this.#deadlines.hold();
            pause.then(() => {
              this.#deadlines.release();
              subscription.resume();
            });
          }
        },
        end: () => {
          this.#eof = true;
          finish();
        },
        error: (error) => {
          this.#readError = error;
          finish();
        },
      });
      if (signal.aborted) onAbort();
      else if (signal !== NEVER_ABORTED) signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** One read from the network: framing check on the first bytes, decode, hooks. False: stop reading. */
  #chunk(value: Uint8Array): boolean {
    if (value.length === 0) return true;
    this.#metrics.chunk(value.length);
    this.#deadlines.firstByte();
    this.#options.onChunk?.(value, this.#now() - this.#metrics.startedAt);
    let chunk: Uint8Array = value;
    if (this.#wire === undefined) {
      // Hold the first bytes until they show the framing (a 1-byte read cannot).
      const head = this.#head;
      const joined: Uint8Array = head === undefined ? value : concatBytes(head, value);
      if (sniffFraming(joined) === undefined && joined.length < SNIFF_BYTES) {
        this.#head = joined;
        return true;
      }
      this.#head = undefined;
      if (!this.#start(joined)) return false;
      chunk = joined;
    }
    if (!this.#feed(chunk)) return false;
    this.#hooks.afterChunk?.();
    return this.#decoder?.terminated !== true;
  }

  /** Picks the framing from the first bytes and checks it against what the dialect expects. */
  #start(head: Uint8Array): boolean {
    const announced = this.#announced;
    const contentType = this.#contentType;
    const sniffed = sniffFraming(head);
    const expected = this.dialect?.framing ?? announced;
    if (sniffed === 'unknown' || sniffed === undefined) {
      const preview = new TextDecoder().decode(head.subarray(0, 200));
      this.#fail(
        'malformed',
        'unknown-framing',
        `the body is neither SSE nor NDJSON (Content-Type: ${contentType ?? 'none'}); it starts with ${snippet(preview, 80)}`,
      );
      return false;
    }
    if (expected !== undefined && sniffed !== expected) {
      const where = this.dialect === undefined ? '' : ` for the ${this.dialect.id} dialect`;
      const hint =
        sniffed === 'ndjson'
          ? " NDJSON is what Ollama's native /api/chat and /api/generate send; for SSE use its /v1 endpoints, or read this endpoint with the ollama-chat / ollama-generate dialect."
          : ' SSE is what OpenAI-compatible routes, llama-server /completion and TGI /generate_stream send; pick that dialect, or the NDJSON endpoint.';
      this.#fail(
        'malformed',
        'wrong-framing',
        `expected ${describeFraming(expected)}${where} but the body is ${describeFraming(sniffed)} (Content-Type: ${contentType ?? 'none'}).${hint}`,
      );
      return false;
    }
    this.#framing = sniffed;
    const maxLineBytes = this.#options.maxLineBytes;
    const invalidUtf8 = this.#options.invalidUtf8;
    const onFrame = (frame: Frame) => this.#frame(frame);
    if (sniffed === 'sse') {
      const onComment = this.#options.onComment;
      this.#wire = new SseDecoder({
        onFrame,
        onComment: (text) => {
          this.#metrics.keepalives += 1;
          onComment?.(text, this.#now() - this.#metrics.startedAt);
        },
        maxLineBytes,
        invalidUtf8,
      });
    } else {
      this.#wire = new NdjsonDecoder({ onFrame, maxLineBytes, invalidUtf8 });
    }
    if (this.dialect !== undefined)
      this.#decoder = this.dialect.createDecoder({
        dropReasoning: this.#options.dropReasoning,
        frameTemplates: this.#options.frameTemplates,
        maxOutputTokens: this.#maxOutputTokens,
      });
    return true;
  }

  #feed(chunk: Uint8Array): boolean {
    try {
      this.#wire!.feed(chunk);
      return true;
    } catch (error) {
      this.#decodeFailure(error);
      return false;
    }
  }

  #frame(frame: Frame): void {
    this.#deadlines.activity();
    this.#metrics.beginFrame();
    this.#options.onFrame?.(frame, this.#now() - this.#metrics.startedAt);
    if (this.#decoder === undefined) {
      const dialect = this.#detect(frame);
      this.dialect = dialect;
      this.#decoder = dialect.createDecoder({
        dropReasoning: this.#options.dropReasoning,
        frameTemplates: this.#options.frameTemplates,
        maxOutputTokens: this.#maxOutputTokens,
      });
    }
    this.#decoder.frame(frame, this.#emit);
  }

  #detect(frame: Frame): Dialect {
    let payload: unknown;
    try {
      payload = JSON.parse(frame.data);
    } catch {
      payload = undefined;
    }
    const found = detectDialect({
      path: new URL(this.#url).pathname,
      contentType: this.#contentType ?? undefined,
      payload,
    });
    if (found === undefined || found.dialect.framing !== this.#framing) {
      throw new DialectError(
        'openai-chat',
        `cannot tell which dialect this ${this.#framing} stream is from its first payload ${snippet(frame.data, 120)}; pass \`dialect\``,
      );
    }
    return found.dialect;
  }

  #decodeFailure(error: unknown): void {
    if (TokenwireError.is(error)) this.#fail('malformed', error.code, error.message);
    else this.#fail('malformed', 'malformed-payload', String(error));
  }

  #fail(reason: IncompleteReason, code: string, message: string): void {
    if (this.#failure !== undefined) return;
    this.#failureReason = reason;
    this.#failure = { code, message };
  }

  outcome(
    expired: TimeoutKind | undefined,
    userSignal: AbortSignal | undefined,
    consumerSignal: AbortSignal | undefined,
  ): { incomplete?: IncompleteReason; error?: ResultError } {
    const serverError = this.builder.serverError;
    if (this.#failure !== undefined) return { incomplete: this.#failureReason!, error: this.#failure };
    if (serverError !== undefined) {
      const error: ResultError = { code: 'server-error', message: serverError.message };
      if (serverError.status !== undefined) error.status = serverError.status;
      if (serverError.errorType !== undefined) error.errorType = serverError.errorType;
      return { incomplete: 'server-error', error };
    }
    if (this.#decoder?.complete === true) return {};
    if (expired !== undefined) {
      const reason: IncompleteReason =
        expired === 'idle'
          ? 'idle-timeout'
          : expired === 'first-byte'
            ? 'first-byte-timeout'
            : 'total-timeout';
      return {
        incomplete: reason,
        error: { code: reason, message: timeoutMessage(expired, this.#options.timeouts) },
      };
    }
    if (userSignal?.aborted === true || consumerSignal?.aborted === true) {
      return {
        incomplete: 'aborted',
        error: { code: 'aborted', message: 'the request was aborted before the stream finished' },
      };
    }
    const name = this.dialect?.id ?? 'the';
    const cause =
      this.#readError !== undefined
        ? `the connection failed (${errorText(this.#readError)})`
        : this.#cutInFrame
          ? 'the connection closed in the middle of an event'
          : 'the connection closed';
    return {
      incomplete: 'connection-closed',
      error: {
        code: 'connection-closed',
        message: `${cause} before the ${name} stream's terminal event${this.dialect === undefined ? '' : ` (${this.dialect.terminalEvent})`}`,
      },
    };
  }
}

function timeoutMessage(kind: TimeoutKind, timeouts: TimeoutOptions | undefined): string {
  switch (kind) {
    case 'idle':
      return `no event for ${timeouts?.idleMs} ms (idle timeout; keepalive comments do not count)`;
    case 'first-byte':
      return `no body byte within ${timeouts?.firstByteMs} ms of the headers (first-byte timeout)`;
    case 'connect':
      return `no response headers within ${timeouts?.connectMs} ms (connect timeout)`;
    case 'total':
      return `the stream took longer than ${timeouts?.totalMs} ms (total timeout)`;
  }
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

function errorText(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
    return `${error.message}${cause}`;
  }
  return String(error);
}

/** Reads at most `limit` bytes of a body as text, then lets the rest go. */
/** Up to `limit` bytes of a pushed body, as text; the rest is cancelled. */
function readPushedBounded(source: PushSource, limit: number): Promise<string> {
  return new Promise((resolve) => {
    const parts: Uint8Array[] = [];
    let size = 0;
    let settled = false;
    const done = () => {
      if (settled) return;
      settled = true;
      resolve(boundedText(parts, limit));
    };
    const subscription = source.subscribe({
      chunk: (bytes) => {
        if (settled) return;
        parts.push(bytes.slice());
        size += bytes.length;
        if (size >= limit) {
          subscription.cancel();
          done();
        }
      },
      end: done,
      // A body that fails mid-read still gives what arrived.
      error: done,
    });
  });
}

async function readBounded(response: Response, limit: number): Promise<string> {
  const push = pushSourceOf(response);
  if (push !== undefined) return readPushedBounded(push, limit);
  if (response.body === null) return '';
  const reader = response.body.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < limit) {
      const { done, value } = await reader.read();
      if (done) break;
      parts.push(value);
      size += value.length;
    }
  } catch {
    // A body that fails mid-read still gives what arrived.
  } finally {
    reader.cancel().catch(() => {});
  }
  return boundedText(parts, limit);
}

/** The first `limit` bytes of `parts`, as text. */
function boundedText(parts: readonly Uint8Array[], limit: number): string {
  let all = concatBytes(...parts);
  if (all.length > limit) all = all.subarray(0, limit);
  return new TextDecoder().decode(all);
}

/** Keeps a value reachable up to this call (see the comment on `outgoing`). */
function keepAlive(value: unknown): void {
  if (value === null) throw new Error('unreachable');
}
