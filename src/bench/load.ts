/**
 * How load is offered.
 * - `closed`: a fixed number of streams; each slot sends its next request as soon as its previous
 *   one ended (the intended send time is when the slot freed). `rampUpMs` staggers the slots' first
 *   requests over that time instead of sending them all at once.
 * - `open`: requests arrive on their own schedule whatever the server does: gamma-distributed gaps
 *   with mean `1 / rate` and shape `burstiness` (1 = Poisson). `rate` Infinity sends all at once.
 *   `maxConcurrency` caps the streams in flight; arrivals beyond it wait, and the wait counts.
 */
export type LoadSpec =
  | { kind: 'closed'; concurrency: number; rampUpMs?: number | undefined }
  | { kind: 'open'; rate: number; burstiness: number; maxConcurrency?: number | undefined };

/** A load as JSON (Infinity has no JSON form: written "inf"). */
export interface LoadJson {
  kind: 'closed' | 'open';
  concurrency?: number;
  rampUpMs?: number;
  rate?: number | 'inf';
  burstiness?: number | 'inf';
  maxConcurrency?: number;
}

export function loadJson(load: LoadSpec): LoadJson {
  if (load.kind === 'closed') {
    const out: LoadJson = { kind: 'closed', concurrency: load.concurrency };
    if (load.rampUpMs !== undefined && load.rampUpMs > 0) out.rampUpMs = load.rampUpMs;
    return out;
  }
  const inf = (n: number): number | 'inf' => (n === Number.POSITIVE_INFINITY ? 'inf' : n);
  const out: LoadJson = { kind: 'open', rate: inf(load.rate), burstiness: inf(load.burstiness) };
  if (load.maxConcurrency !== undefined) out.maxConcurrency = load.maxConcurrency;
  return out;
}

/** `concurrency 8`, `rate 10/s (Poisson)`, `rate 10/s (burstiness 0.5, max 32 in flight)`. */
export function describeLoad(load: LoadSpec): string {
  if (load.kind === 'closed') {
    const ramp = load.rampUpMs !== undefined && load.rampUpMs > 0 ? `, ramp-up ${load.rampUpMs / 1000}s` : '';
    return `concurrency ${load.concurrency}${ramp}`;
  }
  const rate = load.rate === Number.POSITIVE_INFINITY ? 'all at once' : `rate ${load.rate}/s`;
  const parts: string[] = [];
  if (load.rate !== Number.POSITIVE_INFINITY)
    parts.push(load.burstiness === 1 ? 'Poisson' : `burstiness ${load.burstiness}`);
  if (load.maxConcurrency !== undefined) parts.push(`max ${load.maxConcurrency} in flight`);
  return parts.length === 0 ? rate : `${rate} (${parts.join(', ')})`;
}
