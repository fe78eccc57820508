import type { Framing } from '../dialects/dialect.ts';

/**
 * What the first bytes of a body say about its framing: `{` or `[` starts NDJSON; `data:`, `:`,
 * `event:`, `id:`, `retry:` start SSE. Returns undefined while there are too few bytes to tell.
 */
export function sniffFraming(bytes: Uint8Array): Framing | 'unknown' | undefined {
  let i = 0;
  // Skip a BOM and whitespace.
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) i = 3;
  while (
    i < bytes.length &&
    (bytes[i] === 0x20 || bytes[i] === 0x0a || bytes[i] === 0x0d || bytes[i] === 0x09)
  )
    i++;
  if (i >= bytes.length) return undefined;
  const first = bytes[i];
  if (first === 0x7b || first === 0x5b) return 'ndjson';
  if (first === 0x3a) return 'sse';
  // `data:`, the usual first line, without building a string.
  if (
    first === 0x64 &&
    bytes[i + 1] === 0x61 &&
    bytes[i + 2] === 0x74 &&
    bytes[i + 3] === 0x61 &&
    bytes[i + 4] === 0x3a
  )
    return 'sse';
  const head = String.fromCharCode(...bytes.subarray(i, i + 6));
  for (const field of ['data:', 'event:', 'id:', 'retry:', 'error:']) {
    if (head.startsWith(field)) return 'sse';
    if (field.startsWith(head)) return undefined;
  }
  return 'unknown';
}

/** The framing a Content-Type announces, if any. */
export function framingOfContentType(contentType: string | null): Framing | undefined {
  if (contentType === null) return undefined;
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  if (type === 'text/event-stream') return 'sse';
  if (type === 'application/x-ndjson' || type === 'application/ndjson' || type === 'application/jsonl')
    return 'ndjson';
  return undefined;
}

export function describeFraming(framing: Framing): string {
  return framing === 'sse' ? 'SSE (text/event-stream)' : 'NDJSON (application/x-ndjson)';
}
