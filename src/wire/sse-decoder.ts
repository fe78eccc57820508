import { fastView } from './byte-search.ts';
import type { Frame } from './frame.ts';
import { LineSplitter } from './line-splitter.ts';
import { type InvalidUtf8Policy, LineDecoder } from './utf8.ts';
import { DEFAULT_MAX_LINE_BYTES, WireError } from './wire-error.ts';

export interface SseDecoderOptions {
  /** Called once per dispatched event (a blank line after at least one `data` field). */
  onFrame: (frame: Frame) => void;
  /** Called for each comment line (`:` first), such as the `:` keepalives of TGI and llama-server. */
  onComment?: ((text: string) => void) | undefined;
  /** Bound on one line and on one event's joined data. Default 1 MiB. */
  maxLineBytes?: number | undefined;
  /** What to do with bytes that are not UTF-8. Default `error` (fatal `invalid-utf8`). */
  invalidUtf8?: InvalidUtf8Policy | undefined;
}

// "data:" as bytes: the field every event carries, recognised without decoding the line.
const D = 0x64;
const A = 0x61;
const T = 0x74;
const COLON = 0x3a;
const SPACE = 0x20;

/**
 * A push-style Server-Sent Events decoder following the WHATWG event-stream parsing rules
 * (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation):
 * LF, CR and CRLF line ends; a BOM at the start; comment lines; `data:` with or without the one
 * optional space; multi-line `data` joined with LF; `event`, `id` (ignored when it holds NUL) and
 * `retry` (digits only). It also recognises the non-standard `error: {...}` line that llama-server
 * wrote before Sep 2025, which spec-compliant parsers silently drop; it becomes a frame with
 * `event: 'error'` and `legacyError: true`.
 */
export class SseDecoder {
  readonly #splitter: LineSplitter;
  readonly #decoder: LineDecoder;
  readonly #onFrame: SseDecoderOptions['onFrame'];
  readonly #onComment: SseDecoderOptions['onComment'];
  readonly #maxEventBytes: number;
  #data: string | undefined;
  #dataLength = 0;
  #event: string | undefined;
  #id: string | undefined;
  #retry: number | undefined;
  #legacyError: string | undefined;
  /** The last event ID seen (it persists across events, as the spec's last event ID buffer). */
  lastEventId: string | undefined;
  /** The reconnection time the server asked for with `retry:`. */
  retryMs: number | undefined;

  constructor(options: SseDecoderOptions) {
    this.#onFrame = options.onFrame;
    this.#onComment = options.onComment;
    this.#maxEventBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
    this.#decoder = new LineDecoder(options.invalidUtf8);
    this.#splitter = new LineSplitter({
      maxLineBytes: options.maxLineBytes,
      crEndsLine: true,
      onLine: (bytes, start, end) => this.#line(bytes, start, end),
    });
  }

  /** Lines that held invalid UTF-8 and were decoded with U+FFFD (policy `replace`). */
  get invalidUtf8Lines(): number {
    return this.#decoder.invalidLines;
  }

  /** Bytes consumed so far. */
  get offset(): number {
    return this.#splitter.offset;
  }

  feed(chunk: Uint8Array): void {
    // One Buffer view per read (in Node) makes each line's decoding a fast method call.
    this.#splitter.feed(fastView(chunk));
  }

  /**
   * The byte stream ended. Per the spec, an event not closed by a blank line is discarded; returns
   * true when such a partial event (or partial line) was pending, so callers can report a cut.
   */
  end(): boolean {
    const rest = this.#splitter.end();
    if (rest !== null) return true;
    const pending = this.#data !== undefined || this.#legacyError !== undefined;
    this.#reset();
    return pending;
  }

  #line(bytes: Uint8Array, start: number, end: number): void {
    if (start === end) {
      this.#dispatch();
      return;
    }
    const first = bytes[start];
    if (first === COLON) {
      if (this.#onComment !== undefined) this.#onComment(this.#text(bytes, start + 1, end));
      return;
    }
    // Fast path: `data:` is by far the most common field.
    if (
      first === D &&
      end - start >= 5 &&
      bytes[start + 1] === A &&
      bytes[start + 2] === T &&
      bytes[start + 3] === A &&
      bytes[start + 4] === COLON
    ) {
      let valueStart = start + 5;
      if (valueStart < end && bytes[valueStart] === SPACE) valueStart += 1;
      this.#appendData(this.#text(bytes, valueStart, end));
      return;
    }
    let colon = start;
    while (colon < end && bytes[colon] !== COLON) colon += 1;
    const field = this.#text(bytes, start, colon);
    let valueStart = colon < end ? colon + 1 : end;
    if (valueStart < end && bytes[valueStart] === SPACE) valueStart += 1;
    const value = this.#text(bytes, valueStart, end);
    switch (field) {
      case 'data':
        this.#appendData(value);
        return;
      case 'event':
        this.#event = value;
        return;
      case 'id':
        if (!value.includes('\u0000')) {
          this.#id = value;
          this.lastEventId = value;
        }
        return;
      case 'retry':
        if (/^[0-9]+$/.test(value)) {
          this.#retry = Number(value);
          this.retryMs = this.#retry;
        }
        return;
      case 'error':
        this.#legacyError = this.#legacyError === undefined ? value : `${this.#legacyError}\n${value}`;
        return;
      default:
        return;
    }
  }

  #text(bytes: Uint8Array, start: number, end: number): string {
    return this.#decoder.decode(bytes, start, end, this.#splitter.offset);
  }

  #appendData(value: string): void {
    this.#dataLength += value.length + 1;
    if (this.#dataLength > this.#maxEventBytes) {
      throw new WireError(
        'event-too-large',
        `an event's data is longer than the limit of ${this.#maxEventBytes}`,
        {
          byteOffset: this.#splitter.offset,
        },
      );
    }
    this.#data = this.#data === undefined ? value : `${this.#data}\n${value}`;
  }

  #dispatch(): void {
    if (this.#data !== undefined) {
      const frame: Frame = { data: this.#data };
      if (this.#event !== undefined) frame.event = this.#event;
      if (this.#id !== undefined) frame.id = this.#id;
      if (this.#retry !== undefined) frame.retry = this.#retry;
      this.#reset();
      this.#onFrame(frame);
      return;
    }
    if (this.#legacyError !== undefined) {
      const frame: Frame = { data: this.#legacyError, event: 'error', legacyError: true };
      this.#reset();
      this.#onFrame(frame);
      return;
    }
    // An event with no data is not dispatched, but its id still counts (already kept in lastEventId).
    this.#reset();
  }

  #reset(): void {
    this.#data = undefined;
    this.#dataLength = 0;
    this.#event = undefined;
    this.#id = undefined;
    this.#retry = undefined;
    this.#legacyError = undefined;
  }
}

/** A Web Streams wrapper: bytes in, frames out. Comments are dropped. */
export function createSseDecoderStream(
  options: Omit<SseDecoderOptions, 'onFrame'> = {},
): TransformStream<Uint8Array, Frame> {
  let decoder: SseDecoder;
  return new TransformStream<Uint8Array, Frame>({
    start(controller) {
      decoder = new SseDecoder({ ...options, onFrame: (frame) => controller.enqueue(frame) });
    },
    transform(chunk) {
      decoder.feed(chunk);
    },
    flush() {
      decoder.end();
    },
  });
}
