import type { StreamMetrics } from '../events/result.ts';
import type { StreamEvent } from '../events/stream-event.ts';
import type { Timings, Usage } from '../events/usage.ts';

/**
 * Timestamps taken when bytes arrive (a frame is stamped with the arrival of the read that completed
 * it), folded into StreamMetrics at the end. One pure function (`finish`) computes the figures, so the
 * bench and the client report the same numbers.
 */
export class MetricsRecorder {
  readonly #now: () => number;
  readonly startedAt: number;
  headersAt: number | undefined;
  firstByteAt: number | undefined;
  firstContentAt: number | undefined;
  #lastContentAt: number | undefined;
  readonly interChunkMs: number[] = [];
  contentFrames = 0;
  frames = 0;
  keepalives = 0;
  bytes = 0;
  #frameHadContent = false;
  /**
   * When the read being decoded arrived. One clock read per read instead of per frame: a 64 KiB read
   * holds hundreds of frames, and a clock read per frame was ~5% of the client's decode time (CPU
   * profile of bench/decode-throughput.ts).
   */
  #readAt: number | undefined;

  constructor(now: () => number) {
    this.#now = now;
    this.startedAt = now();
  }

  now(): number {
    return this.#now();
  }

  headers(): void {
    this.headersAt = this.#now();
  }

  /** A read arrived. Frames it completes are stamped with its arrival time: they arrived together. */
  chunk(byteLength: number): void {
    const at = this.#now();
    this.#readAt = at;
    if (this.firstByteAt === undefined) this.firstByteAt = at;
    this.bytes += byteLength;
  }

  /** Called before a frame's events; `event` for each; `endFrame` after. */
  beginFrame(): void {
    this.frames += 1;
    this.#frameHadContent = false;
  }

  event(event: StreamEvent): void {
    if (this.#frameHadContent) return;
    if (
      event.type === 'text' ||
      // A reasoning event with no text carries only a signature (Messages): not content.
      (event.type === 'reasoning' && event.text !== '') ||
      (event.type === 'tool-call-delta' && event.argumentsDelta !== '') ||
      (event.type === 'tool-call' && event.arguments !== '')
    ) {
      this.#frameHadContent = true;
      const at = this.#readAt ?? this.#now();
      if (this.firstContentAt === undefined) this.firstContentAt = at;
      else if (this.#lastContentAt !== undefined) this.interChunkMs.push(at - this.#lastContentAt);
      this.#lastContentAt = at;
      this.contentFrames += 1;
    }
  }

  /**
   * The stream's figures. Output tokens are the server's count: its usage, else the tokens its timings
   * say it generated (llama-server's `timings.predicted_n` without `include_usage`), else an estimate.
   */
  finish(usage: Usage | undefined, timings?: Timings | undefined): StreamMetrics {
    const end = this.#now();
    const serverCount = usage?.outputTokens ?? timings?.evalTokens;
    const metrics: StreamMetrics = {
      chunkCount: this.contentFrames,
      interChunkMs: this.interChunkMs,
      outputTokensEstimated: serverCount === undefined,
      keepaliveCount: this.keepalives,
      bytes: this.bytes,
      totalMs: end - this.startedAt,
    };
    if (this.headersAt !== undefined) metrics.headersMs = this.headersAt - this.startedAt;
    if (this.firstByteAt !== undefined) metrics.ttfbMs = this.firstByteAt - this.startedAt;
    if (this.firstContentAt !== undefined) metrics.ttftMs = this.firstContentAt - this.startedAt;
    // A chunk is not a token: without the server's count, content frames are the estimate (flagged).
    metrics.outputTokens = serverCount ?? this.contentFrames;
    if (usage?.inputTokens !== undefined) metrics.inputTokens = usage.inputTokens;
    const lastAt = this.#lastContentAt;
    if (this.firstContentAt !== undefined && lastAt !== undefined && metrics.outputTokens > 1) {
      const seconds = (end - this.firstContentAt) / 1000;
      if (seconds > 0) metrics.outputTokensPerSecond = (metrics.outputTokens - 1) / seconds;
    }
    return metrics;
  }
}
