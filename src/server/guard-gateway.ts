import type { Dialect } from '../dialects/dialect.ts';
import { dialectForPath, getDialect } from '../dialects/registry.ts';
import { setClientOwner } from './client-identity.ts';
import { createGateway, type Gateway, type GatewayOptions } from './create-gateway.ts';
import type { GatewayMetrics } from './gateway-metrics.ts';
import {
  type IncomingRequest,
  markTakesIncomingRequest,
  requestTarget,
  takesIncomingRequest,
  toRequest,
} from './incoming-request.ts';
import {
  DIRECT_BODY,
  type DirectAttachment,
  type DirectBody,
  type DirectWriter,
  directBodyOf,
  directOnlyResponse,
} from './response-output.ts';
import { SecretRedactor, upstreamSecrets } from './secret-redactor.ts';
import type { FetchLike } from './upstream.ts';

export interface GuardOptions {
  /**
   * API keys a client may present (`Authorization: Bearer <key>` or `X-API-Key: <key>`), any of them.
   * None (the default): no key is asked for. Compared in constant time.
   */
  apiKeys?: readonly string[] | undefined;
  /**
   * Generation requests (streamed or not, resumes included) served at once; one more gets a 429 with
   * `Retry-After`, in its dialect's error shape. Default: no limit.
   */
  maxStreams?: number | undefined;
  /**
   * Where the `maxStreams` slots are counted when several processes share the limit (`serve --workers`:
   * the primary holds the count). Default: this guard's own count.
   */
  streamSlots?: StreamSlots | undefined;
  /** `Retry-After` seconds on that 429. Default 1. */
  retryAfterSeconds?: number | undefined;
  /**
   * Browser origins (`https://host[:port]`, exact) allowed to call the API from another origin. Default
   * none: CORS is off, and a cross-origin API request (it carries an `Origin` that is not the gateway's
   * own) gets a 403, so a web page cannot make the gateway spend upstream time for it.
   */
  corsOrigins?: readonly string[] | undefined;
  /**
   * Host names the gateway answers to (DNS rebinding: a page on a domain that resolves to the gateway's
   * address sends that domain as `Host`). Compared without the port, case-insensitively; `[::1]` for
   * IPv6; `*` allows any. Any other `Host` (or absolute-form target authority) gets a 421 before
   * routing, on every path. Default: any host.
   */
  allowedHosts?: readonly string[] | undefined;
  /** Values never to reach a client (upstream credentials): replaced in every response body. */
  secrets?: readonly string[] | undefined;
  /** Counts refusals in `tokenwire_rejected_total{route,status}`. */
  metrics?: GatewayMetrics | undefined;
}

/** A shared count of stream slots: `acquire` says whether one was free (and takes it). */
export interface StreamSlots {
  acquire(): boolean | Promise<boolean>;
  release(): void;
}

/** A fetch handler with the guard's live count of generation requests. */
export interface GuardedHandler {
  (request: IncomingRequest): Promise<Response>;
  /** Generation requests being served now (what `maxStreams` limits; counted only when it is set). */
  inFlight(): number;
}

/** Request headers a browser on an allowed origin may send. */
const CORS_ALLOWED_HEADERS =
  'authorization, content-type, last-event-id, x-api-key, x-request-id, traceparent, tracestate, x-tokenwire-fault, x-tokenwire-flavor';
/** Response headers a browser on an allowed origin may read. */
const CORS_EXPOSED_HEADERS = 'x-tokenwire-stream-id, retry-after, x-request-id';
// `/props` and `/info` (side-routes.ts) may pass on an upstream's own (model paths, chat template).
const API_PATHS = new Set(['/v1/models', '/api/tags', '/metrics', '/props', '/info']);

const encoder = new TextEncoder();

/**
 * Puts a security layer in front of a gateway handler (or any fetch handler), without touching it:
 * API keys, a limit on concurrent streams, CORS with an allow-list (off by default), and redaction of
 * upstream credentials from everything sent back. Refusals use the dialect's own error shape (the
 * route's; the OpenAI shape elsewhere). Static pages (`GET` of anything but the API) and `/healthz`
 * stay open so the playground and load-balancer probes work.
 */
export function guardGateway(
  handler: FetchLike | ((request: IncomingRequest) => Promise<Response>),
  options: GuardOptions = {},
): GuardedHandler {
  const keyDigests = Promise.all((options.apiKeys ?? []).filter((k) => k !== '').map(sha256));
  const requireKey = (options.apiKeys ?? []).some((k) => k !== '');
  const maxStreams = options.maxStreams;
  const retryAfter = String(options.retryAfterSeconds ?? 1);
  const origins = new Set(options.corsOrigins ?? []);
  const redactor = new SecretRedactor(options.secrets ?? []);
  const takesIncoming = takesIncomingRequest(handler);
  const hosts = options.allowedHosts;
  const allowedHosts =
    hosts === undefined || hosts.length === 0 || hosts.includes('*')
      ? undefined
      : new Set(hosts.map((host) => host.toLowerCase()));
  // A handler that wants a standard Request gets one (the guard itself reads only IncomingRequest's part).
  const inner = (request: IncomingRequest): Promise<Response> | Response =>
    takesIncoming
      ? (handler as (request: IncomingRequest) => Promise<Response>)(request)
      : (handler as FetchLike)(toRequest(request));
  let inFlight = 0;
  // With no keys, no stream limit and nothing to redact, a request without an Origin header passes
  // through untouched whichever path it takes below: then none of it runs (at one stream this is on the
  // way to the upstream request, the TTFT).
  const passesWithoutOrigin = !requireKey && maxStreams === undefined && !redactor.active;

  function refuse(dialect: Dialect | undefined, status: number, message: string, errorType: string) {
    options.metrics?.rejected.inc({ route: dialect?.id ?? 'other', status: String(status) });
    const error = (dialect ?? getDialect('openai-chat')).errorResponse({ status, message, errorType });
    return new Response(error.body, {
      status: error.status,
      headers: { 'content-type': error.contentType, 'cache-control': 'no-store' },
    });
  }

  async function keyMatches(request: IncomingRequest): Promise<boolean> {
    const presented = presentedKey(request);
    if (presented === undefined) return false;
    // Fixed-length digests: the comparison takes the same time whatever the key's length or content,
    // and every key is compared (no early exit), so timing tells nothing about which bytes matched.
    const digest = await sha256(presented);
    let matched = 0;
    for (const known of await keyDigests) {
      let diff = 0;
      for (let i = 0; i < known.length; i++) diff |= known[i]! ^ digest[i]!;
      matched |= 1 ^ ((diff | -diff) >>> 31);
    }
    // Who opened a stream is who may resume it (issue 21): the gateway reads this digest, never a header.
    if (matched === 1) setClientOwner(request, digest);
    return matched === 1;
  }

  function misdirected(request: IncomingRequest, host: string): Response {
    const target = requestTarget(request);
    return refuse(
      generationDialect(request.method, target.path),
      421,
      `${JSON.stringify(host)} is not a host this gateway answers to (DNS rebinding protection); start it with --allowed-host ${hostName(host)} to allow it`,
      'invalid_request_error',
    );
  }

  const guarded = async (request: IncomingRequest): Promise<Response> => {
    if (allowedHosts !== undefined) {
      const host = authorityOf(request.url);
      if (!allowedHosts.has(hostName(host)) && !allowedHosts.has(host)) return misdirected(request, host);
    }
    const origin = request.headers.get('origin');
    if (origin === null && passesWithoutOrigin) return inner(request);
    const target = requestTarget(request);
    const path = target.path;
    // Same host = the gateway's own pages (the scheme may differ behind a TLS-terminating proxy).
    const crossOrigin = origin !== null && hostOf(origin) !== target.url.host;
    const allowedOrigin = crossOrigin && origins.has(origin);

    if (
      request.method === 'OPTIONS' &&
      origin !== null &&
      request.headers.has('access-control-request-method')
    ) {
      if (!allowedOrigin) return new Response(null, { status: 403, headers: { vary: 'origin' } });
      return new Response(null, {
        status: 204,
        headers: {
          'access-control-allow-origin': origin,
          'access-control-allow-methods': 'GET, POST, OPTIONS',
          'access-control-allow-headers': CORS_ALLOWED_HEADERS,
          'access-control-max-age': '600',
          vary: 'origin, access-control-request-method, access-control-request-headers',
        },
      });
    }

    const generation = generationDialect(request.method, path);
    const api = generation !== undefined || isApiRequest(request.method, path);
    if (!api) return finish(await inner(request), allowedOrigin ? origin : undefined, undefined);

    const dialect = generation;
    if (crossOrigin && !allowedOrigin) {
      return refuse(
        dialect,
        403,
        `cross-origin requests from ${JSON.stringify(origin)} are not allowed (the gateway's CORS allow-list does not list it)`,
        'permission_error',
      );
    }
    if (requireKey && !(await keyMatches(request))) {
      const response = refuse(
        dialect,
        401,
        'missing or invalid API key: send "Authorization: Bearer <key>" or "X-API-Key: <key>"',
        'authentication_error',
      );
      response.headers.set('www-authenticate', 'Bearer');
      return withCors(response, allowedOrigin ? origin : undefined);
    }
    // Streams are counted only to limit them: with no limit, a response is passed on untouched.
    if (generation === undefined || maxStreams === undefined)
      return finish(await inner(request), allowedOrigin ? origin : undefined, undefined);

    const slots = options.streamSlots;
    if (slots === undefined ? inFlight >= maxStreams : !(await slots.acquire())) {
      const response = refuse(
        dialect,
        429,
        `too many concurrent streams: this gateway serves at most ${maxStreams} at once; retry after ${retryAfter} s`,
        'rate_limit_error',
      );
      response.headers.set('retry-after', retryAfter);
      return withCors(response, allowedOrigin ? origin : undefined);
    }
    inFlight += 1;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      inFlight -= 1;
      slots?.release();
      request.signal.removeEventListener('abort', release);
    };
    // A client that leaves frees its slot even before its body is cancelled.
    request.signal.addEventListener('abort', release, { once: true });
    let response: Response;
    try {
      response = await inner(request);
    } catch (error) {
      release();
      throw error;
    }
    return finish(response, allowedOrigin ? origin : undefined, release);
  };

  function finish(response: Response, corsOrigin: string | undefined, release: (() => void) | undefined) {
    // A direct-only response (serve's requests): only a socket writer reads it.
    const directOnly = response.body === null ? directBodyOf(response) : undefined;
    if (directOnly !== undefined) {
      if (!redactor.active && corsOrigin === undefined && release === undefined) return response;
      return withCors(
        directOnlyResponse(guardedDirectBody(directOnly, redactor, release), {
          status: response.status,
          statusText: response.statusText,
          headers: response.headers,
        }),
        corsOrigin,
      );
    }
    if (response.body === null) {
      release?.();
      if (!redactor.active && corsOrigin === undefined) return response;
      return withCors(copy(response, null), corsOrigin);
    }
    if (!redactor.active && corsOrigin === undefined && release === undefined) return response;
    const direct = directBodyOf(response.body);
    let body = redactor.stream(response.body);
    if (release !== undefined) body = tracked(body, release);
    // Keep the adapter's direct path (node/serve.ts writes straight to the socket): the same redaction
    // and release, on the text as it is written. Whichever consumer comes first reads the body.
    if (direct !== undefined) {
      (body as unknown as Record<symbol, unknown>)[DIRECT_BODY] = guardedDirectBody(
        direct,
        redactor,
        release,
      );
    }
    return withCors(copy(response, body), corsOrigin);
  }

  // The guard reads only what an IncomingRequest has: it takes one when the handler it guards does.
  if (takesIncoming) markTakesIncomingRequest(guarded);
  return Object.assign(guarded, { inFlight: () => inFlight });
}

export interface GuardedGateway {
  gateway: Gateway;
  /** The gateway's handler behind the guard: what to serve. */
  fetch: GuardedHandler;
  /** Redacts the upstream credentials (and `secrets`) from any text, e.g. a log line. */
  redactor: SecretRedactor;
}

/**
 * A gateway with its guard, wired so upstream credentials (every upstream header value long enough to
 * be one, plus `secrets`) never reach a client, a log record (`onLog` gets redacted records) or
 * `/metrics`. What `tokenwire serve` runs.
 */
export function createGuardedGateway(options: GatewayOptions & GuardOptions): GuardedGateway {
  const secrets = [...upstreamSecrets(options.upstreams), ...(options.secrets ?? [])];
  const redactor = new SecretRedactor(secrets);
  const onLog = options.onLog;
  const gateway = createGateway({
    ...options,
    onLog: onLog === undefined ? undefined : (record) => onLog(redactor.value(record)),
  });
  const fetch = guardGateway(gateway.fetch, {
    apiKeys: options.apiKeys,
    maxStreams: options.maxStreams,
    streamSlots: options.streamSlots,
    retryAfterSeconds: options.retryAfterSeconds,
    corsOrigins: options.corsOrigins,
    allowedHosts: options.allowedHosts,
    secrets,
    metrics: gateway.metrics,
  });
  return { gateway, fetch, redactor };
}

/** The dialect of a generation request (the routes that stream), else undefined. */
function generationDialect(method: string, path: string): Dialect | undefined {
  if ((path === '/' || path === '/generate') && method === 'POST') return getDialect('tgi');
  return dialectForPath(path);
}

function isApiRequest(method: string, path: string): boolean {
  if (method !== 'GET' && method !== 'HEAD') return true;
  return API_PATHS.has(path) || path.startsWith('/v1/') || path.startsWith('/api/');
}

/** The authority of an absolute URL (`host[:port]`, lower-case), read without parsing the URL. */
function authorityOf(url: string): string {
  const scheme = url.indexOf('://');
  const start = scheme === -1 ? 0 : scheme + 3;
  let end = start;
  while (end < url.length && url[end] !== '/' && url[end] !== '?' && url[end] !== '#') end++;
  return url.slice(start, end).toLowerCase();
}

/** A `host[:port]` authority's host: `[::1]` keeps its brackets. */
function hostName(authority: string): string {
  const colon = authority.lastIndexOf(':');
  return colon === -1 || authority.endsWith(']') ? authority : authority.slice(0, colon);
}

function hostOf(origin: string): string | undefined {
  try {
    return new URL(origin).host;
  } catch {
    return undefined; // `null` (sandboxed pages, file:) and garbage are foreign
  }
}

function presentedKey(request: IncomingRequest): string | undefined {
  const authorization = request.headers.get('authorization');
  if (authorization !== null) {
    const match = /^Bearer\s+(.+)$/i.exec(authorization.trim());
    if (match !== null) return match[1]!.trim();
  }
  const apiKey = request.headers.get('x-api-key');
  return apiKey === null || apiKey === '' ? undefined : apiKey.trim();
}

async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest('SHA-256', encoder.encode(text)));
}

/** A direct body that redacts what is written and calls `release` once when the response is over. */
function guardedDirectBody(
  direct: DirectBody,
  redactor: SecretRedactor,
  release: (() => void) | undefined,
): DirectBody {
  return {
    attach(writer: DirectWriter): DirectAttachment {
      let over = false;
      const done = () => {
        if (over) return;
        over = true;
        release?.();
      };
      const redacting = redactor.active ? redactor.textStream() : undefined;
      const guarded: DirectWriter = {
        write: (text) => writer.write(redacting === undefined ? text : redacting.push(text)),
        end: (text) => {
          if (redacting === undefined) writer.end(text);
          else {
            const written = text === undefined || text === '' ? '' : redacting.push(text);
            writer.end(written + redacting.end());
          }
          done();
        },
        destroy: () => {
          writer.destroy();
          done();
        },
      };
      const attachment = direct.attach(guarded);
      return {
        drained: () => attachment.drained(),
        closed: () => {
          attachment.closed();
          done();
        },
      };
    },
  };
}

function copy(response: Response, body: ReadableStream<Uint8Array> | null): Response {
  return new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: new Headers(response.headers),
  });
}

function withCors(response: Response, origin: string | undefined): Response {
  if (origin === undefined) return response;
  response.headers.set('access-control-allow-origin', origin);
  response.headers.set('access-control-expose-headers', CORS_EXPOSED_HEADERS);
  response.headers.append('vary', 'origin');
  return response;
}

/** The same bytes, calling `onEnd` once when the body finishes, fails or is cancelled. */
function tracked(body: ReadableStream<Uint8Array>, onEnd: () => void): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const next = await reader.read();
          if (next.done) {
            onEnd();
            controller.close();
          } else {
            controller.enqueue(next.value);
          }
        } catch (error) {
          onEnd();
          controller.error(error);
        }
      },
      cancel(reason) {
        onEnd();
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}
