import { concatBytes } from '../wire/concat-bytes.ts';
import { type PushSource, pushSourceOf } from './push-source.ts';

/** Reads at most `limit` bytes of a body as text, then lets the rest go. */
export async function readBounded(response: Response, limit: number): Promise<string> {
  const push = pushSourceOf(response);
  if (push !== undefined) return readPushedBounded(push, limit);
  if (response.body === null) return '';
  const reader = response.body.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < limit) {
      const { done, value } = await reader.read();
      if (done) break;
      parts.push(value);
      size += value.length;
    }
  } catch {
    // A body that fails mid-read still gives what arrived.
  } finally {
    reader.cancel().catch(() => {});
  }
  return boundedText(parts, limit);
}

/** Up to `limit` bytes of a pushed body, as text; the rest is cancelled. */
function readPushedBounded(source: PushSource, limit: number): Promise<string> {
  return new Promise((resolve) => {
    const parts: Uint8Array[] = [];
    let size = 0;
    let settled = false;
    const done = () => {
      if (settled) return;
      settled = true;
      resolve(boundedText(parts, limit));
    };
    const subscription = source.subscribe({
      chunk: (bytes) => {
        if (settled) return;
        parts.push(bytes.slice());
        size += bytes.length;
        if (size >= limit) {
          subscription.cancel();
          done();
        }
      },
      end: done,
      // A body that fails mid-read still gives what arrived.
      error: done,
    });
  });
}

/** The first `limit` bytes of `parts`, as text. */
function boundedText(parts: readonly Uint8Array[], limit: number): string {
  let all = concatBytes(...parts);
  if (all.length > limit) all = all.subarray(0, limit);
  return new TextDecoder().decode(all);
}
