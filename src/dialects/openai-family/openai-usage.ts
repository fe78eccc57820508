import type { Usage } from '../../events/usage.ts';
import { type JsonRecord, numberField, recordField } from '../common/json-fields.ts';

/** Reads an OpenAI-style `usage` object (vLLM, llama.cpp, TGI and Ollama OpenAI routes). */
export function parseOpenAiUsage(usage: JsonRecord): Usage {
  const out: Usage = { raw: usage };
  const input = numberField(usage, 'prompt_tokens');
  const output = numberField(usage, 'completion_tokens');
  const total = numberField(usage, 'total_tokens');
  if (input !== undefined) out.inputTokens = input;
  if (output !== undefined) out.outputTokens = output;
  if (total !== undefined) out.totalTokens = total;
  const cached = recordField(usage, 'prompt_tokens_details');
  if (cached !== undefined) {
    const n = numberField(cached, 'cached_tokens');
    if (n !== undefined) out.cachedInputTokens = n;
  }
  const completion = recordField(usage, 'completion_tokens_details');
  if (completion !== undefined) {
    const n = numberField(completion, 'reasoning_tokens');
    if (n !== undefined) out.reasoningTokens = n;
  }
  return out;
}

/** True for the all-zero placeholder usage Ollama's OpenAI layer puts on every chunk. */
export function isZeroUsage(usage: JsonRecord): boolean {
  return usage.prompt_tokens === 0 && usage.completion_tokens === 0 && usage.total_tokens === 0;
}

/**
 * Key order of the `usage` object differs by server: vLLM writes prompt, total, completion;
 * llama.cpp completion, prompt, total; TGI and Ollama prompt, completion, total.
 */
export type UsageOrder = 'vllm' | 'llamacpp' | 'standard';

export function openAiUsageObject(usage: Usage, order: UsageOrder): JsonRecord {
  const prompt = usage.inputTokens ?? 0;
  const completion = usage.outputTokens ?? 0;
  const total = usage.totalTokens ?? prompt + completion;
  switch (order) {
    case 'vllm':
      return { prompt_tokens: prompt, total_tokens: total, completion_tokens: completion };
    case 'llamacpp':
      return { completion_tokens: completion, prompt_tokens: prompt, total_tokens: total };
    case 'standard':
      return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: total };
  }
}
