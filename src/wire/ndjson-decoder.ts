import { fastView } from './byte-search.ts';
import type { Frame } from './frame.ts';
import { LineSplitter } from './line-splitter.ts';
import { type InvalidUtf8Policy, LineDecoder } from './utf8.ts';

export interface NdjsonDecoderOptions {
  /** Called once per non-blank line. */
  onFrame: (frame: Frame) => void;
  /** Bound on one line. Default 1 MiB. */
  maxLineBytes?: number | undefined;
  invalidUtf8?: InvalidUtf8Policy | undefined;
}

/**
 * A push-style newline-delimited JSON decoder (Ollama's native stream). Lines end on LF; a CR before
 * it is dropped; blank lines are skipped. The JSON itself is left to the dialect.
 */
export class NdjsonDecoder {
  readonly #splitter: LineSplitter;
  readonly #decoder: LineDecoder;
  readonly #onFrame: NdjsonDecoderOptions['onFrame'];

  constructor(options: NdjsonDecoderOptions) {
    this.#onFrame = options.onFrame;
    this.#decoder = new LineDecoder(options.invalidUtf8);
    this.#splitter = new LineSplitter({
      maxLineBytes: options.maxLineBytes,
      crEndsLine: false,
      onLine: (bytes, start, end) => this.#line(bytes, start, end),
    });
  }

  get invalidUtf8Lines(): number {
    return this.#decoder.invalidLines;
  }

  get offset(): number {
    return this.#splitter.offset;
  }

  feed(chunk: Uint8Array): void {
    // One Buffer view per read (in Node) makes each line's decoding a fast method call.
    this.#splitter.feed(fastView(chunk));
  }

  /**
   * The byte stream ended. A last line without its LF is still a line in NDJSON; it is delivered.
   * Returns true when the stream ended without a final LF.
   */
  end(): boolean {
    const rest = this.#splitter.end();
    if (rest === null) return false;
    let end = rest.length;
    if (end > 0 && rest[end - 1] === 0x0d) end -= 1;
    this.#line(rest, 0, end);
    return true;
  }

  #line(bytes: Uint8Array, start: number, end: number): void {
    const text = this.#decoder.decode(bytes, start, end, this.#splitter.offset);
    if (text.length === 0 || (text.charCodeAt(0) <= 0x20 && text.trim() === '')) return;
    this.#onFrame({ data: text });
  }
}

export function createNdjsonDecoderStream(
  options: Omit<NdjsonDecoderOptions, 'onFrame'> = {},
): TransformStream<Uint8Array, Frame> {
  let decoder: NdjsonDecoder;
  return new TransformStream<Uint8Array, Frame>({
    start(controller) {
      decoder = new NdjsonDecoder({ ...options, onFrame: (frame) => controller.enqueue(frame) });
    },
    transform(chunk) {
      decoder.feed(chunk);
    },
    flush() {
      decoder.end();
    },
  });
}
