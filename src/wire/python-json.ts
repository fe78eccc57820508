/**
 * JSON as Python's `json.dumps` writes it with default arguments (vLLM's mid-stream error events):
 * `", "` and `": "` separators and `ensure_ascii`, so every non-ASCII character is a `\uXXXX` escape.
 * Supports the values error bodies hold: objects, arrays, strings, integers, booleans and null.
 */
export function pythonJsonDumps(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'string') return asciiString(value);
  if (typeof value === 'number' || typeof value === 'boolean') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(pythonJsonDumps).join(', ')}]`;
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    return `{${entries.map(([k, v]) => `${asciiString(k)}: ${pythonJsonDumps(v)}`).join(', ')}}`;
  }
  return 'null';
}

function asciiString(text: string): string {
  return JSON.stringify(text).replace(
    /[\u007f-\uffff]/g,
    (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
