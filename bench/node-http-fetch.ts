/**
 * An experiment for the gateway bench, not a product: a `fetch` for `Upstream.fetch` built on node:http
 * (keep-alive Agent) instead of undici, to measure how much of the gateway's cost is undici's fetch.
 * `BENCH_UPSTREAM_FETCH=node node .build/bench/gateway-overhead.js ...` makes the gateway process use it.
 * It streams the response body through one ReadableStream with backpressure (pause/resume).
 */
import http from 'node:http';

export function nodeHttpFetch(): (request: Request) => Promise<Response> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY, timeout: 4000 });
  return async (request) => {
    const url = new URL(request.url);
    const body = request.body === null ? undefined : new Uint8Array(await request.arrayBuffer());
    const headers: Record<string, string> = {};
    request.headers.forEach((value, key) => {
      headers[key] = value;
    });
    if (body !== undefined) headers['content-length'] = String(body.length);
    return new Promise<Response>((resolve, reject) => {
      const upstream = http.request(
        {
          host: url.hostname,
          port: url.port,
          path: `${url.pathname}${url.search}`,
          method: request.method,
          headers,
          agent,
        },
        (res) => {
          const stream = new ReadableStream<Uint8Array>({
            start(controller) {
              res.on('data', (chunk: Buffer) => {
                controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.length));
                if ((controller.desiredSize ?? 1) <= 0) res.pause();
              });
              res.on('end', () => controller.close());
              res.on('error', (error) => controller.error(error));
            },
            pull() {
              res.resume();
            },
            cancel() {
              upstream.destroy();
            },
          });
          const responseHeaders = new Headers();
          for (let i = 0; i < res.rawHeaders.length; i += 2)
            responseHeaders.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
          resolve(new Response(stream, { status: res.statusCode ?? 502, headers: responseHeaders }));
        },
      );
      upstream.on('socket', (socket) => socket.setNoDelay(true));
      upstream.on('error', reject);
      request.signal.addEventListener('abort', () => upstream.destroy(new Error('aborted')), { once: true });
      upstream.end(body);
    });
  };
}
