import type { EncoderOptions } from '../dialect.ts';
import { OllamaLineEncoder, type OllamaWriteShape } from '../ollama-family/ollama-line-encoder.ts';

/** Ollama is the only server that writes `/api/chat`. */
export const OLLAMA_CHAT_FLAVORS: readonly string[] = ['ollama'];

/**
 * `/api/chat` lines follow `api.ChatResponse`: `message` (role, content, thinking, tool_calls), `done`,
 * `done_reason`, `logprobs` (beside `message`, not in it), then the metrics.
 */
const CHAT_SHAPE: OllamaWriteShape = {
  context: false,
  fields: (part, done, trailer) => {
    const { done_reason: doneReason, ...metrics } = trailer;
    return {
      message: {
        role: 'assistant',
        content: part.text,
        ...(part.thinking !== undefined && { thinking: part.thinking }),
        ...(part.toolCall !== undefined && { tool_calls: [part.toolCall] }),
      },
      done,
      ...(doneReason !== undefined && { done_reason: doneReason }),
      ...(part.logprobs !== undefined && { logprobs: part.logprobs }),
      ...metrics,
    };
  },
};

/** Writes Ollama's native `/api/chat` NDJSON (wire-formats.md §6.1-6.3); see `OllamaLineEncoder`. */
export class OllamaChatEncoder extends OllamaLineEncoder {
  constructor(options: EncoderOptions = {}) {
    super(CHAT_SHAPE, options);
  }
}
