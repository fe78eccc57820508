import type { EncoderOptions } from '../dialect.ts';
import { OllamaLineEncoder, type OllamaWriteShape } from '../ollama-family/ollama-line-encoder.ts';

/** Ollama is the only server that writes `/api/generate`. */
export const OLLAMA_GENERATE_FLAVORS: readonly string[] = ['ollama'];

/**
 * `/api/generate` lines follow `api.GenerateResponse`: `response`, `thinking`, `done`, then the trailer
 * (`done_reason`, `context`, metrics), then `tool_calls`, then `logprobs`.
 */
const GENERATE_SHAPE: OllamaWriteShape = {
  context: true,
  fields: (part, done, trailer) => ({
    response: part.text,
    ...(part.thinking !== undefined && { thinking: part.thinking }),
    done,
    ...trailer,
    ...(part.toolCall !== undefined && { tool_calls: [part.toolCall] }),
    ...(part.logprobs !== undefined && { logprobs: part.logprobs }),
  }),
};

/** Writes Ollama's native `/api/generate` NDJSON (wire-formats.md §6.1-6.3); see `OllamaLineEncoder`. */
export class OllamaGenerateEncoder extends OllamaLineEncoder {
  constructor(options: EncoderOptions = {}) {
    super(GENERATE_SHAPE, options);
  }
}
