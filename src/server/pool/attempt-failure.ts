import { HttpError, RequestFailedError } from '../../client/client-errors.ts';
import { TokenwireError } from '../../errors.ts';
import type { CallOutcome } from './replica-health.ts';

/** What a failed attempt says about its replica, and whether the request may go to another one. */
export interface AttemptFailure {
  /** What the replica's health is told. */
  outcome: Exclude<CallOutcome, 'ok'>;
  /** Another replica may take the request: nothing reached the client and the request itself is fine. */
  retryable: boolean;
  /** How long the server asked to be left alone (`Retry-After`), when it did. */
  retryAfterMs?: number | undefined;
}

/**
 * Classifies a failure before the first byte reached the client (wire-formats.md §15; retried as Olla and
 * LiteLLM retry, never after a byte was written): a refused or reset connection, a connect or headers
 * timeout, a 429, 502, 503 or 504 go to another replica; a 500 counts against the replica but is not
 * retried (the same request may fail the same way anywhere); any other 4xx says the request is bad, so
 * the replica is fine and nothing is retried. Undefined for what is not the upstream's failure (the
 * client left, the gateway closed).
 */
export function attemptFailure(error: unknown): AttemptFailure | undefined {
  if (
    error instanceof HttpError ||
    (TokenwireError.is(error) && typeof (error as HttpError).status === 'number')
  ) {
    const http = error as HttpError;
    const status = http.status;
    const retryAfterMs =
      http.retryAfterSeconds === undefined ? undefined : Math.max(0, http.retryAfterSeconds * 1000);
    if (status === 429 || status === 502 || status === 503 || status === 504)
      return { outcome: 'server-error', retryable: true, retryAfterMs };
    if (status >= 500) return { outcome: 'server-error', retryable: false };
    return undefined;
  }
  if (error instanceof RequestFailedError || TokenwireError.is(error)) {
    const code = (error as RequestFailedError).code;
    if (code === 'network') return { outcome: 'unreachable', retryable: true };
    if (code === 'connect-timeout') return { outcome: 'timeout', retryable: true };
    if (code === 'total-timeout') return { outcome: 'timeout', retryable: false };
    return undefined;
  }
  // A fetch's own failure (a whole answer's call is a plain fetch): its code, or its cause's.
  const code = errorCode(error) ?? errorCode((error as { cause?: unknown } | null)?.cause);
  if (code !== undefined && CONNECT_TIMEOUTS.has(code)) return { outcome: 'timeout', retryable: true };
  if (code !== undefined && UNREACHABLE.has(code)) return { outcome: 'unreachable', retryable: true };
  return undefined;
}

/** Node's and undici's codes for a connection that could not be made or broke before an answer. */
const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
]);
const CONNECT_TIMEOUTS = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'ETIMEDOUT']);

function errorCode(value: unknown): string | undefined {
  const code = (value as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}
