/** An Ollama /api/chat body for client tests: its lines, cut into reads, served one read per pull. */
export const URL_CHAT = 'http://local.invalid/api/chat';
export const BODY = { model: 'm', messages: [] };
const encoder = new TextEncoder();

/** One /api/chat line with this content; the final one (`done`) ends with `done_reason: stop`. */
export function line(content: string, done = false): string {
  const tail = done ? ',"done":true,"done_reason":"stop"' : ',"done":false';
  return `{"model":"m","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":${JSON.stringify(content)}}${tail}}\n`;
}

/** An Ollama /api/chat body: the given pieces, then the final line, cut into reads at `cuts`. */
export function bodyOf(pieces: readonly string[], cuts: readonly number[] = [], finish = true): Uint8Array[] {
  const bytes = encoder.encode(pieces.map((p) => line(p)).join('') + (finish ? line('', true) : ''));
  const points = [...new Set(cuts.map((c) => Math.max(0, Math.min(bytes.length, c))))].sort((a, b) => a - b);
  const reads: Uint8Array[] = [];
  let previous = 0;
  for (const point of [...points, bytes.length]) {
    if (point > previous) reads.push(bytes.slice(previous, point));
    previous = point;
  }
  return reads;
}

export interface Source {
  fetch: () => Promise<Response>;
  /** Reads pulled so far. */
  pulls: () => number;
  cancelled: () => boolean;
}

/** A fetch answering with these reads (one per pull); `fail` errors the body after them, else it closes. */
export function sourceOf(reads: readonly Uint8Array[], fail?: Error): Source {
  let pulls = 0;
  let cancelled = false;
  const fetch = async () =>
    new Response(
      new ReadableStream<Uint8Array>(
        {
          pull(controller) {
            if (pulls === reads.length) {
              if (fail !== undefined) controller.error(fail);
              else controller.close();
              return;
            }
            controller.enqueue(reads[pulls]!);
            pulls += 1;
          },
          cancel() {
            cancelled = true;
          },
        },
        { highWaterMark: 0 },
      ),
      { headers: { 'content-type': 'application/x-ndjson' } },
    );
  return { fetch, pulls: () => pulls, cancelled: () => cancelled };
}
