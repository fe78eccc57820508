/** Writes one NDJSON line. `stringify` picks the JSON writer (Go-style for Ollama). */
export function encodeNdjsonLine(
  value: unknown,
  stringify: (value: unknown) => string = JSON.stringify,
): string {
  return `${stringify(value)}\n`;
}
