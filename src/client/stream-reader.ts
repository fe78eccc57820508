import { type Dialect, type DialectDecoder, DialectError, type Framing } from '../dialects/dialect.ts';
import { detectDialect } from '../dialects/registry.ts';
import { snippet, TokenwireError } from '../errors.ts';
import type { IncompleteReason, ResultError } from '../events/result.ts';
import { ResultBuilder } from '../events/result.ts';
import type { StreamEvent } from '../events/stream-event.ts';
import { concatBytes } from '../wire/concat-bytes.ts';
import type { Frame } from '../wire/frame.ts';
import { NdjsonDecoder } from '../wire/ndjson-decoder.ts';
import { SseDecoder } from '../wire/sse-decoder.ts';
import type { PreparedRequest } from './build-request.ts';
import { CumulativeTextFilter } from './cumulative-text.ts';
import { errorText } from './error-text.ts';
import { describeFraming, framingOfContentType, sniffFraming } from './framing.ts';
import type { MetricsRecorder } from './metrics-recorder.ts';
import { type PushSource, pushSourceOf } from './push-source.ts';
import { readBounded } from './read-bounded.ts';
import type { RunHooks, StreamOptions } from './stream-options.ts';
import type { Deadlines, TimeoutKind, TimeoutOptions } from './timeouts.ts';

const SNIFF_BYTES = 16;

/** The signal of a request nobody can abort: no abort listener is added to it. */
export const NEVER_ABORTED: AbortSignal = new AbortController().signal;

/**
 * Reads one response's body to its end: the framing checked on the first bytes, the wire decoder and the
 * dialect's (detected from the first payload when the request did not name one), the cumulative-text
 * filter, the events into a `ResultBuilder` and the hooks; then `outcome()` says how the stream ended.
 */
export class StreamReader {
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
