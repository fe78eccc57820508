import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Readable } from 'node:stream';
import { type ClientSignal, LightClientSignal } from '../server/client-signal.ts';
import { type IncomingRequest, takesIncomingRequest } from '../server/incoming-request.ts';
import { WHOLE_BODY } from '../server/read-body.ts';
import { directBodyOfResponse, TAKES_DIRECT_RESPONSE } from '../server/response-output.ts';
import { NodeRequestHeaders } from './node-request-headers.ts';
import { TurnQueue } from './turn-queue.ts';
import { writeNow } from './write-now.ts';

/**
 * A web-standard handler: the gateway and the simulator are both this. A handler marked with
 * TAKES_INCOMING_REQUEST (the gateway) gets the lighter IncomingRequest instead of a Request when the
 * body is small enough to read whole (server/incoming-request.ts).
 */
export type FetchHandler = (request: Request) => Promise<Response> | Response;
type IncomingHandler = (request: IncomingRequest) => Promise<Response> | Response;

export interface ServeOptions {
  /** Default 127.0.0.1: nothing listens beyond loopback unless asked. */
  host?: string | undefined;
  /** Default 0 (a free port). */
  port?: number | undefined;
  /** Called when a handler throws (the client gets a 500). */
  onError?: ((error: unknown) => void) | undefined;
}

export interface ServedHandler {
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly server: Server;
  /** Open connections right now. */
  connections(): number;
  /** Stops listening and closes every connection. */
  close(): Promise<void>;
}

/**
 * Serves a fetch handler on node:http. The request's AbortSignal fires when the client goes away, and
 * the response body is cancelled, so a disconnect reaches the handler (and through it, the upstream) at
 * once. Response headers are flushed immediately, before the first body byte.
 */
export function serve(handler: FetchHandler, options: ServeOptions = {}): Promise<ServedHandler> {
  const host = options.host ?? '127.0.0.1';
  const light = takesIncomingRequest(handler);
  const sockets = new Set<Socket>();
  // Requests that arrive together start one per event-loop turn (turn-queue.ts): open streams' chunks
  // are relayed between them instead of after all of them.
  const starts = new TurnQueue();
  const server = createServer({ noDelay: true, keepAliveTimeout: 5000 }, (req, res) => {
    starts.run(() => {
      handle(handler, light, req, res, host).catch((error: unknown) => {
        options.onError?.(error);
        if (!res.headersSent) {
          res.writeHead(500, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: { message: 'internal error', type: 'server_error' } }));
        } else {
          res.destroy();
        }
      });
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      const address = server.address() as AddressInfo;
      const urlHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
      resolve({
        url: `http://${urlHost}:${address.port}`,
        host: address.address,
        port: address.port,
        server,
        connections: () => sockets.size,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            for (const socket of sockets) socket.destroy();
          }),
      });
    });
  });
}

/** Request bodies up to this size (by Content-Length) are read whole; larger or chunked ones stream. */
const BUFFERED_BODY_BYTES = 8 * 1024 * 1024;

async function handle(
  handler: FetchHandler,
  light: boolean,
  req: IncomingMessage,
  res: ServerResponse,
  host: string,
): Promise<void> {
  const method = req.method ?? 'GET';
  const url = `http://${req.headers.host ?? host}${req.url ?? '/'}`;
  const hasBody = method !== 'GET' && method !== 'HEAD';
  const length = hasBody ? Number(req.headers['content-length']) : 0;
  // A JSON request is small: read it whole rather than through a Web Streams adapter.
  const streamed = hasBody && !(Number.isInteger(length) && length <= BUFFERED_BODY_BYTES);
  // A light request's "client gone" is a LightClientSignal (server/client-signal.ts), not an AbortSignal.
  const gone = light && !streamed ? new LightClientSignal() : new AbortController();
  const signal: ClientSignal = gone instanceof LightClientSignal ? gone : gone.signal;
  const onClose = () => {
    if (!res.writableFinished) gone.abort(new Error('client disconnected'));
  };
  res.on('close', onClose);
  // A request that waited for its turn may have lost its client meanwhile.
  if (res.destroyed) onClose();
  const whole = hasBody && !streamed ? await readWhole(req, length) : undefined;
  const response = await (gone instanceof LightClientSignal
    ? (handler as IncomingHandler)(lightRequest(method, url, req, gone, whole))
    : handler(standardRequest(method, url, req, gone.signal, whole, streamed)));
  const outHeaders: Record<string, string | string[]> = {};
  response.headers.forEach((value, key) => {
    if (key === 'set-cookie') return;
    outHeaders[key] = value;
  });
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) outHeaders['set-cookie'] = cookies;
  res.writeHead(response.status, response.statusText, outHeaders);
  const direct = directBodyOfResponse(response);
  if (response.body === null && direct === undefined) {
    res.end();
    return;
  }
  if (direct !== undefined) {
    // The headers leave now, with whatever the stream has already (the SSE retry line) and the text
    // from upstream bytes that came with the upstream's headers: their read is handled in a tick queued
    // before this one ends, so uncorking in a tick queued here sends all of it in one write.
    res.cork();
    res.flushHeaders();
    process.nextTick(uncork, res);
    // The gateway's streams: text straight to the socket, no Web Streams queue in between.
    const attachment = direct.attach({
      write: (text) => writeNow(res, text),
      // The last text and the end of the chunked body in one write.
      end: (text) => (text === undefined || text === '' ? res.end() : res.end(text)),
      destroy: () => res.destroy(),
    });
    res.on('drain', attachment.drained);
    signal.addEventListener('abort', attachment.closed, { once: true });
    if (signal.aborted) attachment.closed();
    return;
  }
  res.flushHeaders();
  // Not null here: a null body without a direct writer ended above.
  const reader = response.body!.getReader();
  const stop = () => {
    reader.cancel(new Error('client disconnected')).catch(() => {});
  };
  signal.addEventListener('abort', stop, { once: true });
  try {
    for (;;) {
      const next = await reader.read();
      if (next.done) break;
      if (res.destroyed) break;
      if (!res.write(next.value)) await waitDrain(res);
    }
    if (!res.destroyed) res.end();
  } catch (error) {
    // The body failed mid-stream (an upstream cut): end the connection abruptly, as a server would,
    // so the client sees the stream end without its terminal event instead of a clean finish.
    res.destroy(error instanceof Error ? error : undefined);
  } finally {
    signal.removeEventListener('abort', stop);
  }
}

/**
 * What a handler marked TAKES_INCOMING_REQUEST gets: method, URL, the headers as node:http parsed them,
 * the client's signal and the bytes — no Request, AbortSignal follower, body stream or header checks.
 */
function lightRequest(
  method: string,
  url: string,
  req: IncomingMessage,
  signal: ClientSignal,
  whole: Uint8Array | undefined,
): IncomingRequest {
  const request: IncomingRequest & { [WHOLE_BODY]?: Uint8Array; [TAKES_DIRECT_RESPONSE]: true } = {
    method,
    url,
    headers: new NodeRequestHeaders(req.headers),
    signal,
    body: null,
    // This adapter writes a streamed body to the socket itself: a direct-only response will do.
    [TAKES_DIRECT_RESPONSE]: true,
  };
  if (whole !== undefined) request[WHOLE_BODY] = whole;
  return request;
}

function standardRequest(
  method: string,
  url: string,
  req: IncomingMessage,
  signal: AbortSignal,
  whole: Uint8Array | undefined,
  streamed: boolean,
): Request {
  // Pairs, not a Headers built by append: undici converts either, and pairs cost a fifth less.
  const raw = req.rawHeaders;
  const headers: [string, string][] = [];
  for (let i = 0; i < raw.length; i += 2) headers.push([raw[i]!, raw[i + 1]!]);
  const init: RequestInit & { duplex?: 'half' } = { method, headers, signal };
  if (whole !== undefined) init.body = whole;
  else if (streamed) {
    init.body = Readable.toWeb(req) as unknown as ReadableStream<Uint8Array>;
    init.duplex = 'half';
  }
  const request = new Request(url, init);
  // The bytes are already here: the gateway reads them without the Request's stream (server/read-body.ts).
  if (whole !== undefined) (request as unknown as Record<symbol, unknown>)[WHOLE_BODY] = whole;
  return request;
}

function uncork(res: ServerResponse): void {
  res.uncork();
}

/**
 * A request body of known, bounded length, whole. The read that carried the headers is parsed to its
 * end before a microtask runs: when it carried the whole body too (the usual case for a JSON request),
 * the bytes come out of the stream's buffer at once. Waiting for the stream's `data` and `end` events
 * instead costs a turn of the event loop (node:http marks the message complete only then), while the
 * upstream request waits on it.
 */
async function readWhole(req: IncomingMessage, length: number): Promise<Uint8Array> {
  await undefined;
  if (req.readableFlowing === null && req.readableLength === length) {
    const bytes = req.read() as Buffer | null;
    return bytes ?? EMPTY_BODY;
  }
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on('data', (chunk: Buffer) => parts.push(chunk));
    req.on('end', () => resolve(parts.length === 1 ? parts[0]! : Buffer.concat(parts)));
    req.on('error', reject);
  });
}

const EMPTY_BODY = new Uint8Array(0);

function waitDrain(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}
