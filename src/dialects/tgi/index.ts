import { isRecord } from '../common/json-fields.ts';
import type { DetectProbe, Dialect, ErrorResponse } from '../dialect.ts';
import { TgiDecoder } from './decoder.ts';
import { TGI_FLAVORS, TgiEncoder } from './encoder.ts';
import { tgiFromBody, tgiToBody } from './request.ts';

export type { TgiDecoderOptions } from './decoder.ts';
export type { TgiEncoderOptions, TgiFlavor, TgiSpecialToken } from './encoder.ts';

/**
 * TGI's native `POST /generate_stream`: SSE, ending on the event with a non-null `generated_text`.
 * TGI also streams this dialect from `POST /` when the body has `stream: true`; `/` is not listed in
 * `paths` because the gateway serves its playground there.
 */
export const tgi: Dialect = {
  id: 'tgi',
  framing: 'sse',
  terminalEvent: 'an event with generated_text',
  paths: ['/generate_stream'],
  flavors: TGI_FLAVORS,
  responseHeaders: () => tgiResponseHeaders(),
  createDecoder: (options) => new TgiDecoder(options),
  createEncoder: (options) => new TgiEncoder(options),
  toRequestBody: tgiToBody,
  fromRequestBody: tgiFromBody,
  detect: detectTgi,
  errorResponse: tgiErrorResponse,
};

/** wire-formats.md §2.2: keys `index`+`token`+`generated_text` (no `index` before TGI 1.x). */
function detectTgi(probe: DetectProbe): number {
  const payload = probe.payload;
  if (isRecord(payload)) {
    if (isRecord(payload.token) && 'generated_text' in payload) return 'index' in payload ? 1 : 0.9;
    // The in-band error shape is TGI's alone (Ollama's has no `error_type`).
    if (typeof payload.error === 'string' && typeof payload.error_type === 'string') return 0.6;
  }
  if (probe.path !== undefined && /\/generate_stream\/?$/.test(probe.path)) return 0.8;
  return 0;
}

/** axum's `Sse` sets content type and no-cache; TGI adds `X-Accel-Buffering: no` (wire-formats.md §5.1). */
export function tgiResponseHeaders(): Record<string, string> {
  return { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' };
}

/**
 * `{"error": "...", "error_type": "..."}` (wire-formats.md §5.5). The type follows the status as TGI's
 * router pairs them: 429 overloaded, 5xx and 424 generation, anything else validation.
 */
export function tgiErrorResponse(error: {
  status: number;
  message: string;
  errorType?: string | undefined;
}): ErrorResponse {
  const type =
    error.errorType ??
    (error.status === 429
      ? 'overloaded'
      : error.status >= 500 || error.status === 424
        ? 'generation'
        : 'validation');
  return {
    status: error.status,
    contentType: 'application/json',
    body: JSON.stringify({ error: error.message, error_type: type }),
  };
}
