/** Splits bytes at the given offsets (sorted, deduplicated, clamped). */
export function splitAt(bytes: Uint8Array, cuts: readonly number[]): Uint8Array[] {
  const points = [...new Set(cuts.map((c) => Math.max(0, Math.min(bytes.length, c))))].sort((a, b) => a - b);
  const out: Uint8Array[] = [];
  let previous = 0;
  for (const point of points) {
    if (point > previous) out.push(bytes.slice(previous, point));
    previous = point;
  }
  if (previous < bytes.length) out.push(bytes.slice(previous));
  return out;
}

/** One chunk per byte. */
export function bytewise(bytes: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i++) out.push(bytes.slice(i, i + 1));
  return out;
}

export const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text);
