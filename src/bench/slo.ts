/** Metrics a service-level objective can bound (per request, all in ms). */
export type SloMetric = 'ttft' | 'ttfb' | 'tpot' | 'e2e';

/** Upper bounds per request: a request is "good" when it completed and met every one. */
export type Slo = Partial<Record<SloMetric, number>>;

const ALIASES: Record<string, SloMetric> = {
  ttft: 'ttft',
  ttfb: 'ttfb',
  tpot: 'tpot',
  e2e: 'e2e',
  e2el: 'e2e',
  latency: 'e2e',
};

/**
 * Parses `ttft=500ms,tpot=50ms` (units ms or s, default ms; `e2el` is vLLM's name for `e2e`).
 * Throws a RangeError naming the bad part.
 */
export function parseSlo(spec: string): Slo {
  const slo: Slo = {};
  for (const part of spec.split(',')) {
    const item = part.trim();
    if (item === '') continue;
    const match = /^([a-z0-9]+)\s*[=:<]\s*([0-9]*\.?[0-9]+)\s*(ms|s)?$/i.exec(item);
    const metric = match === null ? undefined : ALIASES[match[1]!.toLowerCase()];
    if (match === null || metric === undefined) {
      throw new RangeError(
        `bad SLO ${JSON.stringify(item)}: want metric=value with a metric among ttft, ttfb, tpot, e2e and a unit ms or s (e.g. ttft=500ms)`,
      );
    }
    const value = Number(match[2]) * (match[3]?.toLowerCase() === 's' ? 1000 : 1);
    slo[metric] = value;
  }
  if (Object.keys(slo).length === 0) throw new RangeError('an empty SLO: give e.g. ttft=500ms,tpot=50ms');
  return slo;
}

/** `ttft<=500ms, tpot<=50ms`. */
export function formatSlo(slo: Slo): string {
  return Object.entries(slo)
    .map(([metric, value]) => `${metric}<=${value}ms`)
    .join(', ');
}

/** The per-request values an SLO is checked against (undefined: not measured, which fails the SLO). */
export interface SloSample {
  ok: boolean;
  ttftMs?: number | undefined;
  ttfbMs?: number | undefined;
  tpotMs?: number | undefined;
  e2eMs?: number | undefined;
}

/**
 * True when the request completed and met every bound. A request with one output token has no TPOT
 * and passes a TPOT bound (as in vLLM, which counts its TPOT as 0); any other missing value fails.
 */
export function meetsSlo(sample: SloSample, slo: Slo): boolean {
  if (!sample.ok) return false;
  if (slo.ttft !== undefined && !(sample.ttftMs !== undefined && sample.ttftMs <= slo.ttft)) return false;
  if (slo.ttfb !== undefined && !(sample.ttfbMs !== undefined && sample.ttfbMs <= slo.ttfb)) return false;
  if (slo.e2e !== undefined && !(sample.e2eMs !== undefined && sample.e2eMs <= slo.e2e)) return false;
  if (slo.tpot !== undefined && sample.tpotMs !== undefined && !(sample.tpotMs <= slo.tpot)) return false;
  return true;
}
