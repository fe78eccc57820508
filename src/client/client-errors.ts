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
    const retryAfter = Number(init.headers['retry-after']);
    this.retryAfterSeconds = Number.isFinite(retryAfter) ? retryAfter : undefined;
  }

  /** 408, 409, 429 and 5xx are worth retrying. */
  get isRetryable(): boolean {
    return this.status === 408 || this.status === 409 || this.status === 429 || this.status >= 500;
  }
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
