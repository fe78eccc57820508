import type { TextEvent } from '../../events/stream-event.ts';
import type { JsonRecord } from '../common/json-fields.ts';
import { parseTokenLogprobs } from '../common/token-logprobs.ts';
import type { DecoderOptions, Emit } from '../dialect.ts';
import { OpenAiChunkDecoder } from '../openai-family/openai-chunk-decoder.ts';

/**
 * Decodes `text_completion` streams (`POST /v1/completions`) from every server that writes them:
 * vLLM (every field on every chunk, `"usage":null`), llama-server (`choices` first, `timings` on the
 * last chunk), TGI (`"finish_reason":""` until the last chunk, raw `eos_token`/`stop_sequence`) and
 * Ollama's OpenAI layer (an all-zero `usage` on every chunk). The shared parts are in OpenAiChunkDecoder.
 */
export class OpenAiCompletionsDecoder extends OpenAiChunkDecoder {
  constructor(options: DecoderOptions = {}) {
    super('openai-completions', options);
  }

  protected choice(choice: JsonRecord, emit: Emit, index: number): void {
    const text = choice.text;
    if (typeof text !== 'string' || text === '') return;
    const event: TextEvent = { type: 'text', text };
    if (choice.logprobs !== undefined && choice.logprobs !== null) {
      const logprobs = parseTokenLogprobs(choice.logprobs);
      if (logprobs !== undefined) event.logprobs = logprobs;
    }
    if (index !== 0) event.choice = index;
    emit(event);
  }
}
