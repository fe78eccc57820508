/** Small statistics for bench figures. Inputs need not be sorted; empty inputs give NaN. */

export function sorted(values: readonly number[]): number[] {
  return [...values].sort((a, b) => a - b);
}

/** The q-quantile (0..1) by linear interpolation between closest ranks. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const s = sorted(values);
  const at = (s.length - 1) * q;
  const lo = Math.floor(at);
  const hi = Math.ceil(at);
  return s[lo]! + (s[hi]! - s[lo]!) * (at - lo);
}

export function median(values: readonly number[]): number {
  return quantile(values, 0.5);
}

export function min(values: readonly number[]): number {
  return values.length === 0 ? Number.NaN : Math.min(...values);
}

export function max(values: readonly number[]): number {
  return values.length === 0 ? Number.NaN : Math.max(...values);
}

/** A figure with its spread: `median (min–max)`. */
export interface Spread {
  median: number;
  min: number;
  max: number;
}

export function spread(values: readonly number[]): Spread {
  return { median: median(values), min: min(values), max: max(values) };
}

/** Formats a number with a sensible number of digits for a table. */
export function fmt(value: number, digits = 2): string {
  if (!Number.isFinite(value)) return '–';
  const abs = Math.abs(value);
  if (abs >= 1000) return Math.round(value).toLocaleString('en-US');
  if (abs >= 100) return value.toFixed(Math.max(0, digits - 2));
  if (abs >= 10) return value.toFixed(Math.max(0, digits - 1));
  return value.toFixed(digits);
}

export function fmtSpread(s: Spread, digits = 2, unit = ''): string {
  return `${fmt(s.median, digits)}${unit} (${fmt(s.min, digits)}–${fmt(s.max, digits)})`;
}
