import type { Dialect, DialectId, ErrorResponse } from '../dialects/dialect.ts';

/** The default context length of the simulated model, in tokens (`--sim-context-tokens`). */
export const DEFAULT_CONTEXT_TOKENS = 32768;

type Server = 'llamacpp' | 'vllm' | 'tgi' | 'ollama';

/** Which server a dialect and flavor imitate (the flavors are named after the servers). */
function serverOf(dialect: DialectId, flavor: string): Server {
  if (dialect === 'llamacpp' || flavor.startsWith('llamacpp')) return 'llamacpp';
  if (dialect === 'tgi' || flavor === 'tgi') return 'tgi';
  if (dialect === 'ollama-chat' || dialect === 'ollama-generate' || flavor.startsWith('ollama'))
    return 'ollama';
  return 'vllm';
}

/**
 * A prompt of `promptTokens` does not fit a context of `contextTokens`, answered before any streaming as
 * the imitated server answers it:
 * - llama-server (b10108 captures c11/n14/o07): 400 `exceed_context_size_error` with `n_prompt_tokens`
 *   and `n_ctx`, on every route. (Builds before Oct 2025 answered 200 with the error in-band; the legacy
 *   flavors get the modern answer.)
 * - vLLM: 400 `BadRequestError`, "This model's maximum context length is … your request has … input tokens".
 * - TGI: 422 `validation`, "Input validation error: `inputs` must have less than … tokens" (its default
 *   `max_input_tokens` is the context minus one), on its native and OpenAI routes alike.
 * - Ollama: 400 `{"error":"the input length exceeds the context length"}` (what it says with
 *   `truncate: false`; by default it truncates the prompt silently), in the route's own error shape.
 */
export function contextExceededResponse(
  dialect: Dialect,
  flavor: string,
  promptTokens: number,
  contextTokens: number,
): ErrorResponse {
  switch (serverOf(dialect.id, flavor)) {
    case 'llamacpp':
      return {
        status: 400,
        contentType: 'application/json; charset=utf-8',
        body: JSON.stringify({
          error: {
            code: 400,
            message: `request (${promptTokens} tokens) exceeds the available context size (${contextTokens} tokens), try increasing it`,
            type: 'exceed_context_size_error',
            n_prompt_tokens: promptTokens,
            n_ctx: contextTokens,
          },
        }),
      };
    case 'tgi':
      return {
        status: 422,
        contentType: 'application/json',
        body: JSON.stringify({
          error: `Input validation error: \`inputs\` must have less than ${contextTokens - 1} tokens. Given: ${promptTokens}`,
          error_type: 'validation',
        }),
      };
    case 'ollama':
      return dialect.errorResponse({
        status: 400,
        message: 'the input length exceeds the context length',
      });
    case 'vllm':
      return dialect.errorResponse({
        status: 400,
        message: `This model's maximum context length is ${contextTokens} tokens. However, your request has ${promptTokens} input tokens. Please reduce the length of the input messages.`,
        errorType: 'BadRequestError',
      });
  }
}
