/** Per-bucket totals over the run (`values[i]` covers `[i * bucketMs, (i + 1) * bucketMs)`). */
export interface TimelineSeries {
  bucketMs: number;
  /** Output tokens received per second, per bucket. */
  outputTokensPerSecond: number[];
  /** Requests that ended (any way) per second. */
  endedPerSecond: number[];
  /** Requests that ended without a whole answer, per second. */
  failedPerSecond: number[];
  /** Mean streams in flight over each bucket. */
  concurrency: number[];
}

/** A growable array of per-bucket sums, sized up front and doubled when a run goes long. */
class Buckets {
  values = new Float64Array(256);
  length = 0;

  add(index: number, amount: number): void {
    if (index < 0) index = 0;
    if (index >= this.values.length) {
      let size = this.values.length * 2;
      while (size <= index) size *= 2;
      const grown = new Float64Array(size);
      grown.set(this.values);
      this.values = grown;
    }
    this.values[index] = (this.values[index] as number) + amount;
    if (index >= this.length) this.length = index + 1;
  }
}

/**
 * What happened when, in fixed buckets (default 100 ms) from the start of the run: filled once per
 * request as it ends, from the times the client measured, so streams cost nothing while running.
 */
export class Timeline {
  readonly bucketMs: number;
  readonly #tokens = new Buckets();
  readonly #ended = new Buckets();
  readonly #failed = new Buckets();
  /** Stream-milliseconds in flight per bucket. */
  readonly #busy = new Buckets();

  constructor(bucketMs = 100) {
    this.bucketMs = bucketMs;
  }

  /**
   * One request: sent at `sentMs`, its content chunks at `firstMs` then `gaps` apart (each carrying
   * `tokensPerChunk`), ended at `endMs`. Times in ms from the run's start.
   */
  request(
    sentMs: number,
    endMs: number,
    firstMs: number | undefined,
    gaps: readonly number[],
    tokensPerChunk: number,
    failed: boolean,
  ): void {
    const size = this.bucketMs;
    if (firstMs !== undefined && tokensPerChunk > 0) {
      let at = firstMs;
      this.#tokens.add(Math.floor(at / size), tokensPerChunk);
      for (let i = 0; i < gaps.length; i++) {
        at += gaps[i] as number;
        this.#tokens.add(Math.floor(at / size), tokensPerChunk);
      }
    }
    const endBucket = Math.floor(endMs / size);
    this.#ended.add(endBucket, 1);
    if (failed) this.#failed.add(endBucket, 1);
    // Time in flight, spread over the buckets the request spans.
    const from = Math.max(0, sentMs);
    for (let bucket = Math.floor(from / size); bucket <= endBucket; bucket++) {
      const start = Math.max(from, bucket * size);
      const stop = Math.min(endMs, (bucket + 1) * size);
      if (stop > start) this.#busy.add(bucket, stop - start);
    }
  }

  /**
   * The series, merged into buckets of at least `bucketMs * k` so there are at most `maxPoints` of them,
   * covering `durationMs`.
   */
  series(durationMs: number, maxPoints = 120): TimelineSeries {
    const base = this.bucketMs;
    const count = Math.max(1, Math.ceil(durationMs / base));
    const factor = Math.max(1, Math.ceil(count / maxPoints));
    const bucketMs = base * factor;
    const points = Math.ceil(count / factor);
    const merge = (buckets: Buckets, scale: (sum: number) => number): number[] => {
      const out: number[] = [];
      for (let p = 0; p < points; p++) {
        let sum = 0;
        for (let i = p * factor; i < (p + 1) * factor && i < buckets.length; i++)
          sum += buckets.values[i] as number;
        out.push(scale(sum));
      }
      return out;
    };
    const perSecond = (sum: number) => (sum * 1000) / bucketMs;
    return {
      bucketMs,
      outputTokensPerSecond: merge(this.#tokens, perSecond),
      endedPerSecond: merge(this.#ended, perSecond),
      failedPerSecond: merge(this.#failed, perSecond),
      concurrency: merge(this.#busy, (sum) => sum / bucketMs),
    };
  }
}
