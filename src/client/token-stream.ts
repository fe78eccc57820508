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

export interface CompleteOptions extends TracedStreamOptions {
  /**
   * Each event as it is decoded, in order, before `complete()` resolves: the same events `stream()`
   * yields, called synchronously with no promise per event (the fastest way to show text as it comes,
   * bench/README.md "stream()"). A throw stops the request, and `complete()` rejects with what was thrown.
   */
  onEvent?: ((event: StreamEvent) => void) | undefined;
}

export interface TokenStreamOptions extends TracedStreamOptions {
  /**
   * Make the iterator (of events or of batches) throw an IncompleteStreamError after the last event of an
   * incomplete stream.
   */
  throwOnIncomplete?: boolean | undefined;
}

/** Events buffered ahead of a slow consumer before reading pauses (bench/README.md, "The NDJSON path"). */
const HIGH_WATER = 256;

const DONE: IteratorResult<never> = Object.freeze({ value: undefined, done: true });

/**
 * A streaming response: iterate it for events as they arrive, and/or await `result`. The request is
 * sent on first use (iteration or `result`). Breaking out of the loop aborts the request, so the
 * server sees the connection close; `result` then says `aborted`, with the text so far.
 *
 * Iterate it once, either for events (`for await (const event of tokens)`) or for batches of them
 * (`for await (const events of tokens.batches())`).
 */
export class TokenStream implements AsyncIterable<StreamEvent> {
  readonly #request: StreamRequest;
  readonly #options: TokenStreamOptions;
  readonly #consumer = new AbortController();
  /** Events decoded and not yet taken by the iterator, in order, from `#head` on. */
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
    const source = this.#open();
    let ended = false;
    const wait = async (): Promise<IteratorResult<StreamEvent>> => {
      const queued = await source.ready();
      if (ended) return DONE;
      if (queued) return this.#next();
      ended = true;
      await source.end();
      return DONE;
    };
    const step = (): Promise<IteratorResult<StreamEvent>> => {
      if (ended) return Promise.resolve(DONE);
      if (this.#head < this.#queue.length) return Promise.resolve(this.#next());
      return wait();
    };
    // The last call not settled yet: a later call lines up behind it, so no event is lost or reordered.
    let tail: Promise<IteratorResult<StreamEvent>> | undefined;
    const next = (): Promise<IteratorResult<StreamEvent>> => {
      // A queued event resolves at once, with no async frame (bench/README.md, "stream()").
      if (tail === undefined && !ended && this.#head < this.#queue.length)
        return Promise.resolve(this.#next());
      const promise = tail === undefined ? step() : tail.then(step, step);
      tail = promise;
      const settled = () => {
        if (tail === promise) tail = undefined;
      };
      promise.then(settled, settled);
      return promise;
    };
    return {
      next,
      return: async (): Promise<IteratorResult<StreamEvent>> => {
        ended = true;
        await source.stop();
        return DONE;
      },
    };
  }

  /**
   * The same events as the event iterator, in the same order, as arrays: each batch holds every event
   * decoded since the previous batch was taken (what one read of the body carried, or more when the
   * consumer was slower than the network), never none. One `await` per batch instead of one per event,
   * for a consumer that handles events in bulk (appending text, rendering once per batch). Reading
   * pauses while more than a few hundred events wait, as with the event iterator; breaking out of the
   * loop aborts the request; with `throwOnIncomplete` the loop throws after the last batch.
   */
  batches(): AsyncIterableIterator<readonly StreamEvent[]> {
    const source = this.#open();
    let ended = false;
    // Calls made before the previous one settled line up behind it: no batch is lost or reordered.
    let last: Promise<unknown> = Promise.resolve();
    const step = async (): Promise<IteratorResult<readonly StreamEvent[]>> => {
      if (ended) return DONE;
      const batch = source.take() ?? ((await source.ready()) ? source.take() : undefined);
      if (ended) return DONE;
      if (batch !== undefined) return { value: batch, done: false };
      ended = true;
      await source.end();
      return DONE;
    };
    const iterator: AsyncIterableIterator<readonly StreamEvent[]> = {
      next: (): Promise<IteratorResult<readonly StreamEvent[]>> => {
        const next = last.then(step, step);
        last = next;
        return next;
      },
      return: async (): Promise<IteratorResult<readonly StreamEvent[]>> => {
        ended = true;
        await source.stop();
        return DONE;
      },
      [Symbol.asyncIterator]: () => iterator,
    };
    return iterator;
  }

  /** Starts the request for an iterator (once) and hands it the queue. */
  #open(): EventSource {
    if (this.#iterating) throw new TypeError('a TokenStream can be iterated only once');
    this.#iterating = true;
    const result = this.#start();
    return {
      take: () => this.#take(),
      ready: async () => {
        for (;;) {
          if (this.#head < this.#queue.length) return true;
          if (this.#finished) return false;
          await new Promise<void>((resolve) => {
            this.#wake = resolve;
          });
        }
      },
      end: async () => {
        const final = await result;
        if (this.#options.throwOnIncomplete === true && !final.complete) {
          throw new IncompleteStreamError(
            final.incomplete ?? 'unknown',
            `the stream is incomplete (${final.incomplete}): ${final.error?.message ?? ''}`,
          );
        }
      },
      stop: async () => {
        if (!this.#finished) this.#consumer.abort();
        await result.catch(() => {});
      },
    };
  }

  /** The next queued event (there is one); reading resumes once the consumer took every event. */
  #next(): IteratorResult<StreamEvent> {
    const value = this.#queue[this.#head]!;
    this.#head += 1;
    if (this.#head === this.#queue.length) {
      this.#queue = [];
      this.#head = 0;
      this.#release();
    }
    return { value, done: false };
  }

  /** Every queued event, handed over whole, or undefined when none is queued. */
  #take(): StreamEvent[] | undefined {
    const queue = this.#queue;
    const head = this.#head;
    if (head === queue.length) return undefined;
    this.#queue = [];
    this.#head = 0;
    this.#release();
    return head === 0 ? queue : queue.slice(head);
  }

  /** The consumer took every queued event: reading goes on if it paused. */
  #release(): void {
    const drained = this.#drained;
    if (drained !== undefined) {
      this.#drained = undefined;
      drained();
    }
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

/** What an iterator reads a TokenStream's queue through. */
interface EventSource {
  /** Every queued event, or undefined when none is queued now. */
  take(): StreamEvent[] | undefined;
  /** Resolves true once an event is queued, false when the stream ended with none left. */
  ready(): Promise<boolean>;
  /** After the last event: throws when `throwOnIncomplete` asks for it. */
  end(): Promise<void>;
  /** The consumer stopped early: aborts the request if it is still running, and waits for its end. */
  stop(): Promise<void>;
}

/** Starts a streaming request. Iterate the returned stream for events; await `.result` for the outcome. */
export function stream(request: StreamRequest, options: TokenStreamOptions = {}): TokenStream {
  return new TokenStream(request, options);
}

/** Sends a streaming request and resolves with its Result (check `complete`; see `incomplete`). */
export function complete(request: StreamRequest, options: CompleteOptions = {}): Promise<Result> {
  const onEvent = options.onEvent;
  const run =
    onEvent === undefined
      ? (sent: StreamRequest) => runStream(sent, options)
      : (sent: StreamRequest) => runWithCallback(sent, options, onEvent);
  const telemetry = options.telemetry;
  return telemetry === undefined ? run(request) : traceStream(telemetry, request, run);
}

/** A run whose events go to `onEvent`; its throw stops the request (the server sees the close) and is what the run rejects with. */
function runWithCallback(
  request: StreamRequest,
  options: CompleteOptions,
  onEvent: (event: StreamEvent) => void,
): Promise<Result> {
  const consumer = new AbortController();
  let thrown: { error: unknown } | undefined;
  const deliver = (event: StreamEvent) => {
    if (thrown !== undefined) return;
    try {
      onEvent(event);
    } catch (error) {
      thrown = { error };
      consumer.abort(error);
    }
  };
  return runStream(request, options, { consumer, onEvent: deliver }).then((result) => {
    if (thrown !== undefined) throw thrown.error;
    return result;
  });
}
