/**
 * A minimal Prometheus text-exposition registry: counters, gauges and histograms with labels.
 * Written here rather than taken from prom-client because the gateway is a web-standard handler
 * (prom-client imports node:cluster and friends) and it needs only these three types.
 */

type Labels = Record<string, string>;

/**
 * The exposition form of a label set (sorted, escaped). Label sets repeat (per route and upstream), so
 * the form is cached under a cheap key of the labels in their given order: a request then pays for one
 * string join instead of a sort and three regular expressions per metric update.
 */
const keyCache = new Map<string, string>();
const KEY_CACHE_LIMIT = 10_000;

/** Keys of the label sets made by `labelSet`, found by identity. */
const setKeys = new WeakMap<Labels, string>();

/**
 * A label set to reuse across updates: frozen, its exposition key computed once, so an update with it
 * costs a WeakMap lookup (the gateway keeps one per route, upstream and outcome; with a fresh object per
 * update, label keys were about 7% of the gateway's CPU per request in bench/gateway-request-cost.ts).
 */
export function labelSet(labels: Labels): Readonly<Labels> {
  const set = Object.freeze({ ...labels });
  setKeys.set(set, labelKey(set));
  return set;
}

function labelKey(labels: Labels): string {
  const known = setKeys.get(labels);
  if (known !== undefined) return known;
  let raw = '';
  for (const k in labels) raw += `${k}\u0000${labels[k]}\u0001`;
  const cached = keyCache.get(raw);
  if (cached !== undefined) return cached;
  const keys = Object.keys(labels).sort();
  const key = keys.map((k) => `${k}="${escapeLabel(labels[k]!)}"`).join(',');
  if (keyCache.size >= KEY_CACHE_LIMIT) keyCache.clear();
  keyCache.set(raw, key);
  return key;
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

interface Metric {
  render(): string;
}

export class Counter implements Metric {
  readonly #values = new Map<string, number>();
  readonly name: string;
  readonly help: string;
  constructor(name: string, help: string) {
    this.name = name;
    this.help = help;
  }

  inc(labels: Labels = {}, by = 1): void {
    const key = labelKey(labels);
    this.#values.set(key, (this.#values.get(key) ?? 0) + by);
  }

  get(labels: Labels = {}): number {
    return this.#values.get(labelKey(labels)) ?? 0;
  }

  /** Mirrors a count kept elsewhere that only grows (the pool's picks and failures per replica). */
  set(labels: Labels, value: number): void {
    this.#values.set(labelKey(labels), value);
  }

  render(): string {
    let out = `# HELP ${this.name} ${this.help}\n# TYPE ${this.name} counter\n`;
    for (const [key, value] of this.#values) out += `${this.name}${key ? `{${key}}` : ''} ${value}\n`;
    return out;
  }
}

export class Gauge implements Metric {
  readonly #values = new Map<string, number>();
  readonly name: string;
  readonly help: string;
  constructor(name: string, help: string) {
    this.name = name;
    this.help = help;
  }

  add(labels: Labels, by: number): void {
    const key = labelKey(labels);
    this.#values.set(key, (this.#values.get(key) ?? 0) + by);
  }

  set(labels: Labels, value: number): void {
    this.#values.set(labelKey(labels), value);
  }

  get(labels: Labels = {}): number {
    return this.#values.get(labelKey(labels)) ?? 0;
  }

  render(): string {
    let out = `# HELP ${this.name} ${this.help}\n# TYPE ${this.name} gauge\n`;
    for (const [key, value] of this.#values) out += `${this.name}${key ? `{${key}}` : ''} ${value}\n`;
    return out;
  }
}

interface HistogramSeries {
  counts: number[];
  sum: number;
  count: number;
}

export class Histogram implements Metric {
  readonly #series = new Map<string, HistogramSeries>();
  readonly name: string;
  readonly help: string;
  readonly buckets: readonly number[];
  constructor(name: string, help: string, buckets: readonly number[]) {
    this.name = name;
    this.help = help;
    this.buckets = buckets;
  }

  observe(labels: Labels, value: number): void {
    this.#add(this.#seriesFor(labels), value);
  }

  /** Several observations of one series (the label key is computed once). */
  observeEach(labels: Labels, values: readonly number[], scale = 1): void {
    if (values.length === 0) return;
    const series = this.#seriesFor(labels);
    for (const value of values) this.#add(series, value * scale);
  }

  #seriesFor(labels: Labels): HistogramSeries {
    const key = labelKey(labels);
    let series = this.#series.get(key);
    if (series === undefined) {
      series = { counts: new Array<number>(this.buckets.length).fill(0), sum: 0, count: 0 };
      this.#series.set(key, series);
    }
    return series;
  }

  #add(series: HistogramSeries, value: number): void {
    const buckets = this.buckets;
    for (let i = 0; i < buckets.length; i++) if (value <= buckets[i]!) series.counts[i]! += 1;
    series.sum += value;
    series.count += 1;
  }

  count(labels: Labels = {}): number {
    return this.#series.get(labelKey(labels))?.count ?? 0;
  }

  render(): string {
    let out = `# HELP ${this.name} ${this.help}\n# TYPE ${this.name} histogram\n`;
    for (const [key, series] of this.#series) {
      const prefix = key ? `${key},` : '';
      this.buckets.forEach((bound, i) => {
        out += `${this.name}_bucket{${prefix}le="${bound}"} ${series.counts[i]}\n`;
      });
      out += `${this.name}_bucket{${prefix}le="+Inf"} ${series.count}\n`;
      out += `${this.name}_sum${key ? `{${key}}` : ''} ${series.sum}\n`;
      out += `${this.name}_count${key ? `{${key}}` : ''} ${series.count}\n`;
    }
    return out;
  }
}

export class Registry {
  readonly #metrics: Metric[] = [];

  register<T extends Metric>(metric: T): T {
    this.#metrics.push(metric);
    return metric;
  }

  render(): string {
    return this.#metrics.map((m) => m.render()).join('');
  }
}
