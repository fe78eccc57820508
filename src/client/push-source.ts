/**
 * An optional fast path for reading a response body. A fetch whose bodies can be read by events (the
 * upstream fetch of `tokenwire/node`, createUndiciFetch) puts a PushSource on the body's ReadableStream under
 * this symbol; the client then takes chunks as they are pushed instead of awaiting one promise per read
 * through Web Streams. Anyone else still reads the ReadableStream as usual. Web-standard: a symbol and
 * three callbacks, no Node types.
 */
export const PUSH_SOURCE: unique symbol = Symbol.for('tokenwire.push-source') as never;

export interface PushSink {
  chunk(bytes: Uint8Array): void;
  end(): void;
  error(error: unknown): void;
}

export interface PushSubscription {
  /** Stop delivering chunks until `resume` (backpressure). */
  pause(): void;
  resume(): void;
  /** Stop for good and release the connection (an abort: the server must see it). */
  cancel(reason?: unknown): void;
  /**
   * The reader has what it needs (the stream's terminal event came): no more chunks are delivered, but
   * the source may read the rest of the body, briefly, so the connection can be kept for the next
   * request instead of closed. Optional: without it the reader cancels.
   */
  finish?(): void;
}

export interface PushSource {
  /** Starts the flow; at most once, and only if the ReadableStream was not read. */
  subscribe(sink: PushSink): PushSubscription;
}

/**
 * The push source of a response body, or of the Response itself: a fetch asked for PUSH_ONLY puts it on
 * a Response whose `body` is null, so no ReadableStream is built for a body read by events.
 */
export function pushSourceOf(carrier: ReadableStream<Uint8Array> | Response | null): PushSource | undefined {
  if (carrier === null) return undefined;
  const source = (carrier as unknown as Record<symbol, unknown>)[PUSH_SOURCE];
  return typeof source === 'object' &&
    source !== null &&
    typeof (source as PushSource).subscribe === 'function'
    ? (source as PushSource)
    : undefined;
}

/**
 * Set to true in the `init` given to a FETCH_TAKES_INIT fetch: the caller reads a successful body only
 * through its push source, and reads the response only for `status`, `statusText`, `ok`, `url` and
 * `headers`. The fetch may then answer a 2xx with a stand-in for the Response: `body` null, the source
 * on it, light headers (node/undici-fetch.ts; no ReadableStream, no undici Response or Headers:
 * about 20 µs and a few KiB less per request in Node 20, measured with micro-benchmarks).
 */
export const PUSH_ONLY: unique symbol = Symbol.for('tokenwire.push-only') as never;

/**
 * Marks a fetch that takes `(url, init)` itself, as the standard fetch does: the client then calls it so,
 * with the body as the string it is, instead of building a Request first (node/undici-fetch.ts).
 */
export const FETCH_TAKES_INIT: unique symbol = Symbol.for('tokenwire.fetch-takes-init') as never;
