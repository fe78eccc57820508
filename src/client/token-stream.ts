import type { Result } from '../events/result.ts';
import type { StreamEvent } from '../events/stream-event.ts';
import type { StreamRequest } from './build-request.ts';
import { IncompleteStreamError } from './client-errors.ts';
import { type ClientTelemetry, traceStream } from './client-telemetry.ts';
import { runStream, type StreamOptions } from './run-stream.ts';

export interface TracedStreamOptions extends StreamOptions {
  /** OpenTelemetry tracer and/or meter: a GenAI span and metrics for this call (see ClientTelemetry). */
  telemetry?: ClientTelemetry | undefined;
}

export interface TokenStreamOptions extends TracedStreamOptions {
  /** Make the event iterator throw an IncompleteStreamError after the last event of an incomplete stream. */
  throwOnIncomplete?: boolean | undefined;
}

/** Events buffered ahead of a slow consumer before reading pauses (bench/README.md, "The NDJSON path"). */
const HIGH_WATER = 256;

/**
 * A streaming response: iterate it for events as they arrive, and/or await `result`. The request is
 * sent on first use (iteration or `result`). Breaking out of the loop aborts the request, so the
 * server sees the connection close; `result` then says `aborted`, with the text so far.
 */
export class TokenStream implements AsyncIterable<StreamEvent> {
  readonly #request: StreamRequest;
  readonly #options: TokenStreamOptions;
  readonly #consumer = new AbortController();
  #queue: StreamEvent[] = [];
  #head = 0;
  #wake: (() => void) | undefined;
  #drained: (() => void) | undefined;
  #finished = false;
  #iterating = false;
  #result: Promise<Result> | undefined;

  constructor(request: StreamRequest, options: TokenStreamOptions = {}) {
    this.#request = request;
    this.#options = options;
  }

  /** The final Result. Rejects only when no response arrived (HTTP error, refused, connect timeout). */
  get result(): Promise<Result> {
    return this.#start();
  }

  /** Stops the stream (as breaking out of the loop does). */
  abort(): void {
    this.#consumer.abort();
  }

  [Symbol.asyncIterator](): AsyncIterator<StreamEvent> {
    if (this.#iterating) throw new TypeError('a TokenStream can be iterated only once');
    this.#iterating = true;
    const result = this.#start();
    // Not async: a queued event resolves with no async frame (bench/README.md, "The NDJSON path").
    const wait = async (): Promise<IteratorResult<StreamEvent>> => {
      for (;;) {
        if (this.#head < this.#queue.length) return this.#take();
        if (this.#finished) {
          const final = await result;
          if (this.#options.throwOnIncomplete === true && !final.complete) {
            throw new IncompleteStreamError(
              final.incomplete ?? 'unknown',
              `the stream is incomplete (${final.incomplete}): ${final.error?.message ?? ''}`,
            );
          }
          return { value: undefined, done: true };
        }
        await new Promise<void>((resolve) => {
          this.#wake = resolve;
        });
      }
    };
    return {
      next: (): Promise<IteratorResult<StreamEvent>> =>
        this.#head < this.#queue.length ? Promise.resolve(this.#take()) : wait(),
      return: async (): Promise<IteratorResult<StreamEvent>> => {
        if (!this.#finished) this.#consumer.abort();
        await result.catch(() => {});
        return { value: undefined, done: true };
      },
    };
  }

  /** The next queued event (there is one). */
  #take(): IteratorResult<StreamEvent> {
    const value = this.#queue[this.#head]!;
    this.#head += 1;
    if (this.#head === this.#queue.length) {
      this.#queue = [];
      this.#head = 0;
      this.#drained?.();
    }
    return { value, done: false };
  }

  #start(): Promise<Result> {
    if (this.#result !== undefined) return this.#result;
    const iterating = this.#iterating;
    const run = (request: StreamRequest) =>
      runStream(request, this.#options, {
        consumer: this.#consumer,
        onEvent: iterating
          ? (event) => {
              this.#queue.push(event);
              const wake = this.#wake;
              if (wake !== undefined) {
                this.#wake = undefined;
                wake();
              }
            }
          : undefined,
        backpressure: iterating
          ? () =>
              this.#queue.length - this.#head > HIGH_WATER
                ? new Promise<void>((resolve) => {
                    this.#drained = resolve;
                  })
                : undefined
          : undefined,
      });
    const telemetry = this.#options.telemetry;
    this.#result = (
      telemetry === undefined ? run(this.#request) : traceStream(telemetry, this.#request, run)
    ).finally(() => {
      this.#finished = true;
      const wake = this.#wake;
      this.#wake = undefined;
      wake?.();
    });
    // Awaited by whoever needs it; never an unhandled rejection for a caller that only iterates.
    this.#result.catch(() => {});
    return this.#result;
  }
}

/** Starts a streaming request. Iterate the returned stream for events; await `.result` for the outcome. */
export function stream(request: StreamRequest, options: TokenStreamOptions = {}): TokenStream {
  return new TokenStream(request, options);
}

/** Sends a streaming request and resolves with its Result (check `complete`; see `incomplete`). */
export function complete(request: StreamRequest, options: TracedStreamOptions = {}): Promise<Result> {
  const telemetry = options.telemetry;
  if (telemetry === undefined) return runStream(request, options);
  return traceStream(telemetry, request, (sent) => runStream(sent, options));
}
