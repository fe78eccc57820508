import { type BodyReader, type BodyStreamer, READ_BODY, STREAM_BODY, WHOLE_BODY } from './body-symbols.ts';
import { abortSignalOf, type ClientSignal } from './client-signal.ts';

/** The part of `Headers` the gateway reads. A standard `Headers` is one. */
export interface IncomingHeaders {
  get(name: string): string | null;
  has(name: string): boolean;
  keys(): Iterable<string>;
}

/**
 * The part of a `Request` the gateway reads: a standard Request is one. A server adapter that owns the
 * socket (node/serve.ts) passes a lighter object instead, when the handler says it takes one
 * (TAKES_INCOMING_REQUEST): no AbortSignal, body stream or header checks of a Request stand between the
 * client's request and the upstream's. Shape kept for speed: bench/README.md "Why the code is shaped as
 * it is" (IncomingRequest).
 */
export interface IncomingRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHeaders;
  /** Aborts when the client goes away: an AbortSignal, or a lighter one (client-signal.ts). */
  readonly signal: ClientSignal;
  /**
   * Null for a light request: its bytes, read in full, are under WHOLE_BODY, or read when asked through
   * READ_BODY (server/http/body-symbols.ts).
   */
  readonly body: ReadableStream<Uint8Array> | null;
}

/** Marks a fetch handler that takes an IncomingRequest, not only a Request. */
export const TAKES_INCOMING_REQUEST: unique symbol = Symbol.for('tokenwire.takes-incoming-request') as never;

export function takesIncomingRequest(handler: unknown): boolean {
  return (handler as Record<symbol, unknown> | null)?.[TAKES_INCOMING_REQUEST] === true;
}

/** Marks `handler` as taking IncomingRequests; returns it. */
export function markTakesIncomingRequest<T extends object>(handler: T): T {
  (handler as Record<symbol, unknown>)[TAKES_INCOMING_REQUEST] = true;
  return handler;
}

/** A standard Request for code that needs one (a user's fallback handler): built only then. */
export function toRequest(request: IncomingRequest): Request {
  if (request instanceof Request) return request;
  const headers: [string, string][] = [];
  for (const name of request.headers.keys()) headers.push([name, request.headers.get(name) ?? '']);
  const init: RequestInit & { duplex?: 'half' } = {
    method: request.method,
    headers,
    signal: abortSignalOf(request.signal),
  };
  const holder = request as unknown as Record<symbol, unknown>;
  const whole = holder[WHOLE_BODY];
  const readBody = holder[READ_BODY];
  const streamBody = holder[STREAM_BODY];
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    if (whole instanceof Uint8Array) init.body = whole;
    else if (typeof streamBody === 'function') {
      // Read as the Request's body is, with no buffer or limit of ours: its reader's.
      init.body = (streamBody as BodyStreamer)();
      init.duplex = 'half';
    } else if (typeof readBody === 'function') {
      // A body not read yet (node/serve.ts reads it when asked): read when the Request's body is.
      init.body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          controller.enqueue(await (readBody as BodyReader)(Number.POSITIVE_INFINITY));
          controller.close();
        },
      });
      init.duplex = 'half';
    }
  }
  return new Request(request.url, init);
}

/** Where a request goes: its path without trailing slashes ("/" at least), its query, its URL. */
export interface RequestTarget {
  readonly path: string;
  /** One query parameter's value (null when absent). */
  query(name: string): string | null;
  /** The whole URL, parsed on first use. */
  readonly url: URL;
}

const TARGET: unique symbol = Symbol('tokenwire.request-target') as never;
/** A path the URL parser would leave as it is: no dot segments, escapes or backslashes to normalize. */
const PLAIN_PATH = /^\/[A-Za-z0-9_/-]*$/;

class ParsedTarget implements RequestTarget {
  readonly path: string;
  readonly #href: string;
  readonly #hasQuery: boolean;
  #url: URL | undefined;

  constructor(href: string) {
    this.#href = href;
    const scheme = href.indexOf('://');
    const start = scheme === -1 ? -1 : href.indexOf('/', scheme + 3);
    const query = href.indexOf('?');
    const end = query === -1 ? href.length : query;
    const raw = start === -1 || start > end ? undefined : href.slice(start, end);
    this.#hasQuery = query !== -1;
    // A plain path (and no fragment) reads the same from the string as from the parsed URL.
    const pathname =
      raw !== undefined && PLAIN_PATH.test(raw) && !href.includes('#') ? raw : this.url.pathname;
    this.path = pathname.replace(/\/+$/, '') || '/';
  }

  get url(): URL {
    this.#url ??= new URL(this.#href);
    return this.#url;
  }

  query(name: string): string | null {
    return this.#hasQuery ? this.url.searchParams.get(name) : null;
  }
}

/**
 * Where the request goes, worked out once for every layer that reads it (the guard, then the gateway),
 * and without parsing the URL when its path is plain and nothing asks for more: this is on the path to
 * the upstream request, which at one stream is the TTFT. `new URL` throws on a URL it cannot parse,
 * as before.
 */
export function requestTarget(request: IncomingRequest): RequestTarget {
  const holder = request as unknown as { [TARGET]?: RequestTarget };
  holder[TARGET] ??= new ParsedTarget(request.url);
  return holder[TARGET];
}
