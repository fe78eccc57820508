import type { IncomingHeaders } from './incoming-request.ts';

/** Longest `x-request-id` accepted from a client; longer ones are replaced (they end up in logs and headers). */
const MAX_REQUEST_ID = 128;
/** Visible ASCII only: no spaces, quotes or control characters that could forge a log line or a header. */
const SAFE_REQUEST_ID = /^[\x21\x23-\x7e]+$/;

/**
 * The request's id: the client's `x-request-id` when it is a plausible one (1-128 visible ASCII
 * characters, no quotes), else a fresh UUID. It goes back in the response headers, into the log
 * line and the span, and upstream.
 */
export function requestIdFor(headers: IncomingHeaders): string {
  const given = headers.get('x-request-id');
  if (given !== null && given.length <= MAX_REQUEST_ID && SAFE_REQUEST_ID.test(given)) return given;
  return crypto.randomUUID();
}
