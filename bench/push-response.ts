import { PUSH_SOURCE, type PushSink } from '../src/client/push-source.ts';

/**
 * An upstream's answer as createUndiciFetch gives it to the gateway: with `pushOnly` no body stream and
 * the push source on the Response, else a ReadableStream carrying the source. The body is written a
 * microtask after the gateway subscribes; `onChunk` is called just before.
 */
export function pushResponse(body: Uint8Array, pushOnly: boolean, onChunk?: () => void): Response {
  const source = {
    subscribe(sink: PushSink) {
      queueMicrotask(() => {
        onChunk?.();
        sink.chunk(body);
        sink.end();
      });
      return { pause() {}, resume() {}, cancel() {} };
    },
  };
  const headers: [string, string][] = [['content-type', 'text/event-stream']];
  if (pushOnly) {
    const response = new Response(null, { headers });
    (response as unknown as Record<symbol, unknown>)[PUSH_SOURCE] = source;
    return response;
  }
  const stream = new ReadableStream<Uint8Array>({}, { highWaterMark: 0 });
  (stream as unknown as Record<symbol, unknown>)[PUSH_SOURCE] = source;
  return new Response(stream, { headers });
}
