import { frameText } from '../dialects/frame-text.ts';
import { getDialect } from '../dialects/registry.ts';
import { encodeSseComment } from '../wire/sse-encoder.ts';
import { formatEventId, type ResumeSubscription } from './resume-store.ts';

/**
 * The body of a resumed stream: `retry:`, the stored events after the client's last id, the live rest,
 * and — when nobody wrote the stream's ending (its client left and the upstream was stopped, or its
 * producer is gone) — an honest error ending in the stream's own dialect, never a clean finish.
 *
 * Sequence numbers must follow on from the client's id one by one: a store that lost frames (Redis
 * restarted from an older snapshot, or trimmed a slow reader's frames) ends the stream with the
 * dialect's error ("resume data lost") instead of passing on an answer with a hole in it. While the
 * stream is silent (an upstream stall), a keepalive comment goes out every `keepaliveMs` (0: none), as
 * on a direct stream.
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
  let lastPayload: string | undefined;
  let lastSeq = afterSeq;
  let lastWriteAt = Date.now();
  let ticker: ReturnType<typeof setInterval> | undefined;
  const stopTicker = () => {
    if (ticker !== undefined) clearInterval(ticker);
    ticker = undefined;
  };
  return new ReadableStream<Uint8Array>({
    async start(controller) {
      const write = (text: string) => {
        lastWriteAt = Date.now();
        controller.enqueue(encoded.encode(text));
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
      write(`retry: ${retryMs}\n\n`);
      if (keepaliveMs > 0) {
        ticker = setInterval(
          () => {
            if (Date.now() - lastWriteAt < keepaliveMs) return;
            try {
              write(encodeSseComment());
            } catch {
              stopTicker(); // the body is closed or cancelled
            }
          },
          Math.min(1000, Math.max(10, keepaliveMs / 4)),
        );
        (ticker as { unref?: () => void }).unref?.();
      }
      try {
        let missing: number | undefined;
        for await (const frame of subscription.frames) {
          if (frame.seq !== lastSeq + 1) {
            missing = lastSeq + 1;
            break;
          }
          lastSeq = frame.seq;
          lastPayload = frame.data;
          write(frameText(framing, frame.data, frame.kind, formatEventId(streamId, frame.seq)));
        }
        const status = subscription.status();
        // The producer's own count of what it wrote (Redis keeps it with the ending): fewer read is a loss.
        const endSeq = status === 'complete' || status === 'failed' ? subscription.endSeq?.() : undefined;
        if (missing === undefined && endSeq !== undefined && endSeq > lastSeq) missing = lastSeq + 1;
        if (missing !== undefined) {
          // No id: the error is not one of the stream's events (a reconnect after it meets the same gap).
          fail(
            `resume data lost: event ${missing} of the stream is missing from the resume store (it restarted or dropped it); the stream cannot be finished`,
            false,
          );
        } else if (status === 'cancelled' || status === 'lost' || status === 'live') {
          fail(
            status === 'cancelled'
              ? 'the stream was cancelled when its client disconnected; it cannot be finished'
              : 'the stream stopped before it finished (its producer is gone)',
            true,
          );
        }
        stopTicker();
        controller.close();
      } catch (error) {
        stopTicker();
        try {
          controller.error(error);
        } catch {
          // already cancelled
        }
      }
      onEnd();
    },
    cancel() {
      stopTicker();
    },
  });
}
