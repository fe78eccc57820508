import type { StreamEvent } from '../events/stream-event.ts';
import type { Frame } from '../wire/frame.ts';
import type { InvalidUtf8Policy } from '../wire/utf8.ts';
import type { TimeoutOptions } from './timeouts.ts';

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
