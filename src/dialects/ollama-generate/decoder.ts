import type { JsonRecord } from '../common/json-fields.ts';
import type { DecoderOptions } from '../dialect.ts';
import { OllamaLineDecoder, type OllamaLineShape } from '../ollama-family/ollama-line-decoder.ts';

/**
 * `/api/generate` lines (`api.GenerateResponse`): `response`, `thinking` and `tool_calls` at the top; the
 * done line's usage keeps the `context` token array in its `raw`. A `message` means /api/chat.
 */
const GENERATE_LINE: OllamaLineShape = {
  dialect: 'ollama-generate',
  endpoint: '/api/generate',
  textField: 'response',
  parts: (payload: JsonRecord) =>
    typeof payload.response === 'string' || (typeof payload.done === 'boolean' && !('message' in payload))
      ? payload
      : undefined,
};

export class OllamaGenerateDecoder extends OllamaLineDecoder {
  constructor(options: DecoderOptions = {}) {
    super(GENERATE_LINE, options);
  }
}
