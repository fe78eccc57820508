import { HttpError, RequestFailedError } from '../client/client-errors.ts';
import type { Dialect } from '../dialects/dialect.ts';
import { TokenwireError } from '../errors.ts';
import type { OutputFormat } from './output-format.ts';
import { PLAIN_TEXT_HEADERS } from './plain-text-relay.ts';
import { redactUrls } from './request-log.ts';

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

/**
 * An upstream that failed before its stream began: its 4xx passed on (the client's to fix, with
 * `retry-after`), a timeout as 504, anything else as 502. URLs in messages are redacted.
 */
export function upstreamFailureResponse(
  dialect: Dialect,
  format: OutputFormat,
  upstreamName: string,
  error: unknown,
): Response {
  if (error instanceof HttpError) {
    const status = error.status >= 400 && error.status < 500 ? error.status : 502;
    const response = errorResponse(
      dialect,
      format,
      status,
      `upstream ${upstreamName}: ${redactUrls(error.message)}`,
    );
    if (error.retryAfterSeconds !== undefined)
      response.headers.set('retry-after', String(error.retryAfterSeconds));
    return response;
  }
  const status =
    error instanceof RequestFailedError &&
    (error.code === 'connect-timeout' || error.code === 'total-timeout')
      ? 504
      : 502;
  return errorResponse(
    dialect,
    format,
    status,
    `upstream ${upstreamName}: ${redactUrls(errorMessage(error))}`,
    'upstream_error',
  );
}

export function errorMessage(error: unknown): string {
  if (TokenwireError.is(error) || error instanceof Error) return error.message;
  return String(error);
}
