import { frameText } from '../../dialects/frame-text.ts';
import { getDialect } from '../../dialects/registry.ts';
import { encodeSseComment } from '../../wire/sse-encoder.ts';
import { formatEventId, type ResumeSubscription } from './resume-store.ts';

/**
 * How many bytes a resumed stream's body queues ahead of its reader: frames are pulled
 * from the store only as the reader takes them, so a follower that stops reading holds about this much
 * in the gateway (plus one frame, and what its socket took), never the live stream. The rest waits in
 * the store, read when the reader drains; a reader that falls behind what the store keeps ends with
 * the "resume data lost" error (a resume from its last id then gets the 410 of frames gone).
 */
export const FOLLOWER_QUEUE_BYTES = 64 * 1024;

/**
 * Every open resumed body's controller, for `followerQueuedBytes()`: weakly, so a body nobody reads
 * nor cancels is not kept by this account.
 */
const openBodies = new Set<WeakRef<ReadableStreamDefaultController<Uint8Array>>>();

/**
 * Bytes queued, unread, in every open resumed stream body together (followers of `Last-Event-ID` and
 * of the Responses cursor): the gateway's own account of what its followers hold, at most about
 * `FOLLOWER_QUEUE_BYTES` plus a frame each.
 */
export function followerQueuedBytes(): number {
  let total = 0;
  for (const ref of openBodies) {
    const controller = ref.deref();
    if (controller === undefined) {
      openBodies.delete(ref);
      continue;
    }
    total +=
      FOLLOWER_QUEUE_BYTES - Math.min(FOLLOWER_QUEUE_BYTES, controller.desiredSize ?? FOLLOWER_QUEUE_BYTES);
  }
  return total;
}

/**
 * The body of a resumed stream: `retry:`, the stored events after the client's last id, the live rest,
 * and — when nobody wrote the stream's ending (its client left and the upstream was stopped, or its
 * producer is gone) — an honest error ending in the stream's own dialect, never a clean finish.
 *
 * Sequence numbers must follow on from the client's id one by one: a store that lost frames (Redis
 * restarted from an older snapshot, or trimmed a slow reader's frames) ends the stream with the
 * dialect's error ("resume data lost") instead of passing on an answer with a hole in it. While the
 * stream is silent (an upstream stall), a keepalive comment goes out every `keepaliveMs` (0: none), as
 * on a direct stream. Frames are pulled from the store as the reader reads (`FOLLOWER_QUEUE_BYTES`).
 */
export function resumedBody(
  subscription: ResumeSubscription,
  streamId: string,
  afterSeq: number,
  retryMs: number,
  onEnd: () => void,
  keepaliveMs = 0,
): ReadableStream<Uint8Array> {
  const meta = subscription.meta;
  const encoded = new TextEncoder();
  // Stored frames are payloads: framed here as the stream's own encoder frames them.
  const dialect = getDialect(meta.dialect);
  const framing = dialect.createEncoder({ flavor: meta.flavor, model: meta.model });
  const frames = subscription.frames[Symbol.asyncIterator]();
  let lastPayload: string | undefined;
  let lastSeq = afterSeq;
  let lastWriteAt = Date.now();
  let ticker: ReturnType<typeof setInterval> | undefined;
  let body: ReadableStreamDefaultController<Uint8Array> | undefined;
  let account: WeakRef<ReadableStreamDefaultController<Uint8Array>> | undefined;
  let finished = false;
  /** Once, however the body ends (read to its end, failed, or cancelled by its reader). */
  const finish = () => {
    if (finished) return;
    finished = true;
    if (ticker !== undefined) clearInterval(ticker);
    ticker = undefined;
    if (account !== undefined) openBodies.delete(account);
    onEnd();
  };
  const write = (text: string) => {
    lastWriteAt = Date.now();
    body!.enqueue(encoded.encode(text));
  };
  // Numbered on from the stream's last event, or (`numbered` false) with no id at all.
  const fail = (message: string, numbered: boolean) => {
    const encoder = dialect.createEncoder({
      flavor: meta.flavor,
      model: meta.model,
      continuesAfter: lastPayload,
    });
    // The stream began long ago: an encoder that writes its opening before an error (the Responses
    // `response.created`, a second one with another id) must not write it again.
    encoder.event({ type: 'start' }, () => {});
    encoder.error({ message, status: 502 }, (data, kind) => {
      if (numbered) lastSeq += 1;
      write(frameText(encoder, data, kind, numbered ? formatEventId(streamId, lastSeq) : undefined));
    });
  };
  /** The frames ran out (or one was missing): the honest ending when nobody wrote one. */
  const end = (missing: number | undefined) => {
    const status = subscription.status();
    // The producer's own count of what it wrote (Redis keeps it with the ending): fewer read is a loss.
    const endSeq = status === 'complete' || status === 'failed' ? subscription.endSeq?.() : undefined;
    if (missing === undefined && endSeq !== undefined && endSeq > lastSeq) missing = lastSeq + 1;
    if (missing !== undefined) {
      // No id: the error is not one of the stream's events (a reconnect after it meets the same gap).
      fail(
        `resume data lost: event ${missing} of the stream is missing from the resume store (it restarted, or dropped it: a reader further behind than the store keeps); the stream cannot be finished`,
        false,
      );
    } else if (status === 'cancelled' || status === 'lost' || status === 'live') {
      fail(
        status === 'cancelled'
          ? 'the stream was cancelled when its client disconnected; it cannot be finished'
          : `the stream stopped before it finished (${subscription.lostReason?.() ?? 'its producer is gone'})`,
        true,
      );
    }
    body!.close();
    finish();
  };
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        body = controller;
        account = new WeakRef(controller);
        openBodies.add(account);
        write(`retry: ${retryMs}\n\n`);
        if (keepaliveMs > 0) {
          ticker = setInterval(
            () => {
              // A reader that has not taken what is queued needs no keepalive (nor a growing queue).
              if (Date.now() - lastWriteAt < keepaliveMs || (controller.desiredSize ?? 0) <= 0) return;
              try {
                write(encodeSseComment());
              } catch {
                finish(); // the body is closed or cancelled
              }
            },
            Math.min(1000, Math.max(10, keepaliveMs / 4)),
          );
          (ticker as { unref?: () => void }).unref?.();
        }
      },
      // Called while the queue is below its mark: frames until it is full again (or the stream ends).
      async pull(controller) {
        try {
          do {
            const next = await frames.next();
            if (finished) return; // cancelled meanwhile
            if (next.done === true) return end(undefined);
            const frame = next.value;
            if (frame.seq !== lastSeq + 1) {
              frames.return?.(undefined).catch(() => {});
              return end(lastSeq + 1);
            }
            lastSeq = frame.seq;
            lastPayload = frame.data;
            write(frameText(framing, frame.data, frame.kind, formatEventId(streamId, frame.seq)));
          } while ((controller.desiredSize ?? 0) > 0);
        } catch (error) {
          if (finished) return;
          finish();
          controller.error(error);
        }
      },
      cancel() {
        finish();
        // The store's reader lets go (a waiting one when its request's signal fires, or its next frame).
        frames.return?.(undefined).catch(() => {});
      },
    },
    { highWaterMark: FOLLOWER_QUEUE_BYTES, size: (chunk) => chunk.byteLength },
  );
}
