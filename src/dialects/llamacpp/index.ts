import { isRecord } from '../common/json-fields.ts';
import type { DetectProbe, Dialect, ErrorResponse } from '../dialect.ts';
import { LlamacppDecoder } from './decoder.ts';
import { LLAMACPP_FLAVORS, LlamacppEncoder, llamacppErrorType } from './encoder.ts';
import { llamacppFromBody, llamacppToBody } from './request.ts';

export type { LlamacppFlavor } from './encoder.ts';

/** llama-server's native `POST /completion` (also `/completions`): SSE, ending on the `"stop": true` event. */
export const llamacpp: Dialect = {
  id: 'llamacpp',
  framing: 'sse',
  terminalEvent: 'an event with "stop": true',
  paths: ['/completion', '/completions'],
  flavors: LLAMACPP_FLAVORS,
  responseHeaders: (flavor) => llamacppResponseHeaders(flavor),
  createDecoder: (options) => new LlamacppDecoder(options),
  createEncoder: (options) => new LlamacppEncoder(options),
  toRequestBody: llamacppToBody,
  fromRequestBody: llamacppFromBody,
  detect: detectLlamacpp,
  errorResponse: llamacppErrorResponse,
};

/**
 * wire-formats.md §2.2: keys `index`+`content`+`stop`+`id_slot` (both eras' partial events have them);
 * a boolean `stop` beside llama.cpp's counters or stop fields; else the endpoint path.
 */
function detectLlamacpp(probe: DetectProbe): number {
  const payload = probe.payload;
  if (isRecord(payload)) {
    if ('index' in payload && 'content' in payload && 'stop' in payload && 'id_slot' in payload) return 1;
    if (
      typeof payload.stop === 'boolean' &&
      ('tokens_predicted' in payload || 'stop_type' in payload || 'stopped_eos' in payload)
    ) {
      return 0.9;
    }
  }
  const path = probe.path;
  if (path !== undefined) {
    if (/\/completion\/?$/.test(path)) return 0.8;
    if (/\/completions\/?$/.test(path) && !/\/(v1|chat)\/completions\/?$/.test(path)) return 0.6;
  }
  return 0;
}

/** The server's headers: `X-Accel-Buffering: no` since mid 2026 (wire-formats.md §4.1). */
export function llamacppResponseHeaders(flavor: string | undefined): Record<string, string> {
  if (flavor === 'legacy') return { 'content-type': 'text/event-stream', server: 'llama.cpp' };
  return { 'content-type': 'text/event-stream', server: 'llama.cpp', 'x-accel-buffering': 'no' };
}

/** `{"error": {"code", "message", "type"}}` with the server's JSON content type (wire-formats.md §4.8). */
export function llamacppErrorResponse(error: {
  status: number;
  message: string;
  errorType?: string | undefined;
}): ErrorResponse {
  return {
    status: error.status,
    contentType: 'application/json; charset=utf-8',
    body: JSON.stringify({
      error: {
        code: error.status,
        message: error.message,
        type: error.errorType ?? llamacppErrorType(error.status),
      },
    }),
  };
}
