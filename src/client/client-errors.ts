import { snippet, TokenwireError } from '../errors.ts';

/**
 * The server answered with an HTTP error before any streaming. Carries the method, URL, status and a
 * bounded piece of the body (read before throwing, so the caller does not have to).
 */
export class HttpError extends TokenwireError {
  readonly method: string;
  readonly url: string;
  readonly status: number;
  readonly statusText: string;
  /** At most `MAX_ERROR_BODY_BYTES` of the body, decoded. */
  readonly body: string;
  readonly headers: Record<string, string>;
  /** Seconds the server asked to wait (`Retry-After`), when it did. */
  readonly retryAfterSeconds: number | undefined;
  /**
   * The message inside the server's error body (`{"error": {"message"}}`, `{"error": "..."}`), when any:
   * quoted and bounded as `snippet()` writes it.
   */
  readonly detail: string | undefined;

  constructor(init: {
    method: string;
    url: string;
    status: number;
    statusText: string;
    body: string;
    headers: Record<string, string>;
  }) {
    const detail = serverMessage(init.body);
    super(
      'http-status',
      `${init.method} ${init.url} failed with HTTP ${init.status}${init.statusText ? ` ${init.statusText}` : ''}${
        detail === undefined ? (init.body ? `: ${snippet(init.body)}` : '') : `: ${detail}`
      }`,
    );
    this.name = 'HttpError';
    this.method = init.method;
    this.url = init.url;
    this.status = init.status;
    this.statusText = init.statusText;
    this.body = init.body;
    this.headers = init.headers;
    this.detail = detail;
    const retryAfter = Number(init.headers['retry-after']);
    this.retryAfterSeconds = Number.isFinite(retryAfter) ? retryAfter : undefined;
  }

  /**
   * Whether the same request can succeed later: 408, 409, 425, 429, and 5xx other than 501 (not
   * implemented stays so) — except a 500 whose body says the request itself is invalid
   * (`describesInvalidRequest`: llama-server answers some of its clients' mistakes with 500 — unparsable
   * JSON still in b10108, unsupported fields in b4747).
   */
  get isRetryable(): boolean {
    const status = this.status;
    if (status === 408 || status === 409 || status === 425 || status === 429) return true;
    if (status < 500 || status > 599 || status === 501) return false;
    return !(status === 500 && describesInvalidRequest(this.body));
  }
}

/**
 * What llama-server's 500s for a client's mistake say (real captures of b4747 and b10108): its JSON
 * library's parse errors, and the checks of its request parsing, which threw into the generic 500 handler.
 * Unanchored: a gateway quotes them inside its own message.
 */
const INVALID_REQUEST_MESSAGES: readonly RegExp[] = [
  /\[json\.exception\./, // nlohmann::json on the request body: parse_error, out_of_range (missing key), type_error
  /cannot use tools with stream/i,
  /requires --jinja/i, // "tools param requires --jinja flag": the server's configuration, not a passing state
  /only one completion choice is allowed/i,
  /unsupported param/i,
  /\bnot supported\b/i,
  /\b(?:invalid|missing) ['"a-z]/i,
  /\bmust be\b/i,
  /\bcan be specified, but not both\b/i,
];

/** Error types that name the request as the fault (OpenAI's, vLLM's, TGI's validation). */
const INVALID_REQUEST_TYPES = new Set(['invalid_request_error', 'BadRequestError', 'validation']);

/**
 * Whether an error body says the request itself is invalid, whatever the status: its type is a
 * validation type, or its message is one of llama-server's request-parsing failures. A retry of such a
 * request fails the same way.
 */
export function describesInvalidRequest(body: string): boolean {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return false;
  }
  if (typeof value !== 'object' || value === null) return false;
  const record = value as { error?: unknown; error_type?: unknown; message?: unknown };
  let message: unknown = record.message;
  let type: unknown = record.error_type;
  if (typeof record.error === 'string') message = record.error;
  else if (typeof record.error === 'object' && record.error !== null) {
    const inner = record.error as { message?: unknown; type?: unknown };
    message = inner.message;
    type ??= inner.type;
  }
  if (typeof type === 'string' && INVALID_REQUEST_TYPES.has(type)) return true;
  return typeof message === 'string' && INVALID_REQUEST_MESSAGES.some((pattern) => pattern.test(message));
}

export const MAX_ERROR_BODY_BYTES = 4096;

/** The message inside the error bodies the four servers send (`{"error": {...}}`, `{"error": "..."}`). */
function serverMessage(body: string): string | undefined {
  try {
    const value = JSON.parse(body) as unknown;
    if (typeof value !== 'object' || value === null) return undefined;
    const error = (value as { error?: unknown }).error;
    if (typeof error === 'string') return snippet(error);
    if (typeof error === 'object' && error !== null) {
      const message = (error as { message?: unknown }).message;
      if (typeof message === 'string') return snippet(message);
    }
    const message = (value as { message?: unknown }).message;
    return typeof message === 'string' ? snippet(message) : undefined;
  } catch {
    return undefined;
  }
}

export type RequestFailureCode =
  | 'connect-timeout'
  | 'total-timeout'
  | 'aborted'
  | 'network'
  | 'invalid-request';

/** The request failed before a response arrived: timeout, abort, refused connection, bad arguments. */
export class RequestFailedError extends TokenwireError {
  declare readonly code: RequestFailureCode;
  readonly url: string | undefined;

  constructor(code: RequestFailureCode, message: string, options: { url?: string; cause?: unknown } = {}) {
    super(code, message, options.cause === undefined ? {} : { cause: options.cause });
    this.name = 'RequestFailedError';
    this.url = options.url;
  }
}

/** Thrown by the event iterator at the end of an incomplete stream when `throwOnIncomplete` is set. */
export class IncompleteStreamError extends TokenwireError {
  readonly reason: string;
  constructor(reason: string, message: string) {
    super('incomplete-stream', message);
    this.name = 'IncompleteStreamError';
    this.reason = reason;
  }
}
