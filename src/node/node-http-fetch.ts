import { Agent, request as httpRequest, type IncomingMessage } from 'node:http';
import {
  FETCH_TAKES_INIT,
  PUSH_ONLY,
  PUSH_SOURCE,
  type PushSink,
  type PushSource,
  type PushSubscription,
} from '../client/push-source.ts';
import { LightHeaders, lightResponse } from '../server/light-headers.ts';

export interface NodeHttpFetchOptions {
  /** Connections kept open per upstream host. Default: no limit (a gateway relays many streams at once). */
  maxSockets?: number | undefined;
  /**
   * After a stream's terminal event, how long the rest of its body (the chunked trailer) is drained so
   * the connection can serve the next request; a server that never ends the body is then cut. Default 2000.
   */
  finishDrainMs?: number | undefined;
}

/**
 * A fetch for plain-HTTP upstreams built on node:http with keep-alive, for the gateway's hot path: the
 * response body is a standard ReadableStream, and also a push source (see client/push-source.ts) that
 * the client reads by events — no undici machinery and no promise per chunk. Measured in
 * bench/RESULTS.md against undici's fetch. `https:` URLs fall back to the global fetch.
 */
export function createNodeHttpFetch(
  options: NodeHttpFetchOptions = {},
): (request: Request) => Promise<Response> {
  const finishDrainMs = options.finishDrainMs ?? 2000;
  const agent = new Agent({
    keepAlive: true,
    maxSockets: options.maxSockets ?? Number.POSITIVE_INFINITY,
    scheduling: 'lifo',
  });
  const nodeFetch = async (input: Request | string | URL, init?: RequestInit): Promise<Response> => {
    const request = typeof input === 'string' || input instanceof URL ? undefined : input;
    const href = request?.url ?? String(input);
    const url = parsedUrl(href);
    if (url === undefined) return request !== undefined ? fetch(request) : fetch(href, init);
    let body: string | Uint8Array | undefined;
    const headers: Record<string, string> = {};
    let method: string;
    let signal: AbortSignal | undefined;
    let pushOnly = false;
    if (request !== undefined) {
      body = request.body === null ? undefined : await request.text();
      request.headers.forEach((value, key) => {
        headers[key] = value;
      });
      method = request.method;
      signal = request.signal;
    } else {
      body = bodyOf(init?.body);
      const given = init?.headers;
      if (given !== undefined && given !== null && !Array.isArray(given) && !(given instanceof Headers)) {
        // The client passes a plain object: no Headers round trip.
        for (const [key, value] of Object.entries(given)) headers[key.toLowerCase()] = String(value);
      } else {
        new Headers(given).forEach((value, key) => {
          headers[key] = value;
        });
      }
      method = init?.method ?? 'GET';
      signal = init?.signal ?? undefined;
      pushOnly = (init as Record<symbol, unknown> | undefined)?.[PUSH_ONLY] === true;
    }
    // A string body goes as bytes: node:http then writes its header block as a chunk of its own, which
    // flattens it, instead of joining it to the body, which left the header a tree of concatenated
    // strings held by the request to its end (about 1 KiB per open stream in a heap snapshot).
    let payload: Uint8Array | undefined = typeof body === 'string' ? Buffer.from(body) : body;
    if (payload !== undefined) headers['content-length'] = String(payload.length);
    if (signal?.aborted === true) throw abortError(signal);
    return new Promise<Response>((resolve, reject) => {
      // The request's listeners outlive the promise: they reach it only through `pending`, dropped once
      // it settles, so an open stream does not hold its fetch promise and the Response it resolved with.
      let pending: { resolve: (response: Response) => void; reject: (error: unknown) => void } | undefined = {
        resolve,
        reject,
      };
      const settle = () => {
        const settled = pending;
        pending = undefined;
        return settled;
      };
      const fail = (error: unknown) => settle()?.reject(error);
      const outgoing = httpRequest(
        {
          host: url.host,
          port: url.port,
          path: url.path,
          method,
          headers,
          agent,
        },
        (incoming) => {
          const status = incoming.statusCode ?? 502;
          const statusText = incoming.statusMessage ?? '';
          const nullBody = status === 204 || status === 304 || method === 'HEAD';
          if (nullBody) incoming.resume();
          const destroy = () => outgoing.destroy();
          if (pushOnly && !nullBody && status >= 200 && status < 300) {
            // A caller that reads by events only (PUSH_ONLY: tokenwire's client) gets a stand-in for a
            // good answer: no ReadableStream, no undici Response or Headers (see push-source.ts).
            let claimed = false;
            const source = pushSource(incoming, destroy, finishDrainMs, () => {
              if (claimed) return false;
              claimed = true;
              return true;
            });
            const headers = LightHeaders.fromRaw(incoming.rawHeaders);
            settle()?.resolve(lightResponse({ status, statusText, headers, url: href }, PUSH_SOURCE, source));
            return;
          }
          const responseHeaders: [string, string][] = [];
          const rawHeaders = incoming.rawHeaders;
          for (let i = 0; i < rawHeaders.length; i += 2)
            responseHeaders.push([rawHeaders[i]!, rawHeaders[i + 1]!]);
          const response = new Response(nullBody ? null : pushableBody(incoming, destroy, finishDrainMs), {
            status,
            statusText,
            headers: responseHeaders,
          });
          settle()?.resolve(response);
        },
      );
      if (signal !== undefined) {
        const onAbort = () => {
          const error = abortError(signal);
          outgoing.destroy(error);
          fail(error);
        };
        signal.addEventListener('abort', onAbort, { once: true });
        outgoing.on('close', () => signal.removeEventListener('abort', onAbort));
      }
      outgoing.on('socket', (socket) => socket.setNoDelay(true));
      outgoing.on('error', fail);
      outgoing.end(payload);
      // Sent (or queued on the request): this scope outlives the request and need not hold the bytes.
      payload = undefined;
    });
  };
  (nodeFetch as unknown as Record<symbol, unknown>)[FETCH_TAKES_INIT] = true;
  return nodeFetch as (request: Request) => Promise<Response>;
}

interface HttpTarget {
  host: string;
  port: string;
  path: string;
}

/**
 * The parts of an `http:` URL a request needs (undefined for any other scheme), parsed once per URL: a
 * gateway calls the same few upstream URLs all day, and `new URL` is on the path to its first token.
 */
const parsedUrls = new Map<string, HttpTarget | undefined>();
const PARSED_URLS_MAX = 256;

function parsedUrl(href: string): HttpTarget | undefined {
  if (parsedUrls.has(href)) return parsedUrls.get(href);
  const url = new URL(href);
  const target =
    url.protocol === 'http:'
      ? { host: url.hostname, port: url.port, path: `${url.pathname}${url.search}` }
      : undefined;
  if (parsedUrls.size >= PARSED_URLS_MAX) parsedUrls.clear();
  parsedUrls.set(href, target);
  return target;
}

function bodyOf(body: RequestInit['body']): string | Uint8Array | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string' || body instanceof Uint8Array) return body;
  throw new TypeError('createNodeHttpFetch: only string and Uint8Array request bodies are supported');
}

/**
 * The body of one upstream response: a ReadableStream (high-water mark 0, so nothing is pulled until
 * someone reads it) carrying a push source. Whichever consumer comes first owns the bytes.
 */
function pushableBody(
  incoming: IncomingMessage,
  destroy: () => void,
  finishDrainMs: number,
): ReadableStream<Uint8Array> {
  let owner: 'stream' | 'push' | undefined;
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (owner === 'push') return;
        if (owner === undefined) {
          owner = 'stream';
          incoming.on('data', (chunk: Buffer) => {
            controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.length));
            if ((controller.desiredSize ?? 1) <= 0) incoming.pause();
          });
          incoming.on('end', () => controller.close());
          incoming.on('error', (error) => controller.error(error));
          incoming.on('aborted', () =>
            controller.error(new Error('the upstream connection closed mid-body')),
          );
        }
        incoming.resume();
      },
      cancel() {
        destroy();
      },
    },
    { highWaterMark: 0 },
  );
  const source = pushSource(incoming, destroy, finishDrainMs, () => {
    if (owner !== undefined) return false;
    owner = 'push';
    return true;
  });
  (stream as unknown as Record<symbol, unknown>)[PUSH_SOURCE] = source;
  return stream;
}

/**
 * Reading one upstream body by events. `claim` says whether this reader may have the bytes (false when
 * the ReadableStream beside it was read first, or the source was subscribed already).
 */
function pushSource(
  incoming: IncomingMessage,
  destroy: () => void,
  finishDrainMs: number,
  claim: () => boolean,
): PushSource {
  return {
    subscribe(sink: PushSink): PushSubscription {
      if (!claim()) throw new TypeError('this body is already being read');
      let done = false;
      incoming.on('data', (chunk: Buffer) => {
        if (!done) sink.chunk(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.length));
      });
      incoming.on('end', () => {
        if (done) return;
        done = true;
        sink.end();
      });
      // A connection cut mid-body: node:http emits 'aborted' (and 'error' on newer Nodes); report it once.
      const failed = (error: unknown) => {
        if (done) return;
        done = true;
        sink.error(error);
      };
      incoming.on('error', failed);
      incoming.on('aborted', () => failed(new Error('the upstream connection closed mid-body')));
      incoming.on('close', () => {
        if (!incoming.complete) failed(new Error('the upstream connection closed mid-body'));
      });
      return {
        pause: () => incoming.pause(),
        resume: () => incoming.resume(),
        cancel: () => {
          done = true;
          destroy();
        },
        finish: () => {
          done = true;
          if (incoming.complete) return;
          // The terminal event came; the body's own end (the chunked trailer) is usually in the same
          // read. Drain until it does, so the agent keeps the socket: a new connection per request
          // costs the upstream a TCP handshake and about 0.5 ms of TTFT on loopback (bench/RESULTS.md).
          incoming.resume();
          // This runs inside the read's 'data' event, and node:http parses the rest of that read (the
          // trailer, marking the body complete) right after it: look once that is done, so the usual
          // request sets no timer. A server that never ends the body gets its connection closed.
          queueMicrotask(() => {
            if (incoming.complete || incoming.destroyed) return;
            const closer = setTimeout(destroy, finishDrainMs);
            closer.unref();
            incoming.once('end', () => clearTimeout(closer));
            incoming.once('close', () => clearTimeout(closer));
          });
        },
      };
    },
  };
}

function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new DOMException('The operation was aborted.', 'AbortError');
}
