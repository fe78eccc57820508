import type { Dialect, DialectEncoder, FrameSink, MidStreamError } from '../dialects/dialect.ts';
import { frameText } from '../dialects/frame-text.ts';
import type { StreamEvent } from '../events/stream-event.ts';
import { encodeSseComment } from '../wire/sse-encoder.ts';
import { type FlushPolicy, isCoalescing, TextCoalescer } from './coalescer.ts';
import { formatEventId, type ResumeStore } from './resume-store.ts';

const encoder = new TextEncoder();

export interface StreamRelayOptions {
  streamId: string;
  dialect: Dialect;
  encoder: DialectEncoder;
  store: ResumeStore | undefined;
  flush?: FlushPolicy | undefined;
  /** SSE `retry:` advice written first. */
  retryMs?: number | undefined;
  now: () => number;
  /** Called when the client stops reading (disconnect or cancel). */
  onCancel: () => void;
}

/**
 * One client-facing stream: normalized events in, the client's dialect out. Every SSE event gets an
 * `id: <stream>.<seq>` and is recorded in the resume store; text can be coalesced; the upstream's
 * pace drives writes, and the client's pace pushes back (a full queue pauses the upstream read).
 */
export class StreamRelay {
  readonly body: ReadableStream<Uint8Array>;
  readonly streamId: string;
  readonly sse: boolean;
  lastWriteAt: number;
  /** Frames written (for metrics). */
  frames = 0;
  #seq = 0;
  #controller!: ReadableStreamDefaultController<Uint8Array>;
  /** The stream's ending was written (or it was aborted): nothing more goes out or into the store. */
  #ended = false;
  /** The client stopped reading. Frames still go to the resume store while the upstream runs on. */
  #clientGone = false;
  #drained: (() => void) | undefined;
  readonly #encoder: DialectEncoder;
  readonly #store: ResumeStore | undefined;
  readonly #coalescer: TextCoalescer | undefined;
  readonly #sink: FrameSink;
  readonly #now: () => number;

  constructor(options: StreamRelayOptions) {
    this.streamId = options.streamId;
    this.sse = options.dialect.framing === 'sse';
    this.#encoder = options.encoder;
    this.#store = this.sse ? options.store : undefined;
    this.#now = options.now;
    this.lastWriteAt = options.now();
    this.#sink = (data, kind) => {
      if (!this.sse) {
        this.#write(frameText(this.#encoder, data, kind));
        return;
      }
      this.#seq += 1;
      const text = frameText(this.#encoder, data, kind, formatEventId(this.streamId, this.#seq));
      this.#write(text);
      this.#store?.append(this.streamId, { seq: this.#seq, text });
    };
    this.#coalescer = isCoalescing(options.flush)
      ? new TextCoalescer(options.flush, (event) => this.#encoder.event(event, this.#sink))
      : undefined;
    const retryMs = options.retryMs;
    this.body = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          this.#controller = controller;
          if (this.sse && retryMs !== undefined) this.#write(`retry: ${retryMs}\n\n`);
        },
        pull: () => {
          const drained = this.#drained;
          this.#drained = undefined;
          drained?.();
        },
        cancel: () => {
          this.#clientGone = true;
          this.#drained?.();
          options.onCancel();
        },
      },
      { highWaterMark: 64 },
    );
  }

  get ended(): boolean {
    return this.#ended;
  }

  get clientGone(): boolean {
    return this.#clientGone;
  }

  /** The client left (its request signal fired) without cancelling the body. */
  clientLeft(): void {
    this.#clientGone = true;
    this.#drained?.();
  }

  event(event: StreamEvent): void {
    if (this.#ended) return;
    if (this.#coalescer !== undefined) this.#coalescer.push(event);
    else this.#encoder.event(event, this.#sink);
  }

  /** After each upstream read: write what the encoder held back to merge. */
  flushEncoder(): void {
    if (!this.#ended) this.#encoder.flush?.(this.#sink);
  }

  /** A promise while the client is behind (its queue is full), so the upstream read can wait. */
  backpressure(): Promise<void> | undefined {
    if (this.#ended || this.#clientGone || (this.#controller.desiredSize ?? 1) > 0) return undefined;
    return new Promise((resolve) => {
      this.#drained = resolve;
    });
  }

  keepalive(): void {
    if (this.sse && !this.#ended) this.#write(encodeSseComment());
  }

  /** The upstream finished cleanly: the trailer and the dialect's terminator. */
  end(): void {
    if (this.#ended) return;
    this.#coalescer?.flush();
    this.#encoder.end(this.#sink);
    this.#close();
  }

  /** The upstream failed mid-stream: the dialect's own error shape, never a clean ending. */
  fail(error: MidStreamError): void {
    if (this.#ended) return;
    this.#coalescer?.flush();
    this.#encoder.error(error, this.#sink);
    this.#close();
  }

  /** Ends the body abruptly (the client sees a cut), e.g. when nothing more can be written. */
  abort(): void {
    if (this.#ended) return;
    this.#ended = true;
    if (!this.#clientGone) this.#controller.error(new Error('stream aborted'));
  }

  #write(text: string): void {
    this.lastWriteAt = this.#now();
    if (this.#clientGone) return;
    this.frames += 1;
    this.#controller.enqueue(encoder.encode(text));
  }

  #close(): void {
    this.#ended = true;
    if (!this.#clientGone) this.#controller.close();
  }
}
