import type { ErrorEvent } from '../../events/stream-event.ts';
import { isRecord, type JsonRecord, numberField, stringField } from './json-fields.ts';

/**
 * Recognises an error carried inside a 200 stream, in every shape the four servers use:
 * - vLLM: `{"error": {"message", "type", "param", "code"}}` (and `{"object": "error", ...}` before 0.10.1)
 * - llama.cpp: `{"error": {"code", "message", "type"}}` (and the legacy `error:` line's bare object)
 * - TGI native: `{"error": "...", "error_type": "..."}`; TGI OpenAI routes: `{"error": {"message", "http_status_code"}}`
 * - Ollama native: `{"error": "..."}`
 * Returns undefined when the payload is not an error.
 */
export function errorFromPayload(payload: JsonRecord, legacyErrorField = false): ErrorEvent | undefined {
  const error = payload.error;
  if (legacyErrorField) return errorFromObject(payload);
  if (typeof error === 'string') {
    const event: ErrorEvent = { type: 'error', message: error, raw: payload };
    const errorType = stringField(payload, 'error_type');
    if (errorType !== undefined) event.errorType = errorType;
    return event;
  }
  if (isRecord(error)) {
    const event = errorFromObject(error);
    event.raw = payload;
    return event;
  }
  if (payload.object === 'error' && typeof payload.message === 'string') return errorFromObject(payload);
  return undefined;
}

function errorFromObject(error: JsonRecord): ErrorEvent {
  const event: ErrorEvent = {
    type: 'error',
    message: stringField(error, 'message') ?? 'unknown error',
    raw: error,
  };
  const errorType = stringField(error, 'type') ?? stringField(error, 'error_type');
  if (errorType !== undefined) event.errorType = errorType;
  const status = numberField(error, 'code') ?? numberField(error, 'http_status_code');
  if (status !== undefined) event.status = status;
  return event;
}
