/**
 * Why a generation ended, normalized. Every server says it differently (`eos_token`, `stopped_limit`,
 * `stop_type: "limit"`, `done_reason: "length"`…); the unified value sits beside the server's own word.
 *
 * - `stop`: the model ended on its own (end-of-sequence) or on a stop string.
 * - `length`: the output cap (max tokens, context) cut the answer off. Surface it: the answer is truncated.
 * - `tool-calls`: the model stopped to call tools.
 * - `content-filter`: a filter stopped it.
 * - `error`: the server ended the generation because of a failure (vLLM `abort`, an error reason).
 * - `other`: anything else the server said.
 */
export type FinishReason = 'stop' | 'length' | 'tool-calls' | 'content-filter' | 'error' | 'other';

export const FINISH_REASONS: readonly FinishReason[] = [
  'stop',
  'length',
  'tool-calls',
  'content-filter',
  'error',
  'other',
];

/** Maps the common OpenAI-style words onto the unified reason. Dialects add their own words on top. */
export function unifyFinishReason(raw: string | null | undefined): FinishReason {
  switch (raw) {
    case 'stop':
    case 'eos':
    case 'eos_token':
    case 'stop_sequence':
    case 'word':
    case 'end_turn':
      return 'stop';
    case 'length':
    case 'limit':
    case 'max_tokens':
      return 'length';
    case 'tool_calls':
    case 'function_call':
    case 'tool_use':
      return 'tool-calls';
    case 'content_filter':
      return 'content-filter';
    case 'abort':
    case 'error':
      return 'error';
    default:
      return 'other';
  }
}
