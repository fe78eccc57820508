import { goJsonStringify } from '../../wire/go-json.ts';
import type { ErrorResponse } from '../dialect.ts';

/**
 * An error before any streaming on the native Ollama routes: the status with `{"error":"…"}`
 * (wire-formats.md §6.3), written by gin's `c.JSON`, so Go-escaped and typed
 * `application/json; charset=utf-8` (the same writer as the non-streaming answer, §6.1).
 */
export function ollamaErrorResponse(error: {
  status: number;
  message: string;
  errorType?: string | undefined;
}): ErrorResponse {
  return {
    status: error.status,
    contentType: 'application/json; charset=utf-8',
    body: goJsonStringify({ error: error.message }),
  };
}
