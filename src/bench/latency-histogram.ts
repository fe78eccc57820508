import { Int32Histogram } from 'hdr-histogram-js';

/** Percentiles and spread of one metric, in the metric's unit (ms for latencies). */
export interface Distribution {
  count: number;
  min: number;
  mean: number;
  stddev: number;
  p50: number;
  p90: number;
  p95: number;
  p99: number;
  max: number;
}

/** One bar of a histogram chart: values in [from, to) seen `count` times. */
export interface HistogramBin {
  from: number;
  to: number;
  count: number;
}

/** Values are kept as integers of 1/SCALE of the unit: microseconds for milliseconds. */
const SCALE = 1000;
/** One hour in microseconds: longer streams are clamped (and counted) at the top. */
const HIGHEST = 3_600_000 * SCALE;

/**
 * An HDR histogram of a latency (or any non-negative quantity) in milliseconds, with 3 significant
 * digits (relative error under 0.1 %) from 1 µs to one hour, in constant memory (~95 KB) whatever the
 * number of samples: the bench records every inter-chunk gap of every stream here without keeping them.
 *
 * Backed by `hdr-histogram-js` (the JS build, never its optional WebAssembly one): the reference HDR
 * algorithm, well tested, and fast enough (~0.1 µs a sample) that recording is not the bench's cost.
 */
export class LatencyHistogram {
  readonly #hdr = new Int32Histogram(1, HIGHEST, 3);
  #sum = 0;
  #sumSquares = 0;
  #count = 0;
  #min = Number.POSITIVE_INFINITY;
  #max = Number.NEGATIVE_INFINITY;

  /** Records one value in ms. Negative values are clamped to 0, values over an hour to an hour. */
  record(ms: number): void {
    if (!(ms >= 0)) ms = 0;
    const scaled = Math.min(HIGHEST, Math.round(ms * SCALE));
    this.#hdr.recordValue(scaled);
    // Exact mean, min and max on the side: the HDR buckets round them.
    this.#count += 1;
    this.#sum += ms;
    this.#sumSquares += ms * ms;
    if (ms < this.#min) this.#min = ms;
    if (ms > this.#max) this.#max = ms;
  }

  get count(): number {
    return this.#count;
  }

  /**
   * The value at a percentile (0-100), in ms; NaN when empty. HDR answers with the top of the value's
   * bucket (at most 0.1 % high); it is clamped to the exact min and max, so 20 tokens reads 20.
   */
  percentile(p: number): number {
    if (this.#count === 0) return Number.NaN;
    if (p >= 100) return this.#max;
    const value = this.#hdr.getValueAtPercentile(p) / SCALE;
    return Math.min(this.#max, Math.max(this.#min, value));
  }

  distribution(): Distribution {
    const count = this.#count;
    if (count === 0) {
      const nan = Number.NaN;
      return { count, min: nan, mean: nan, stddev: nan, p50: nan, p90: nan, p95: nan, p99: nan, max: nan };
    }
    const mean = this.#sum / count;
    const variance = Math.max(0, this.#sumSquares / count - mean * mean);
    return {
      count,
      min: this.#min,
      mean,
      stddev: Math.sqrt(variance),
      p50: this.percentile(50),
      p90: this.percentile(90),
      p95: this.percentile(95),
      p99: this.percentile(99),
      max: this.#max,
    };
  }

  /**
   * The recorded values as `bins` bars between the p0.1 and p99.9 values, log-spaced when they span
   * more than a factor of 20 (latencies usually do), else linear. Values outside go in the end bars.
   */
  bins(bins = 40): HistogramBin[] {
    if (this.#count === 0) return [];
    let low = this.percentile(0.1);
    let high = this.percentile(99.9);
    if (!(high > low)) {
      low = this.#min;
      high = this.#max > low ? this.#max : low + 1;
    }
    const logScale = low > 0 && high / low > 20;
    const edge = (i: number): number =>
      logScale ? low * (high / low) ** (i / bins) : low + ((high - low) * i) / bins;
    const out: HistogramBin[] = [];
    for (let i = 0; i < bins; i++) out.push({ from: edge(i), to: edge(i + 1), count: 0 });
    const hdr = this.#hdr;
    const length = hdr.countsArrayLength;
    for (let index = 0; index < length; index++) {
      const count = hdr.getCountAtIndex(index);
      if (count === 0) continue;
      const value = hdr.valueFromIndex(index) / SCALE;
      let bin: number;
      if (value < low) bin = 0;
      else if (value >= high) bin = bins - 1;
      else
        bin = logScale
          ? Math.floor((Math.log(value / low) / Math.log(high / low)) * bins)
          : Math.floor(((value - low) / (high - low)) * bins);
      const target = out[Math.min(bins - 1, Math.max(0, bin))] as HistogramBin;
      target.count += count;
    }
    return out;
  }
}
