import { isRecord, type JsonRecord } from '../common/json-fields.ts';
import type { DecoderOptions } from '../dialect.ts';
import { OllamaLineDecoder, type OllamaLineShape } from '../ollama-family/ollama-line-decoder.ts';

/**
 * `/api/chat` lines (`api.ChatResponse`): content, thinking and tool calls under `message`. A line with
 * no `message` (very old builds' done line) still counts when it has `done`; a `response` means
 * /api/generate.
 */
const CHAT_LINE: OllamaLineShape = {
  dialect: 'ollama-chat',
  endpoint: '/api/chat',
  textField: 'content',
  parts: (payload: JsonRecord) => {
    const message = payload.message;
    if (isRecord(message)) return message;
    return typeof payload.done === 'boolean' && !('response' in payload) ? NO_PARTS : undefined;
  },
};

const NO_PARTS: JsonRecord = {};

export class OllamaChatDecoder extends OllamaLineDecoder {
  constructor(options: DecoderOptions = {}) {
    super(CHAT_LINE, options);
  }
}
