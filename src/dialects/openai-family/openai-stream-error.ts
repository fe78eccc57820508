import { pythonJsonDumps } from '../../wire/python-json.ts';
import type { FrameSink, MidStreamError } from '../dialect.ts';

/**
 * A mid-stream error on an OpenAI-style route, as each server writes it (wire-formats.md §9), then what
 * follows it. Returns false for the Ollama flavors, whose OpenAI layer has no error shape: the encoder
 * writes its own empty chunk there.
 * - vLLM: `json.dumps` style (spaced, ASCII-escaped), then `[DONE]`;
 * - llama-server 2026: `{"error":{code,message,type}}`, then nothing; before Sep 2025 the non-SSE
 *   `error:` line, then `[DONE]`;
 * - TGI: `{"error":{message,http_status_code: 422}}` (always 422, no type), then `[DONE]`.
 */
export function writeOpenAiStreamError(flavor: string, error: MidStreamError, sink: FrameSink): boolean {
  const status = error.status ?? 500;
  switch (flavor) {
    case 'vllm':
      sink(
        pythonJsonDumps({
          error: {
            message: error.message,
            type: error.errorType ?? vllmErrorType(status),
            param: null,
            code: status,
          },
        }),
      );
      sink('[DONE]');
      return true;
    case 'llamacpp':
      sink(
        JSON.stringify({
          error: { code: status, message: error.message, type: error.errorType ?? 'server_error' },
        }),
      );
      return true;
    case 'llamacpp-legacy':
      sink(
        JSON.stringify({ code: status, message: error.message, type: error.errorType ?? 'server_error' }),
        'legacy-error-field',
      );
      sink('[DONE]');
      return true;
    case 'tgi':
      sink(JSON.stringify({ error: { message: error.message, http_status_code: 422 } }));
      sink('[DONE]');
      return true;
    default:
      return false;
  }
}

/** vLLM 2026 classifies mid-stream failures by status (`create_error_response`). */
function vllmErrorType(status: number): string {
  if (status === 400) return 'BadRequestError';
  if (status === 404) return 'NotFoundError';
  return 'InternalServerError';
}
