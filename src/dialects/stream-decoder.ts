import type { Frame } from '../wire/frame.ts';
import { NdjsonDecoder } from '../wire/ndjson-decoder.ts';
import { SseDecoder } from '../wire/sse-decoder.ts';
import type { InvalidUtf8Policy } from '../wire/utf8.ts';
import type { DecoderOptions, Dialect, DialectDecoder, Emit } from './dialect.ts';

export interface StreamDecoderOptions extends DecoderOptions {
  maxLineBytes?: number | undefined;
  invalidUtf8?: InvalidUtf8Policy | undefined;
  /** Every frame, before the dialect reads it (the raw view of `tokenwire inspect`). */
  onFrame?: ((frame: Frame) => void) | undefined;
  /** Every SSE comment line (keepalives). */
  onComment?: ((text: string) => void) | undefined;
}

/**
 * Bytes -> normalized events for one stream of one dialect: the wire decoder of the dialect's
 * framing chained to the dialect's decoder. Push-style and synchronous: `feed` each read, then `end`.
 * Throws `WireError` (overflow, invalid UTF-8) and `DialectError` (malformed payload).
 */
export class StreamDecoder {
  readonly dialect: Dialect;
  readonly state: DialectDecoder;
  readonly #wire: SseDecoder | NdjsonDecoder;
  readonly #emit: Emit;
  /** Frames decoded so far. */
  frames = 0;

  constructor(dialect: Dialect, emit: Emit, options: StreamDecoderOptions = {}) {
    this.dialect = dialect;
    this.#emit = emit;
    this.state = dialect.createDecoder(options);
    const onFrame = options.onFrame;
    const handle = (frame: Frame): void => {
      this.frames += 1;
      if (onFrame !== undefined) onFrame(frame);
      this.state.frame(frame, emit);
    };
    this.#wire =
      dialect.framing === 'sse'
        ? new SseDecoder({
            onFrame: handle,
            onComment: options.onComment,
            maxLineBytes: options.maxLineBytes,
            invalidUtf8: options.invalidUtf8,
          })
        : new NdjsonDecoder({
            onFrame: handle,
            maxLineBytes: options.maxLineBytes,
            invalidUtf8: options.invalidUtf8,
          });
  }

  feed(chunk: Uint8Array): void {
    this.#wire.feed(chunk);
  }

  /** EOF. Returns true when the bytes ended inside a frame (a cut mid-event). */
  end(): boolean {
    const partial = this.#wire.end();
    this.state.end(this.#emit);
    return partial && this.dialect.framing === 'sse';
  }

  get lastEventId(): string | undefined {
    return this.#wire instanceof SseDecoder ? this.#wire.lastEventId : undefined;
  }

  get retryMs(): number | undefined {
    return this.#wire instanceof SseDecoder ? this.#wire.retryMs : undefined;
  }

  get invalidUtf8Lines(): number {
    return this.#wire.invalidUtf8Lines;
  }

  get bytes(): number {
    return this.#wire.offset;
  }
}
