import type { Dialect } from '../dialect.ts';
import { detectOllamaNative } from '../ollama-family/ollama-detect.ts';
import { ollamaErrorResponse } from '../ollama-family/ollama-error-response.ts';
import { OllamaGenerateDecoder } from './decoder.ts';
import { OLLAMA_GENERATE_FLAVORS, OllamaGenerateEncoder } from './encoder.ts';
import { ollamaGenerateFromBody, ollamaGenerateToBody } from './request.ts';

export { OllamaGenerateDecoder } from './decoder.ts';
export { OllamaGenerateEncoder } from './encoder.ts';

/**
 * `POST /api/generate`: Ollama's native NDJSON, one `api.GenerateResponse` per line, ending on
 * `done: true` (which also carries the `context` token array unless the request was `raw`).
 */
export const ollamaGenerate: Dialect = {
  id: 'ollama-generate',
  framing: 'ndjson',
  terminalEvent: 'a line with "done": true',
  paths: ['/api/generate'],
  flavors: OLLAMA_GENERATE_FLAVORS,
  responseHeaders: () => ({ 'content-type': 'application/x-ndjson' }),
  createDecoder: (options) => new OllamaGenerateDecoder(options),
  createEncoder: (options) => new OllamaGenerateEncoder(options),
  toRequestBody: ollamaGenerateToBody,
  fromRequestBody: ollamaGenerateFromBody,
  detect: (probe) => detectOllamaNative(probe, 'generate'),
  errorResponse: ollamaErrorResponse,
};
