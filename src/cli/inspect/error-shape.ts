import type { DialectId } from '../../dialects/dialect.ts';
import type { ErrorEvent } from '../../events/stream-event.ts';
import type { DecodedFrame } from './analyze-recording.ts';

/** Which server's error shape a frame is (wire-formats.md §9). */
export function errorShape(frame: DecodedFrame, event: ErrorEvent, dialect: DialectId | undefined): string {
  if (frame.frame.legacyError === true) return "llama-server's legacy `error:` line";
  const data = frame.frame.data;
  let payload: Record<string, unknown> | undefined;
  try {
    payload = JSON.parse(data) as Record<string, unknown>;
  } catch {
    return 'a non-JSON error';
  }
  const error = payload.error;
  const named = frame.frame.event;
  if (payload.type === 'error' && typeof error === 'object' && error !== null)
    return named === 'error'
      ? "Anthropic's `event: error` shape ({type: error, error: {type, message}})"
      : 'an error event of type error with a nested error object';
  if (named === 'error' && typeof payload.code === 'number' && payload.type !== 'error')
    return "llama-server's Messages shape (a flat {code, message, type} after `event: error`)";
  if (payload.type === 'error') return 'the Responses `error` event ({type: error, code, message})';
  if (payload.type === 'response.failed') return 'a `response.failed` event (its response.error)';
  if (typeof error === 'object' && error !== null && named === undefined && dialect === 'openai-responses')
    return "llama-server's Responses shape (a bare data: {error: …}, no event: line)";
  if (typeof error === 'string')
    return 'error_type' in payload ? "TGI /generate_stream's shape" : "Ollama's native error line";
  if (typeof error === 'object' && error !== null) {
    if ('http_status_code' in error) return "TGI's OpenAI-route shape";
    if (data.startsWith('{"error": {')) return "vLLM's shape (json.dumps)";
    return 'the OpenAI / llama-server shape';
  }
  if (payload.object === 'error') return "vLLM's shape before 0.10.1";
  return event.errorType === undefined ? 'an error payload' : `an error payload of type ${event.errorType}`;
}
