import {
  createServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
  STATUS_CODES,
} from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Readable } from 'node:stream';
import { abandonResponse } from '../server/http/abandon-response.ts';
import {
  type BodyReader,
  type BodyStreamer,
  READ_BODY,
  STREAM_BODY,
  WHOLE_BODY,
} from '../server/http/body-symbols.ts';
import { setClientAddress } from '../server/http/client-identity.ts';
import { type ClientSignal, LightClientSignal } from '../server/http/client-signal.ts';
import { type IncomingRequest, takesIncomingRequest } from '../server/http/incoming-request.ts';
import { BodyError } from '../server/http/read-body.ts';
import { directBodyOfResponse, TAKES_DIRECT_RESPONSE } from '../server/http/response-output.ts';
import { forwardedClientAddress, trustedProxySet } from './forwarded-address.ts';
import { hostHeaderProblem, NodeRequestHeaders } from './node-request-headers.ts';
import { TurnQueue } from './turn-queue.ts';
import { writeNow } from './write-now.ts';

/**
 * A web-standard handler: the gateway and the simulator are both this. A handler marked with
 * TAKES_INCOMING_REQUEST (the gateway) gets the lighter IncomingRequest instead of a Request when the
 * body is small enough to read whole (server/http/incoming-request.ts).
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
  /**
   * A request body must arrive in full within this many ms of its headers, else 408 (default 30000;
   * 0 = no limit). Bounds how long a slow client can hold a connection and its partial body.
   */
  bodyTimeoutMs?: number | undefined;
  /**
   * Open connections at most (default: no limit). At the cap a new connection takes the place of one
   * that holds no request — one that has sent nothing, then one idle between requests, then one still
   * sending its request's head — oldest first; when every connection holds a request, the new one is
   * closed at once, unanswered. A request being read, handled or answered is never cut for another.
   */
  maxConnections?: number | undefined;
  /**
   * A connection that has sent no byte within this many ms of opening is closed, unanswered (default
   * 10000; 0 = only node:http's header timeout, 60 s checked every 30 s). A client sends its request
   * right after connecting; one that holds a silent socket longer is an idle preconnect (browsers drop
   * their own unused ones after 10 s) or someone filling the connection cap.
   */
  silentConnectionTimeoutMs?: number | undefined;
  /**
   * Addresses of reverse proxies in front of this server whose `X-Forwarded-For` is believed: a
   * request from one of them is from the address it forwarded for (node/forwarded-address.ts). That
   * address is the client's for the resume store's per-client bound. Default none: the header is ignored.
   */
  trustProxy?: readonly string[] | undefined;
}

/** The default of ServeOptions.bodyTimeoutMs. */
export const DEFAULT_BODY_TIMEOUT_MS = 30000;

/** The default of ServeOptions.silentConnectionTimeoutMs. */
export const DEFAULT_SILENT_CONNECTION_TIMEOUT_MS = 10000;

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
  const bodyTimeoutMs = options.bodyTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS;
  const trusted = trustedProxySet(options.trustProxy);
  // The authority of a request that names none (HTTP/1.0 without Host): the bound address, once known.
  let ownAuthority = host;
  const silentTimeoutMs = options.silentConnectionTimeoutMs ?? DEFAULT_SILENT_CONNECTION_TIMEOUT_MS;
  const maxConnections = options.maxConnections;
  // The open connections, oldest first (what the cap picks from).
  const connections = new Map<Socket, Connection>();
  // Requests that arrive together start one per event-loop turn (turn-queue.ts): open streams' chunks
  // are relayed between them instead of after all of them.
  const starts = new TurnQueue();
  // Responses whose bodies are being written: what a start held to its turn makes room for.
  const streaming = { count: 0 };
  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    // Counted from its head: a connection with a request in it is never the one the cap closes.
    const connection = connections.get(req.socket) ?? detachedConnection(req.socket);
    connection.open += 1;
    starts.run(() => {
      handle(handler, light, req, res, connection, ownAuthority, bodyTimeoutMs, trusted, streaming).catch(
        (error: unknown) => {
          options.onError?.(error);
          if (!res.headersSent) {
            res.writeHead(500, { 'content-type': 'application/json' });
            res.end(JSON.stringify({ error: { message: 'internal error', type: 'server_error' } }));
          } else {
            res.destroy();
          }
        },
      );
    }, streaming.count > 0);
  };
  const server = createServer({ noDelay: true, keepAliveTimeout: 5000 }, onRequest);
  // `Expect: 100-continue`: node:http would send 100 Continue at once; the body is asked for only when
  // the handler reads it (BodyReading), so a request refused from its headers never has it sent.
  server.on('checkContinue', onRequest);
  // The cap is kept here, not by node:http's maxConnections (which closes the newcomer whatever the
  // others do): silent connections filling it would lock every client out until they time out.
  server.on('connection', (socket: Socket) => {
    if (maxConnections !== undefined && connections.size >= maxConnections) {
      const idle = idlestConnection(connections);
      if (idle === undefined) {
        socket.destroy();
        return;
      }
      idle.socket.destroy();
      connections.delete(idle.socket);
    }
    const connection = new Connection(socket);
    connections.set(socket, connection);
    if (silentTimeoutMs > 0) connection.closeIfSilentAfter(silentTimeoutMs);
    socket.on('close', () => {
      connections.delete(socket);
      connection.closed();
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      const address = server.address() as AddressInfo;
      const urlHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
      ownAuthority = `${urlHost}:${address.port}`;
      resolve({
        url: `http://${urlHost}:${address.port}`,
        host: address.address,
        port: address.port,
        server,
        connections: () => connections.size,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            for (const socket of connections.keys()) socket.destroy();
          }),
      });
    });
  });
}

/**
 * One client connection: its requests whose responses are not over, and the ends of those being
 * handled. node:http emits `close` on a response only once it is the connection's current one: a
 * response queued behind another (pipelining) never hears that the connection went, so its request's
 * end is called from here, whatever its place in the queue.
 */
class Connection {
  readonly socket: Socket;
  /** Requests received (their heads parsed) whose responses are not over. */
  open = 0;
  /** `socket.bytesRead` when the last of them ended: any more since is a request's head arriving. */
  idleFrom = 0;
  /** Whether the socket has closed. */
  gone = false;
  /** The ends (handle()'s `onClose`) of the requests being handled. */
  readonly ends = new Set<() => void>();
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(socket: Socket) {
    this.socket = socket;
  }

  /** A response is over: when it was the last one open, the connection holds no request now. */
  ended(end?: () => void): void {
    if (end !== undefined) this.ends.delete(end);
    this.open -= 1;
    if (this.open === 0) this.idleFrom = this.socket.bytesRead;
  }

  /** A response the adapter answers itself, at once: it holds the connection until it closes. */
  countUntilClosed(res: ServerResponse): void {
    res.once('close', () => this.ended());
  }

  /** Closes the connection if it has sent no byte within `ms` (ServeOptions.silentConnectionTimeoutMs). */
  closeIfSilentAfter(ms: number): void {
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (this.socket.bytesRead === 0) this.socket.destroy();
    }, ms);
    this.#timer.unref();
  }

  /** The socket closed: every request still on it ends (counted, its upstream aborted, its slot freed). */
  closed(): void {
    this.gone = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    for (const end of this.ends) end();
  }

  /**
   * How readily the cap closes this connection for a new one: 0, it has never sent a byte; 1, it is
   * idle between requests; 2, it is sending a request's head; undefined, it holds a request (never).
   */
  idleRank(): number | undefined {
    if (this.open > 0) return undefined;
    const read = this.socket.bytesRead;
    if (read === 0) return 0;
    return read === this.idleFrom ? 1 : 2;
  }
}

/**
 * A Connection for a request whose socket is not (or no longer) among the open ones: a socket the cap
 * has just given up. Its requests end at once if it is closed already.
 */
function detachedConnection(socket: Socket): Connection {
  const connection = new Connection(socket);
  if (socket.destroyed) connection.gone = true;
  else socket.once('close', () => connection.closed());
  return connection;
}

/** The connection the cap closes first (Connection.idleRank, then the oldest), or none. */
function idlestConnection(connections: ReadonlyMap<Socket, Connection>): Connection | undefined {
  let best: Connection | undefined;
  let bestRank = 3;
  for (const connection of connections.values()) {
    const rank = connection.idleRank();
    if (rank === undefined || rank >= bestRank) continue;
    best = connection;
    bestRank = rank;
    if (rank === 0) break;
  }
  return best;
}

/** Request bodies up to this size (by Content-Length) are read whole; larger or chunked ones stream. */
const BUFFERED_BODY_BYTES = 8 * 1024 * 1024;

/** Methods `OPTIONS *` lists: what the gateway's routes take. */
const ALLOWED_METHODS = 'GET, HEAD, POST, OPTIONS';

/**
 * A Host header that names a host and nothing else (RFC 3986 reg-name or IP literal, then a port):
 * no `/`, `?`, `#` or `@` that would move the path, query or user into it once put before the target.
 */
const HOST_SYNTAX = /^(?:[A-Za-z0-9._~!$&'()*+,;=%-]+|\[[0-9A-Fa-f:.]+\])(?::\d*)?$/;

/**
 * The request's URL, from its target alone (RFC 9112 §3.2): origin-form (`/path?q`) under the Host
 * header's authority (checked to be one) or the bound address; absolute-form as it is. Undefined when
 * the target or the Host cannot make one: the client gets a 400.
 */
function requestUrl(req: IncomingMessage, ownAuthority: string): string | undefined {
  const target = req.url ?? '/';
  if (target.startsWith('/')) {
    const host = req.headers.host;
    if (host === undefined || host === '') return `http://${ownAuthority}${target}`;
    return HOST_SYNTAX.test(host) ? `http://${host}${target}` : undefined;
  }
  if (!/^https?:\/\//i.test(target)) return undefined;
  try {
    const url = new URL(target);
    return url.username === '' && url.password === '' ? url.href : undefined;
  } catch {
    return undefined;
  }
}

async function handle(
  handler: FetchHandler,
  light: boolean,
  req: IncomingMessage,
  res: ServerResponse,
  connection: Connection,
  ownAuthority: string,
  bodyTimeoutMs: number,
  trusted: ReadonlySet<string>,
  streaming: { count: number },
): Promise<void> {
  const method = req.method ?? 'GET';
  if (method === 'OPTIONS' && req.url === '*') {
    // The server-wide OPTIONS (RFC 9110 §9.3.7): what it accepts, no route involved.
    connection.countUntilClosed(res);
    res.writeHead(204, { allow: ALLOWED_METHODS });
    res.end();
    return;
  }
  // Two Host lines, or one no URL can be made of: a 400 (node-request-headers.ts).
  const hostProblem = hostHeaderProblem(req.rawHeaders);
  if (hostProblem !== undefined) {
    connection.countUntilClosed(res);
    answerError(res, 400, hostProblem, 'invalid_request_error');
    return;
  }
  const url = requestUrl(req, ownAuthority);
  if (url === undefined) {
    const message =
      req.url?.startsWith('/') === true
        ? 'invalid Host header: it must be a host name or address with an optional port'
        : `invalid request target ${JSON.stringify(req.url?.slice(0, 100))}`;
    connection.countUntilClosed(res);
    answerError(res, 400, message, 'invalid_request_error');
    return;
  }
  const hasBody = method !== 'GET' && method !== 'HEAD';
  const body = hasBody ? new BodyReading(req, res, bodyTimeoutMs) : undefined;
  // A light request's "client gone" is a LightClientSignal (server/http/client-signal.ts), not an AbortSignal.
  const gone = light ? new LightClientSignal() : new AbortController();
  const signal: ClientSignal = gone instanceof LightClientSignal ? gone : gone.signal;
  // Set while this response is counted among those streaming (below).
  let streams = false;
  // Set once the response is over: sent, or its connection gone (whichever tells first).
  let over = false;
  const onClose = () => {
    if (over) return;
    over = true;
    connection.ended(onClose);
    body?.stop();
    if (streams) streaming.count -= 1;
    streams = false;
    if (!res.writableFinished) gone.abort(new Error('client disconnected'));
  };
  res.on('close', onClose);
  connection.ends.add(onClose);
  // A request that waited for its turn may have lost its client meanwhile.
  if (res.destroyed || connection.gone) onClose();
  let response: Response;
  if (gone instanceof LightClientSignal) {
    // The handler gets the request at once, with its headers; the body is read only when it asks, with
    // its limit (server/http/read-body.ts): a request refused from its headers (no API key, a declared length
    // over the limit) is answered before any byte of its body is buffered.
    const request = lightRequest(method, url, req, gone, body);
    setClientAddress(request, clientAddress(req, trusted));
    response = await (handler as IncomingHandler)(request);
  } else {
    // A JSON request is small: read it whole rather than through a Web Streams adapter.
    const length = Number(req.headers['content-length']);
    const streamed = hasBody && !(Number.isInteger(length) && length <= BUFFERED_BODY_BYTES);
    let whole: Uint8Array | undefined;
    if (body !== undefined && !streamed) {
      try {
        whole = await body.read(BUFFERED_BODY_BYTES);
      } catch (error) {
        if (!(error instanceof BodyError)) throw error;
        answerError(res, error.status, error.message, 'invalid_request_error');
        return;
      }
    }
    const request = standardRequest(method, url, req, gone.signal, whole, streamed);
    setClientAddress(request, clientAddress(req, trusted));
    response = await handler(request);
  }
  const outHeaders: Record<string, string | string[]> = {};
  response.headers.forEach((value, key) => {
    if (key === 'set-cookie') return;
    outHeaders[key] = value;
  });
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) outHeaders['set-cookie'] = cookies;
  // A body not read to its end (the request was refused from its headers, or cut at the limit): the
  // connection closes after the answer instead of waiting for, and discarding, the rest of it.
  if (body !== undefined) {
    if (!body.complete()) outHeaders.connection = 'close';
    // The timeout bounds the wait for a body before the answer; once answering, closing ends it.
    body.stop();
  }
  // undici's Response leaves statusText empty unless told: node:http would then send `HTTP/1.1 200 `.
  try {
    res.writeHead(response.status, response.statusText || STATUS_CODES[response.status] || '', outHeaders);
  } catch (error) {
    // A head node:http refuses (a header value it cannot write): the response is given up, ending what
    // it holds (a stream, its upstream call, a stream slot); the client gets the 500 below.
    abandonResponse(response, error);
    throw error;
  }
  const direct = directBodyOfResponse(response);
  if (response.body === null && direct === undefined) {
    res.end();
    return;
  }
  // Counted until the response closes (onClose; a response already over has nothing left to stream).
  if (!over) {
    streaming.count += 1;
    streams = true;
  }
  if (direct !== undefined) {
    // The headers leave now, with whatever the stream has already (the SSE retry line) and the text
    // from upstream bytes that came with the upstream's headers: their read is handled in a tick queued
    // before this one ends, and its text written in a microtask that read queues (response-output.ts),
    // so uncorking in a microtask queued from a tick queued here sends all of it in one write.
    res.cork();
    res.flushHeaders();
    process.nextTick(uncorkAfterMicrotasks, res);
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
      if (over || res.destroyed) break;
      if (!res.write(next.value)) await waitDrain(res, signal);
    }
    if (!over && !res.destroyed) res.end();
  } catch (error) {
    // The body failed mid-stream (an upstream cut): end the connection without the chunked body's
    // terminator, as a server that died would, so the client sees the stream end without its terminal
    // event instead of a clean finish. The socket is ended, not destroyed: what was written before the
    // failure still reaches the client (a destroy drops writes the kernel has not taken yet).
    const socket = res.socket;
    if (socket !== null && !socket.destroyed) socket.end();
    else res.destroy(error instanceof Error ? error : undefined);
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
  body: BodyReading | undefined,
): IncomingRequest {
  const request: IncomingRequest & {
    [READ_BODY]?: BodyReader;
    [STREAM_BODY]?: BodyStreamer;
    [TAKES_DIRECT_RESPONSE]: true;
  } = {
    method,
    url,
    headers: new NodeRequestHeaders(req.headers),
    signal,
    body: null,
    // This adapter writes a streamed body to the socket itself: a direct-only response will do.
    [TAKES_DIRECT_RESPONSE]: true,
  };
  if (body !== undefined) {
    request[READ_BODY] = (limit) => body.read(limit);
    request[STREAM_BODY] = () => body.stream();
  }
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
  // The raw headers as pairs, not a Headers built by append (undici converts either).
  // Shape kept for speed: bench/README.md "Why the code is shaped as it is" (header pairs).
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
  // The bytes are already here: the gateway reads them without the Request's stream (server/http/read-body.ts).
  if (whole !== undefined) (request as unknown as Record<symbol, unknown>)[WHOLE_BODY] = whole;
  return request;
}

/**
 * The client's address (the resume store's per-client bound without API keys): the socket's peer, or,
 * from a trusted proxy, the address it forwarded for — never read from a header otherwise.
 */
function clientAddress(req: IncomingMessage, trusted: ReadonlySet<string>): string | undefined {
  return forwardedClientAddress(req.socket.remoteAddress, req.headers['x-forwarded-for'], trusted);
}

function uncorkAfterMicrotasks(res: ServerResponse): void {
  queueMicrotask(() => res.uncork());
}

/**
 * One request's body, read when the handler asks (or never): whole, up to a limit, within the body
 * timeout counted from the headers. The read that carried the headers is parsed to its end before a
 * microtask runs: when it carried the whole body too (the usual case for a JSON request), the bytes
 * come out of the stream's buffer at once. Waiting for the stream's `data` and `end` events instead
 * costs a turn of the event loop (node:http marks the message complete only then), while the upstream
 * request waits on it.
 */
class BodyReading {
  readonly #req: IncomingMessage;
  readonly #res: ServerResponse;
  readonly #timeoutMs: number;
  readonly #declared: number | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #timedOut = false;
  #read: Promise<Uint8Array> | undefined;
  #fail: ((error: Error) => void) | undefined;
  #complete = false;

  constructor(req: IncomingMessage, res: ServerResponse, timeoutMs: number) {
    this.#req = req;
    this.#res = res;
    this.#timeoutMs = timeoutMs;
    const length = req.headers['content-length'];
    const declared = length === undefined ? Number.NaN : Number(length);
    this.#declared = Number.isInteger(declared) ? declared : undefined;
    if (timeoutMs > 0) this.#timer = setTimeout(() => this.#expire(), timeoutMs);
    req.once('end', () => {
      this.#complete = true;
      this.#clearTimer();
    });
  }

  /** Whether the whole body has been read (an unread or cut one leaves bytes on the connection). */
  complete(): boolean {
    return this.#complete || this.#req.complete;
  }

  /** No more waiting for the body: the exchange is over or the rest is not wanted. */
  stop(): void {
    this.#clearTimer();
  }

  read(limit: number): Promise<Uint8Array> {
    this.#read ??= this.#start(limit);
    return this.#read;
  }

  /**
   * The body as a Web stream, read as its consumer pulls: for a handler that wants a standard Request.
   * Not read before it asks (100 Continue only then); a body that does not arrive within the timeout
   * errors the stream with the 408.
   */
  stream(): ReadableStream<Uint8Array> {
    const req = this.#req;
    let stop = () => {};
    return new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          this.#askForBody();
          stop = this.#listen({
            chunk: (chunk) => {
              controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.length));
              if ((controller.desiredSize ?? 1) <= 0) req.pause();
            },
            end: () => controller.close(),
            // The stream fails, the connection stays: the handler can still answer.
            fail: (error) => controller.error(error),
          });
        },
        pull: () => {
          req.resume();
        },
        cancel: () => {
          stop();
          req.pause();
        },
      },
      { highWaterMark: 1 },
    );
  }

  #askForBody(): void {
    const expect = this.#req.headers.expect;
    if (expect !== undefined && expect.toLowerCase() === '100-continue' && !this.#res.headersSent)
      this.#res.writeContinue();
  }

  async #start(limit: number): Promise<Uint8Array> {
    if (this.#declared !== undefined && this.#declared > limit) throw tooLarge(limit);
    this.#askForBody();
    await undefined;
    if (this.#timedOut) throw this.#timeoutError();
    const req = this.#req;
    const length = this.#declared;
    if (length !== undefined && req.readableFlowing === null && req.readableLength === length) {
      const bytes = req.read() as Buffer | null;
      // Every declared byte is here: the message is over even before node:http's parser says so
      // (its `complete` and 'end' can come a turn later), so the connection may be kept alive.
      this.#complete = true;
      this.#clearTimer();
      return bytes ?? EMPTY_BODY;
    }
    return new Promise((resolve, reject) => {
      const parts: Buffer[] = [];
      let size = 0;
      const stop = this.#listen({
        chunk: (chunk) => {
          size += chunk.length;
          if (size <= limit) parts.push(chunk);
          else {
            stop();
            // The rest is not read: the answer goes out with `connection: close` (see handle()).
            req.pause();
            reject(tooLarge(limit));
          }
        },
        end: () => resolve(parts.length === 1 ? parts[0]! : Buffer.concat(parts)),
        fail: reject,
      });
    });
  }

  /**
   * Follows the body's chunks to its end or its failure (a stream error, the client leaving mid-body,
   * the body timeout); after `end` or `fail` nothing more is heard, and the rest is left unread.
   * Returns the way to stop listening.
   */
  #listen(to: { chunk(chunk: Buffer): void; end(): void; fail(error: Error): void }): () => void {
    const req = this.#req;
    const stop = () => {
      req.off('data', to.chunk);
      req.off('end', onEnd);
      req.off('error', fail);
      req.off('aborted', onAborted);
      this.#fail = undefined;
    };
    const onEnd = () => {
      stop();
      to.end();
    };
    const fail = (error: Error) => {
      stop();
      req.pause();
      to.fail(error);
    };
    const onAborted = () =>
      fail(new BodyError(400, 'body-incomplete', 'the client left before its body ended'));
    if (this.#timedOut) {
      fail(this.#timeoutError());
      return stop;
    }
    this.#fail = fail;
    req.on('data', to.chunk);
    req.on('end', onEnd);
    req.on('error', fail);
    req.on('aborted', onAborted);
    return stop;
  }

  #expire(): void {
    this.#timer = undefined;
    if (this.complete()) return;
    this.#timedOut = true;
    this.#fail?.(this.#timeoutError());
  }

  #timeoutError(): BodyError {
    return new BodyError(408, 'body-timeout', `the request body did not arrive within ${this.#timeoutMs} ms`);
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}

function tooLarge(limit: number): BodyError {
  return new BodyError(413, 'body-too-large', `the request body is larger than the limit of ${limit} bytes`);
}

/** An error the adapter answers itself (before any handler), closing the connection after it. */
function answerError(res: ServerResponse, status: number, message: string, type: string): void {
  res.writeHead(status, STATUS_CODES[status] ?? '', {
    'content-type': 'application/json',
    'cache-control': 'no-store',
    connection: 'close',
  });
  res.end(JSON.stringify({ error: { message, type } }));
}

const EMPTY_BODY = new Uint8Array(0);

/** Until the response drains, or is over (a response queued behind another hears no `close`: the signal). */
function waitDrain(res: ServerResponse, signal: ClientSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
    signal.addEventListener('abort', done, { once: true });
    if (signal.aborted) done();
  });
}
