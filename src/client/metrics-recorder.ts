import type { StreamMetrics } from '../events/result.ts';
import type { StreamEvent } from '../events/stream-event.ts';
import type { Usage } from '../events/usage.ts';

/**
 * Timestamps taken when bytes and frames arrive, folded into StreamMetrics at the end. One pure
 * function (`finish`) computes the figures, so the bench and the client report the same numbers.
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

  chunk(byteLength: number): void {
    if (this.firstByteAt === undefined) this.firstByteAt = this.#now();
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
      event.type === 'reasoning' ||
      (event.type === 'tool-call-delta' && event.argumentsDelta !== '') ||
      (event.type === 'tool-call' && event.arguments !== '')
    ) {
      this.#frameHadContent = true;
      const at = this.#now();
      if (this.firstContentAt === undefined) this.firstContentAt = at;
      else if (this.#lastContentAt !== undefined) this.interChunkMs.push(at - this.#lastContentAt);
      this.#lastContentAt = at;
      this.contentFrames += 1;
    }
  }

  finish(usage: Usage | undefined): StreamMetrics {
    const end = this.#now();
    const metrics: StreamMetrics = {
      chunkCount: this.contentFrames,
      interChunkMs: this.interChunkMs,
      outputTokensEstimated: usage?.outputTokens === undefined,
      keepaliveCount: this.keepalives,
      bytes: this.bytes,
      totalMs: end - this.startedAt,
    };
    if (this.headersAt !== undefined) metrics.headersMs = this.headersAt - this.startedAt;
    if (this.firstByteAt !== undefined) metrics.ttfbMs = this.firstByteAt - this.startedAt;
    if (this.firstContentAt !== undefined) metrics.ttftMs = this.firstContentAt - this.startedAt;
    // A chunk is not a token: without the server's count, content frames are the estimate (flagged).
    metrics.outputTokens = usage?.outputTokens ?? this.contentFrames;
    if (usage?.inputTokens !== undefined) metrics.inputTokens = usage.inputTokens;
    const lastAt = this.#lastContentAt;
    if (this.firstContentAt !== undefined && lastAt !== undefined && metrics.outputTokens > 1) {
      const seconds = (end - this.firstContentAt) / 1000;
      if (seconds > 0) metrics.outputTokensPerSecond = (metrics.outputTokens - 1) / seconds;
    }
    return metrics;
  }
}
