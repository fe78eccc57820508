import type { Dialect } from '../../dialects/dialect.ts';
import { DIALECTS, dialectForPath, getDialect } from '../../dialects/registry.ts';
import { setClientOwner } from '../http/client-identity.ts';
import { type IncomingRequest, requestTarget } from '../http/incoming-request.ts';
import type { GuardOptions, StreamSlots } from './guard-options.ts';

/** A request the guard lets through: the CORS origin its response names, and its stream slot's release. */
export interface Admitted {
  /** The allowed cross origin the response's CORS headers name; undefined for none. */
  readonly corsOrigin: string | undefined;
  /** Frees the stream slot the request holds (once, whoever calls it); undefined when it holds none. */
  readonly release: (() => void) | undefined;
}

/** Request headers a browser on an allowed origin may send. */
const CORS_ALLOWED_HEADERS =
  'authorization, content-type, last-event-id, x-api-key, x-request-id, traceparent, tracestate, x-tokenwire-fault, x-tokenwire-flavor, x-tokenwire-continue';
/** Response headers a browser on an allowed origin may read. */
const CORS_EXPOSED_HEADERS =
  'x-tokenwire-stream-id, retry-after, x-request-id, x-tokenwire-upstream, x-tokenwire-attempts';
// `/props` and `/info` (side-routes.ts) may pass on an upstream's own (model paths, chat template).
const API_PATHS = new Set(['/v1/models', '/api/tags', '/metrics', '/props', '/info']);
/** Every generation route's path as a prefix (`/responses/`, `/completion/`…): what is under one is the API's. */
const GENERATION_PREFIXES = Object.values(DIALECTS).flatMap((dialect) =>
  dialect.paths.filter((path) => path !== '/').map((path) => `${path}/`),
);
/** What a request with no CORS origin and no stream slot is admitted as (no object per request). */
const ADMITTED: Admitted = Object.freeze({ corsOrigin: undefined, release: undefined });

const encoder = new TextEncoder();

/**
 * The guard's admission of one request, in this order: the `Host` it names (421), the CORS preflight
 * (answered here), a cross-origin API request from an origin not allowed (403), the API key (401), the
 * stream limit on generation routes (429, with `Retry-After`). Static pages (`GET` of anything but the
 * API) and `/healthz` pass with no key asked. Refusals are in the route's dialect's error shape (the
 * OpenAI shape elsewhere) and counted in `tokenwire_rejected_total`. Made once per guard; the count of
 * generation requests in flight (`maxStreams`) is its only state.
 */
export class GuardAdmission {
  readonly #options: GuardOptions;
  readonly #keyDigests: Promise<Uint8Array[]>;
  readonly #requireKey: boolean;
  readonly #maxStreams: number | undefined;
  readonly #slots: StreamSlots | undefined;
  readonly #retryAfter: string;
  readonly #origins: Set<string>;
  readonly #allowedHosts: Set<string> | undefined;
  /** Generation requests holding a slot now (counted only when `maxStreams` is set). */
  inFlight = 0;

  constructor(options: GuardOptions) {
    this.#options = options;
    this.#keyDigests = Promise.all((options.apiKeys ?? []).filter((k) => k !== '').map(sha256));
    this.#requireKey = (options.apiKeys ?? []).some((k) => k !== '');
    this.#maxStreams = options.maxStreams;
    this.#slots = options.streamSlots;
    this.#retryAfter = String(options.retryAfterSeconds ?? 1);
    this.#origins = new Set(options.corsOrigins ?? []);
    const hosts = options.allowedHosts;
    this.#allowedHosts =
      hosts === undefined || hosts.length === 0 || hosts.includes('*')
        ? undefined
        : new Set(hosts.map((host) => host.toLowerCase()));
  }

  /** Whether any check looks at a request without an `Origin` header beyond its `Host`: keys or a limit. */
  get checksWithoutOrigin(): boolean {
    return this.#requireKey || this.#maxStreams !== undefined;
  }

  /** The 421 for a `Host` (or absolute-form authority) the gateway does not answer to, else undefined. */
  hostRefusal(request: IncomingRequest): Response | undefined {
    const allowed = this.#allowedHosts;
    if (allowed === undefined) return undefined;
    const host = authorityOf(request.url);
    if (allowed.has(hostName(host)) || allowed.has(host)) return undefined;
    const target = requestTarget(request);
    return this.#refuse(
      generationDialect(request.method, target.path),
      421,
      `${JSON.stringify(host)} is not a host this gateway answers to (DNS rebinding protection); start it with --allowed-host ${hostName(host)} to allow it`,
      'invalid_request_error',
    );
  }

  /**
   * The checks after the host: the answer when the request goes no further (a preflight's, or a
   * refusal), else what it is admitted as. A promise only when a key or a shared slot must be awaited.
   */
  admit(request: IncomingRequest, origin: string | null): Admitted | Response | Promise<Admitted | Response> {
    const target = requestTarget(request);
    const path = target.path;
    // Same host = the gateway's own pages (the scheme may differ behind a TLS-terminating proxy).
    const crossOrigin = origin !== null && hostOf(origin) !== target.url.host;
    const corsOrigin = crossOrigin && this.#origins.has(origin) ? origin : undefined;

    if (
      request.method === 'OPTIONS' &&
      origin !== null &&
      request.headers.has('access-control-request-method')
    ) {
      if (corsOrigin === undefined) return new Response(null, { status: 403, headers: { vary: 'origin' } });
      return new Response(null, {
        status: 204,
        headers: {
          'access-control-allow-origin': corsOrigin,
          'access-control-allow-methods': 'GET, POST, OPTIONS',
          'access-control-allow-headers': CORS_ALLOWED_HEADERS,
          'access-control-max-age': '600',
          vary: 'origin, access-control-request-method, access-control-request-headers',
        },
      });
    }

    const generation = generationDialect(request.method, path);
    const api = generation !== undefined || isApiRequest(request.method, path);
    if (!api) return admitted(corsOrigin, undefined);

    if (crossOrigin && corsOrigin === undefined) {
      return this.#refuse(
        generation,
        403,
        `cross-origin requests from ${JSON.stringify(origin)} are not allowed (the gateway's CORS allow-list does not list it)`,
        'permission_error',
      );
    }
    if (this.#requireKey) {
      return this.#keyMatches(request).then((matched) =>
        matched
          ? this.#takeSlot(request, generation, corsOrigin)
          : this.#unauthorized(generation, corsOrigin),
      );
    }
    return this.#takeSlot(request, generation, corsOrigin);
  }

  #unauthorized(dialect: Dialect | undefined, corsOrigin: string | undefined): Response {
    const response = this.#refuse(
      dialect,
      401,
      'missing or invalid API key: send "Authorization: Bearer <key>" or "X-API-Key: <key>"',
      'authentication_error',
    );
    response.headers.set('www-authenticate', 'Bearer');
    return withCors(response, corsOrigin);
  }

  /** The stream limit: a generation request takes a slot, or gets the 429. Others pass as they are. */
  #takeSlot(
    request: IncomingRequest,
    generation: Dialect | undefined,
    corsOrigin: string | undefined,
  ): Admitted | Response | Promise<Admitted | Response> {
    // Streams are counted only to limit them: with no limit, a response is passed on untouched.
    const maxStreams = this.#maxStreams;
    if (generation === undefined || maxStreams === undefined) return admitted(corsOrigin, undefined);
    const slots = this.#slots;
    if (slots === undefined) {
      return this.inFlight >= maxStreams
        ? this.#tooMany(generation, maxStreams, corsOrigin)
        : this.#hold(request, corsOrigin);
    }
    return Promise.resolve(slots.acquire()).then((acquired) =>
      acquired ? this.#hold(request, corsOrigin) : this.#tooMany(generation, maxStreams, corsOrigin),
    );
  }

  #tooMany(dialect: Dialect, maxStreams: number, corsOrigin: string | undefined): Response {
    const retryAfter = this.#retryAfter;
    const response = this.#refuse(
      dialect,
      429,
      `too many concurrent streams: this gateway serves at most ${maxStreams} at once; retry after ${retryAfter} s`,
      'rate_limit_error',
    );
    response.headers.set('retry-after', retryAfter);
    return withCors(response, corsOrigin);
  }

  /** The request holds a slot until its response is over, or its client leaves. */
  #hold(request: IncomingRequest, corsOrigin: string | undefined): Admitted {
    this.inFlight += 1;
    const slots = this.#slots;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.inFlight -= 1;
      slots?.release();
      request.signal.removeEventListener('abort', release);
    };
    // A client that leaves frees its slot even before its body is cancelled.
    request.signal.addEventListener('abort', release, { once: true });
    return { corsOrigin, release };
  }

  #refuse(dialect: Dialect | undefined, status: number, message: string, errorType: string): Response {
    this.#options.metrics?.rejected.inc({ route: dialect?.id ?? 'other', status: String(status) });
    const error = (dialect ?? getDialect('openai-chat')).errorResponse({ status, message, errorType });
    return new Response(error.body, {
      status: error.status,
      headers: { 'content-type': error.contentType, 'cache-control': 'no-store' },
    });
  }

  async #keyMatches(request: IncomingRequest): Promise<boolean> {
    const presented = presentedKey(request);
    if (presented === undefined) return false;
    // Fixed-length digests: the comparison takes the same time whatever the key's length or content,
    // and every key is compared (no early exit), so timing tells nothing about which bytes matched.
    const digest = await sha256(presented);
    let matched = 0;
    for (const known of await this.#keyDigests) {
      let diff = 0;
      for (let i = 0; i < known.length; i++) diff |= known[i]! ^ digest[i]!;
      matched |= 1 ^ ((diff | -diff) >>> 31);
    }
    // Who opened a stream is who may resume it: the gateway reads this digest, never a header.
    if (matched === 1) setClientOwner(request, digest);
    return matched === 1;
  }
}

/** The response's CORS headers for an allowed cross origin (none for undefined). */
export function withCors(response: Response, origin: string | undefined): Response {
  if (origin === undefined) return response;
  response.headers.set('access-control-allow-origin', origin);
  response.headers.set('access-control-expose-headers', CORS_EXPOSED_HEADERS);
  response.headers.append('vary', 'origin');
  return response;
}

function admitted(corsOrigin: string | undefined, release: (() => void) | undefined): Admitted {
  return corsOrigin === undefined && release === undefined ? ADMITTED : { corsOrigin, release };
}

/** The dialect of a generation request (the routes that stream), else undefined. */
function generationDialect(method: string, path: string): Dialect | undefined {
  if ((path === '/' || path === '/generate') && method === 'POST') return getDialect('tgi');
  return dialectForPath(path);
}

/**
 * Whether a request is the API's (a key asked, CORS checked): any method but GET and HEAD; and GETs of
 * the API's paths — `/v1/…`, `/api/…`, the raw simulator's `/sim/…` (its `/sim/v1/models` too: issue
 * 30), and anything under a generation route (`/responses/{id}`, the Responses cursor without `/v1`).
 */
function isApiRequest(method: string, path: string): boolean {
  if (method !== 'GET' && method !== 'HEAD') return true;
  if (API_PATHS.has(path) || path.startsWith('/v1/') || path.startsWith('/api/') || path.startsWith('/sim/'))
    return true;
  for (const prefix of GENERATION_PREFIXES) if (path.startsWith(prefix)) return true;
  return false;
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
