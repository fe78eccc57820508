import { HttpError, RequestFailedError } from '../../client/client-errors.ts';
import type { Dialect } from '../../dialects/dialect.ts';
import { snippet, TokenwireError } from '../../errors.ts';
import { type OutputFormat, PLAIN_TEXT_HEADERS } from './output-format.ts';

/** An error answered before any streaming: the route's own error body, or a bracketed line for plain text. */
export function errorResponse(
  dialect: Dialect,
  format: OutputFormat,
  status: number,
  message: string,
  errorType?: string,
): Response {
  if (format === 'text') {
    return new Response(`[tokenwire: error: ${message}]\n`, {
      status,
      headers: Object.assign({}, PLAIN_TEXT_HEADERS, { 'cache-control': 'no-store' }),
    });
  }
  const error = dialect.errorResponse({ status, message, errorType });
  return new Response(error.body, {
    status: error.status,
    headers: { 'content-type': error.contentType, 'cache-control': 'no-store' },
  });
}

/** What the client is told of an upstream failure: the status to answer and a message safe to show. */
export interface UpstreamFailure {
  status: number;
  message: string;
  errorType?: string | undefined;
}

/**
 * The status a client gets for an upstream's HTTP error. The upstream's own status passes through —
 * 4xx (the client's to fix: bad field, unknown model, 429 with `retry-after`) and 5xx alike (a 503 stays
 * "try later", a 500 stays the server's) — except where it would mislead:
 * - 401, 403, 407: the upstream refused the gateway's own credentials (clients' keys are never forwarded),
 *   so it is the gateway's configuration that is wrong, not the client's key: 502.
 * - anything outside 4xx/5xx (a redirect the fetch did not follow): 502.
 */
export function clientStatusFor(upstreamStatus: number): number {
  if (upstreamStatus === 401 || upstreamStatus === 403 || upstreamStatus === 407) return 502;
  return upstreamStatus >= 400 && upstreamStatus <= 599 ? upstreamStatus : 502;
}

/**
 * What to tell the client of an upstream that failed before its stream began, without the upstream's
 * host, path or URL (the log line keeps those): its HTTP error with its status (`clientStatusFor`) and
 * message, a timeout as 504, a refused or broken connection as 502 in words.
 */
export function describeUpstreamFailure(error: unknown): UpstreamFailure {
  if (error instanceof HttpError) {
    const status = clientStatusFor(error.status);
    const said = error.detail ?? (error.body === '' ? error.statusText : snippet(error.body));
    const detail = said === '' ? '' : `: ${withoutAddresses(said)}`;
    if (status === 502 && error.status !== 502) {
      const refused = error.status === 401 || error.status === 403 || error.status === 407;
      return {
        status,
        message: refused
          ? `the upstream refused the gateway's credentials (HTTP ${error.status}${detail}); the gateway's upstream configuration needs fixing`
          : `the upstream answered HTTP ${error.status}${detail}`,
        errorType: 'upstream_error',
      };
    }
    return { status, message: `the upstream answered HTTP ${error.status}${detail}` };
  }
  if (error instanceof RequestFailedError) {
    if (error.code === 'connect-timeout' || error.code === 'total-timeout')
      return {
        status: 504,
        message: `the upstream sent no response headers in time (${error.code === 'connect-timeout' ? 'connect' : 'total'} timeout)`,
        errorType: 'upstream_error',
      };
    if (error.code === 'aborted')
      return { status: 502, message: 'the upstream request was aborted', errorType: 'upstream_error' };
    return {
      status: 502,
      message: `the upstream failed: ${networkFailure(error)}`,
      errorType: 'upstream_error',
    };
  }
  return {
    status: 502,
    message: `the upstream failed: ${withoutAddresses(errorMessage(error))}`,
    errorType: 'upstream_error',
  };
}

/**
 * An upstream that failed before its stream began, answered in the route's error shape (`retry-after`
 * passed on). The message ends with the request id, which finds the log line that has the full detail.
 */
export function upstreamFailureResponse(
  dialect: Dialect,
  format: OutputFormat,
  error: unknown,
  requestId: string,
): Response {
  const failure = describeUpstreamFailure(error);
  const response = errorResponse(
    dialect,
    format,
    failure.status,
    `${failure.message} (request id ${requestId})`,
    failure.errorType,
  );
  if (error instanceof HttpError && error.retryAfterSeconds !== undefined)
    response.headers.set('retry-after', String(error.retryAfterSeconds));
  return response;
}

/** Socket error codes (Node's and undici's) in words a client can act on without the address. */
const NETWORK_CODES: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host not found (DNS lookup failed)',
  ETIMEDOUT: 'connection timed out',
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  UND_ERR_SOCKET: 'the connection closed',
  UND_ERR_CLOSED: 'the connection closed',
  UND_ERR_HEADERS_OVERFLOW: 'response headers too large',
  CERT_HAS_EXPIRED: 'TLS certificate expired',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'TLS certificate not trusted',
  SELF_SIGNED_CERT_IN_CHAIN: 'TLS certificate not trusted',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'TLS certificate not trusted',
  ERR_TLS_CERT_ALTNAME_INVALID: 'TLS certificate does not match the host',
};

/** A refused or broken connection in words: the socket code found along the causes, else the message. */
function networkFailure(error: RequestFailedError): string {
  let cause: unknown = error.cause;
  for (let depth = 0; depth < 5 && typeof cause === 'object' && cause !== null; depth++) {
    const code = (cause as { code?: unknown }).code;
    if (typeof code === 'string' && NETWORK_CODES[code] !== undefined) return NETWORK_CODES[code];
    cause = (cause as { cause?: unknown }).cause;
  }
  // `METHOD URL failed: why` (run-stream.ts): the why, without any address in it.
  const message = error.message;
  const marker = message.indexOf(' failed: ');
  return withoutAddresses(marker === -1 ? message : message.slice(marker + ' failed: '.length));
}

const URL_ANYWHERE = /\b[a-z][a-z0-9+.-]*:\/\/\S+/gi;
/** `host:port` (IPv4, bracketed IPv6, dotted names, localhost): what socket errors quote. */
const HOST_PORT =
  /\[[0-9a-f:.]+\](?::\d+)?|\b(?:\d{1,3}(?:\.\d{1,3}){3}|localhost|[a-z0-9-]+(?:\.[a-z0-9-]+)+):\d{1,5}\b|\b\d{1,3}(?:\.\d{1,3}){3}\b/gi;

/**
 * A message fit for a client: URLs and host:port addresses replaced by `<upstream>`. An upstream's
 * address, paths and internal names are the operator's; only the log line carries them.
 */
export function withoutAddresses(text: string): string {
  return text.replace(URL_ANYWHERE, '<upstream>').replace(HOST_PORT, '<upstream>');
}

export function errorMessage(error: unknown): string {
  if (TokenwireError.is(error) || error instanceof Error) return error.message;
  return String(error);
}
