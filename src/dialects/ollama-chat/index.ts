import type { Dialect } from '../dialect.ts';
import { detectOllamaNative } from '../ollama-family/ollama-detect.ts';
import { ollamaErrorResponse } from '../ollama-family/ollama-error-response.ts';
import { OllamaChatDecoder } from './decoder.ts';
import { OLLAMA_CHAT_FLAVORS, OllamaChatEncoder } from './encoder.ts';
import { ollamaChatFromBody, ollamaChatToBody } from './request.ts';

export { OllamaChatDecoder } from './decoder.ts';
export { OllamaChatEncoder } from './encoder.ts';

/** `POST /api/chat`: Ollama's native NDJSON, one `api.ChatResponse` per line, ending on `done: true`. */
export const ollamaChat: Dialect = {
  id: 'ollama-chat',
  framing: 'ndjson',
  terminalEvent: 'a line with "done": true',
  paths: ['/api/chat'],
  flavors: OLLAMA_CHAT_FLAVORS,
  responseHeaders: () => ({ 'content-type': 'application/x-ndjson' }),
  createDecoder: (options) => new OllamaChatDecoder(options),
  createEncoder: (options) => new OllamaChatEncoder(options),
  toRequestBody: ollamaChatToBody,
  fromRequestBody: ollamaChatFromBody,
  detect: (probe) => detectOllamaNative(probe, 'chat'),
  errorResponse: ollamaErrorResponse,
};
