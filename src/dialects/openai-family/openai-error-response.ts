import type { ErrorResponse } from '../dialect.ts';

/**
 * The OpenAI error body, `{"error": {"message", "type", "param", "code"}}`, as vLLM ≥ 0.10.1 writes it
 * before a stream starts (wire-formats.md §3.8). Used by the OpenAI-style dialects.
 */
export function openAiErrorResponse(error: {
  status: number;
  message: string;
  errorType?: string | undefined;
}): ErrorResponse {
  const type =
    error.errorType ??
    (error.status === 401
      ? 'authentication_error'
      : error.status === 404
        ? 'not_found_error'
        : error.status === 429
          ? 'rate_limit_error'
          : error.status < 500
            ? 'invalid_request_error'
            : 'server_error');
  return {
    status: error.status,
    contentType: 'application/json',
    body: JSON.stringify({ error: { message: error.message, type, param: null, code: error.status } }),
  };
}
