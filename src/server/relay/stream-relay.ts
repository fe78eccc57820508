import type {
  Dialect,
  DialectEncoder,
  FrameKind,
  FrameSink,
  MidStreamError,
} from '../../dialects/dialect.ts';
import { frameText } from '../../dialects/frame-text.ts';
import type { StreamEvent } from '../../events/stream-event.ts';
import { encodeSseComment } from '../../wire/sse-encoder.ts';
import { type DirectBody, ResponseOutput } from '../http/response-output.ts';
import { formatEventId, type ResumeStore } from '../resume/resume-store.ts';

export interface StreamRelayOptions {
  streamId: string;
  dialect: Dialect;
  encoder: DialectEncoder;
  store: ResumeStore | undefined;
  /** SSE `retry:` advice written first. */
  retryMs?: number | undefined;
  now: () => number;
  /** Called when the client stops reading (disconnect or cancel). */
  onCancel: () => void;
}

/**
 * One client-facing stream: normalized events in, the client's dialect out. Every SSE event gets an
 * `id: <stream>.<seq>` and is recorded in the resume store; the upstream's pace drives writes, and the
 * client's pace pushes back (a full socket or queue pauses the upstream read).
 */
export class StreamRelay {
  readonly streamId: string;
  readonly sse: boolean;
  lastWriteAt: number;
  #seq = 0;
  /** The stream's ending was written (or it was aborted): nothing more goes out or into the store. */
  #ended = false;
  readonly #output: ResponseOutput;
  #encoder: DialectEncoder;
  readonly #store: ResumeStore | undefined;
  readonly #sink: FrameSink;
  readonly #now: () => number;

  constructor(options: StreamRelayOptions) {
    this.streamId = options.streamId;
    this.sse = options.dialect.framing === 'sse';
    this.#encoder = options.encoder;
    this.#store = this.sse ? options.store : undefined;
    this.#now = options.now;
    this.lastWriteAt = options.now();
    this.#output = new ResponseOutput(options.onCancel);
    this.#sink = this.sse
      ? (data, kind) => {
          this.#seq += 1;
          this.#write(frameText(this.#encoder, data, kind, formatEventId(this.streamId, this.#seq)));
          this.#store?.append(this.streamId, { seq: this.#seq, data, kind });
        }
      : (data, kind) => this.#write(frameText(this.#encoder, data, kind));
    if (this.sse && options.retryMs !== undefined) this.#write(`retry: ${options.retryMs}\n\n`);
  }

  get body(): ReadableStream<Uint8Array> {
    return this.#output.body;
  }

  get direct(): DirectBody {
    return this.#output.direct;
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** The client left (its request signal fired) without cancelling the body. */
  clientLeft(): void {
    this.#output.leave();
  }

  event(event: StreamEvent): void {
    if (!this.#ended) this.#encoder.event(event, this.#sink);
  }

  /** A payload written as the upstream wrote it (a same-dialect relay: verbatim-frames.ts). */
  payload(data: string, kind: FrameKind | undefined): void {
    if (!this.#ended) this.#sink(data, kind);
  }

  /** After each upstream read: write what the encoder held back to merge. */
  flushEncoder(): void {
    if (!this.#ended) this.#encoder.flush?.(this.#sink);
  }

  backpressure(): Promise<void> | undefined {
    return this.#output.backpressure();
  }

  keepalive(): void {
    if (this.sse && !this.#ended) this.#write(encodeSseComment());
  }

  /** An SSE comment (every SSE parser skips it; not kept for a resume). NDJSON gets nothing. */
  note(text: string): void {
    if (this.sse && !this.#ended) this.#write(encodeSseComment(` ${text}`));
  }

  /**
   * Another encoder takes the stream over from here (a stream relayed as the upstream wrote it, which
   * another replica continues): `history` brings it to where the client's stream stands (its id,
   * model, open parts), written nowhere; SSE ids go on from the last one.
   */
  takeOver(encoder: DialectEncoder, history: readonly StreamEvent[]): void {
    const discard: FrameSink = () => {};
    for (const event of history) encoder.event(event, discard);
    encoder.flush?.(discard);
    this.#encoder = encoder;
  }

  /** The upstream finished cleanly: the trailer and the dialect's terminator. */
  end(): void {
    if (this.#ended) return;
    this.#encoder.end(this.#sink);
    this.#ended = true;
    this.#output.end();
  }

  /** The upstream's own ending was relayed verbatim: close the body and write nothing more. */
  endAsRelayed(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#output.end();
  }

  /** The upstream failed mid-stream: the dialect's own error shape, never a clean ending. */
  fail(error: MidStreamError): void {
    if (this.#ended) return;
    this.#encoder.error(error, this.#sink);
    this.#ended = true;
    this.#output.end();
  }

  /** Ends the body abruptly (the client sees a cut), e.g. when nothing more can be written. */
  abort(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#output.destroy();
  }

  #write(text: string): void {
    this.lastWriteAt = this.#now();
    this.#output.write(text);
  }
}
