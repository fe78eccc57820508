/**
 * Ollama's `created_at`: Go's `time.Time` JSON form, RFC 3339 with nanoseconds in UTC (`Z`), trailing
 * zeros of the fraction trimmed and the dot dropped when nothing is left (`time.RFC3339Nano`), e.g.
 * `2026-01-01T00:00:00.1186Z`, `2026-01-01T00:00:00Z` (wire-formats.md §6.1).
 *
 * `ms` is Unix milliseconds; a fraction of a millisecond (a high-resolution clock) becomes nanoseconds.
 */
export function ollamaCreatedAt(ms: number): string {
  let whole = Math.floor(ms);
  let subMillisecondNanos = Math.round((ms - whole) * 1e6);
  if (subMillisecondNanos >= 1e6) {
    whole += 1;
    subMillisecondNanos -= 1e6;
  }
  // Every chunk of an Ollama stream is stamped: the date-and-seconds part is formatted once per second.
  const second = Math.floor(whole / 1000);
  if (second !== cachedSecond) {
    cachedSecond = second;
    cachedPrefix = new Date(second * 1000).toISOString().slice(0, 19);
  }
  const nanos = (whole - second * 1000) * 1e6 + subMillisecondNanos;
  if (nanos === 0) return `${cachedPrefix}Z`;
  const digits = String(nanos).padStart(9, '0');
  let end = digits.length;
  while (digits.charCodeAt(end - 1) === 48) end -= 1; // trailing zeros of the fraction
  return `${cachedPrefix}.${digits.slice(0, end)}Z`;
}

let cachedSecond = Number.NaN;
let cachedPrefix = '';
