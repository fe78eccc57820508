import { frameText } from '../dialects/frame-text.ts';
import { getDialect } from '../dialects/registry.ts';
import { formatEventId, type ResumeSubscription } from './resume-store.ts';

/**
 * The body of a resumed stream: `retry:`, the stored events after the client's last id, the live rest,
 * and — when nobody wrote the stream's ending (its client left and the upstream was stopped, or its
 * producer is gone) — an honest error ending in the stream's own dialect, never a clean finish.
 */
export function resumedBody(
  subscription: ResumeSubscription,
  streamId: string,
  afterSeq: number,
  retryMs: number,
  onEnd: () => void,
): ReadableStream<Uint8Array> {
  const meta = subscription.meta;
  const encoded = new TextEncoder();
  // Stored frames are payloads: framed here as the stream's own encoder frames them.
  const encoder = getDialect(meta.dialect).createEncoder({ flavor: meta.flavor, model: meta.model });
  let lastSeq = afterSeq;
  return new ReadableStream<Uint8Array>({
    async start(controller) {
      controller.enqueue(encoded.encode(`retry: ${retryMs}\n\n`));
      try {
        for await (const frame of subscription.frames) {
          lastSeq = frame.seq;
          controller.enqueue(
            encoded.encode(frameText(encoder, frame.data, frame.kind, formatEventId(streamId, frame.seq))),
          );
        }
        const status = subscription.status();
        if (status === 'cancelled' || status === 'lost' || status === 'live') {
          encoder.error(
            {
              message:
                status === 'cancelled'
                  ? 'the stream was cancelled when its client disconnected; it cannot be finished'
                  : 'the stream stopped before it finished (its producer is gone)',
              status: 502,
            },
            (data, kind) => {
              lastSeq += 1;
              controller.enqueue(
                encoded.encode(frameText(encoder, data, kind, formatEventId(streamId, lastSeq))),
              );
            },
          );
        }
        controller.close();
      } catch (error) {
        controller.error(error);
      }
      onEnd();
    },
  });
}
