import type { Frame } from '../../src/wire/frame.ts';
import { SseDecoder } from '../../src/wire/sse-decoder.ts';

export interface RawSse {
  frames: Frame[];
  comments: string[];
  /** The body ended without an error. */
  ended: boolean;
}

/**
 * Reads an SSE response frame by frame (ids included), stopping when `stopAfter` returns true — then
 * cancels the body, as a client whose connection drops would.
 */
export async function readSse(response: Response, stopAfter?: (frames: Frame[]) => boolean): Promise<RawSse> {
  const frames: Frame[] = [];
  const comments: string[] = [];
  let stop = false;
  const decoder = new SseDecoder({
    onFrame: (frame) => {
      frames.push(frame);
      if (stopAfter?.(frames) === true) stop = true;
    },
    onComment: (text) => comments.push(text),
  });
  const reader = response.body!.getReader();
  let ended = false;
  try {
    for (;;) {
      const next = await reader.read();
      if (next.done) {
        ended = true;
        break;
      }
      decoder.feed(next.value);
      if (stop) {
        await reader.cancel();
        break;
      }
    }
  } catch {
    ended = false;
  }
  return { frames, comments, ended };
}
