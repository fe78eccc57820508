/**
 * Keys whose values llama-server stores as C++ doubles or floats. nlohmann's `dump` writes such a value
 * with a fraction even when it is whole (`480.0`, `0.0`), where JSON.stringify would write `480`.
 */
const DOUBLE_KEYS: ReadonlySet<string> = new Set([
  // `timings`
  'prompt_ms',
  'prompt_per_token_ms',
  'prompt_per_second',
  'predicted_ms',
  'predicted_per_token_ms',
  'predicted_per_second',
  // `generation_settings`
  'temperature',
  'dynatemp_range',
  'dynatemp_exponent',
  'top_p',
  'min_p',
  'xtc_probability',
  'xtc_threshold',
  'typical_p',
  'repeat_penalty',
  'presence_penalty',
  'frequency_penalty',
  'dry_multiplier',
  'dry_base',
  'mirostat_tau',
  'mirostat_eta',
  'speculative.p_min',
]);

/**
 * Serializes a value as llama-server's nlohmann `ordered_json::dump(-1)` does: compact, keys in insertion
 * order, raw UTF-8, the same string escapes as JSON.stringify, and whole doubles written with `.0` for
 * the keys llama-server keeps as doubles.
 */
export function llamacppJson(value: unknown, key?: string): string {
  if (typeof value === 'number') {
    if (key !== undefined && DOUBLE_KEYS.has(key) && Number.isInteger(value)) {
      return Object.is(value, -0) ? '-0.0' : `${value}.0`;
    }
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map((item) => llamacppJson(item)).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const parts: string[] = [];
    for (const [name, item] of Object.entries(value)) {
      if (item === undefined) continue;
      parts.push(`${JSON.stringify(name)}:${llamacppJson(item, name)}`);
    }
    return `{${parts.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
