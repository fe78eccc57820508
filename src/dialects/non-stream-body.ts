import type { Choice, Result } from '../events/result.ts';
import type { TokenLogprob } from '../events/stream-event.ts';
import { randomAlphanumeric } from './common/random-id.ts';
import { legacyCompletionsLogprobs, tokenLogprobsList } from './common/token-logprobs-json.ts';
import type { DialectId } from './dialect.ts';
import { openAiFinishWord } from './openai-family/openai-finish.ts';

/**
 * The single JSON answer a dialect's server sends for `stream: false`, built from a streamed Result
 * (the gateway always streams from its upstream, then aggregates for clients that asked for one object).
 */
export function nonStreamBody(
  dialect: DialectId,
  result: Result,
  model: string,
  now: number,
  /** The request's seed, which TGI's `details.seed` echoes (null when it gave none). */
  seed?: number,
): Record<string, unknown> {
  const created = Math.floor(now / 1000);
  // Only complete answers get here, so the reason is never `error`; the raw word is not kept in a Result.
  const finish = openAiFinishWord({ type: 'finish', reason: result.finishReason ?? 'stop', raw: null });
  const usage = {
    prompt_tokens: result.usage?.inputTokens ?? 0,
    completion_tokens: result.usage?.outputTokens ?? result.metrics.outputTokens ?? 0,
    total_tokens:
      (result.usage?.inputTokens ?? 0) + (result.usage?.outputTokens ?? result.metrics.outputTokens ?? 0),
  };
  switch (dialect) {
    case 'openai-chat': {
      const message: Record<string, unknown> = { role: 'assistant', content: result.text };
      if (result.reasoning !== '') message.reasoning_content = result.reasoning;
      if (result.toolCalls.length > 0) {
        message.tool_calls = result.toolCalls.map((call) => ({
          id: call.id,
          type: 'function',
          function: { name: call.name, arguments: call.arguments },
        }));
      }
      return {
        id: result.id ?? `chatcmpl-${created}`,
        object: 'chat.completion',
        created,
        model,
        choices: answers(result).map((answer) => ({
          index: answer.index,
          message: answer.index === 0 ? message : { role: 'assistant', content: answer.text },
          logprobs:
            answer.logprobs === undefined ? null : { content: tokenLogprobsList(answer.logprobs, 'openai') },
          finish_reason: answer.index === 0 ? finish : choiceFinish(answer),
        })),
        usage,
      };
    }
    case 'openai-completions':
      return {
        id: result.id ?? `cmpl-${created}`,
        object: 'text_completion',
        created,
        model,
        choices: answers(result).map((answer) => ({
          index: answer.index,
          text: answer.text,
          logprobs: answer.logprobs === undefined ? null : legacyCompletionsLogprobs(answer.logprobs, 0),
          finish_reason: answer.index === 0 ? finish : choiceFinish(answer),
        })),
        usage,
      };
    case 'ollama-chat':
    case 'ollama-generate': {
      const body: Record<string, unknown> = { model, created_at: new Date(now).toISOString() };
      if (dialect === 'ollama-chat') {
        const message: Record<string, unknown> = { role: 'assistant', content: result.text };
        if (result.reasoning !== '') message.thinking = result.reasoning;
        if (result.toolCalls.length > 0) {
          message.tool_calls = result.toolCalls.map((call, index) => ({
            id: call.id,
            function: { index, name: call.name, arguments: call.input ?? {} },
          }));
        }
        body.message = message;
      } else {
        body.response = result.text;
        if (result.reasoning !== '') body.thinking = result.reasoning;
      }
      body.done = true;
      body.done_reason = result.finishReason === 'length' ? 'length' : 'stop';
      // Every line's `logprobs` together (Ollama's `writeChatResponse`): after `done_reason` on /api/chat,
      // last on /api/generate (Go struct order).
      const logprobs =
        result.logprobs === undefined || result.logprobs.length === 0
          ? undefined
          : tokenLogprobsList(result.logprobs, 'ollama');
      if (logprobs !== undefined && dialect === 'ollama-chat') body.logprobs = logprobs;
      const t = result.timings;
      const ns = (ms: number | undefined) => (ms === undefined ? undefined : Math.round(ms * 1e6));
      const metrics: Record<string, number | undefined> = {
        total_duration: ns(t?.totalMs ?? result.metrics.totalMs),
        load_duration: ns(t?.loadMs),
        prompt_eval_count: result.usage?.inputTokens,
        prompt_eval_duration: ns(t?.promptEvalMs),
        eval_count: result.usage?.outputTokens ?? result.metrics.outputTokens,
        eval_duration: ns(t?.evalMs),
      };
      for (const [key, value] of Object.entries(metrics))
        if (value !== undefined && value !== 0) body[key] = value;
      if (logprobs !== undefined && dialect === 'ollama-generate') body.logprobs = logprobs;
      return body;
    }
    case 'llamacpp': {
      const body: Record<string, unknown> = {
        index: 0,
        content: result.text,
        tokens: [],
        id_slot: 0,
        stop: true,
        model,
        tokens_predicted: usage.completion_tokens,
        tokens_evaluated: usage.prompt_tokens,
        stop_type:
          result.finishReason === 'length' ? 'limit' : result.stopSequence !== undefined ? 'word' : 'eos',
        stopping_word: result.stopSequence ?? '',
      };
      if (result.logprobs !== undefined)
        body.completion_probabilities = tokenLogprobsList(result.logprobs, 'llamacpp');
      return body;
    }
    case 'tgi':
      return {
        generated_text: result.text,
        details: {
          finish_reason:
            result.finishReason === 'length' ? 'length' : result.stopSequence ? 'stop_sequence' : 'eos_token',
          generated_tokens: usage.completion_tokens,
          seed: seed ?? null,
        },
      };
    case 'openai-responses': {
      // OpenAI's Response object: reasoning, message and calls as output items; a capped answer is
      // `incomplete` with its reason, and so is its cut message, as the stream's terminal event says.
      const cut = result.finishReason === 'length' || result.finishReason === 'content-filter';
      const output: Record<string, unknown>[] = [];
      if (result.reasoning !== '') {
        output.push({
          id: `rs_${created}`,
          type: 'reasoning',
          summary: [],
          content: [{ type: 'reasoning_text', text: result.reasoning }],
          status: 'completed',
        });
      }
      if (result.text !== '' || result.toolCalls.length === 0) {
        output.push({
          id: `msg_${created}`,
          type: 'message',
          status: cut ? 'incomplete' : 'completed',
          role: 'assistant',
          content: [
            {
              type: 'output_text',
              annotations: [],
              logprobs: tokenLogprobsList(result.logprobs ?? [], 'responses-part'),
              text: result.text,
            },
          ],
        });
      }
      for (const call of result.toolCalls) {
        output.push({
          id: `fc_${call.id}`,
          type: 'function_call',
          status: 'completed',
          arguments: call.arguments,
          call_id: call.id,
          name: call.name,
        });
      }
      return {
        // A Response's id is `resp_…` (the gateway replaces it with the one it stores it under); an
        // upstream's `chatcmpl-…` id is not one.
        id: result.id?.startsWith('resp_') ? result.id : `resp_${randomAlphanumeric(32)}`,
        object: 'response',
        created_at: created,
        status: cut ? 'incomplete' : 'completed',
        error: null,
        incomplete_details: cut
          ? { reason: result.finishReason === 'length' ? 'max_output_tokens' : 'content_filter' }
          : null,
        model,
        output,
        usage: {
          input_tokens: usage.prompt_tokens,
          input_tokens_details: { cached_tokens: result.usage?.cachedInputTokens ?? 0 },
          output_tokens: usage.completion_tokens,
          output_tokens_details: { reasoning_tokens: result.usage?.reasoningTokens ?? 0 },
          total_tokens: usage.total_tokens,
        },
      };
    }
    case 'anthropic-messages': {
      // Anthropic's Message object; `input_tokens` leaves the cached prompt out, as the stream's does.
      const content: Record<string, unknown>[] = [];
      if (result.reasoning !== '')
        content.push({ type: 'thinking', thinking: result.reasoning, signature: '' });
      if (result.text !== '') content.push({ type: 'text', text: result.text });
      for (const call of result.toolCalls) {
        content.push({ type: 'tool_use', id: call.id, name: call.name, input: call.input ?? {} });
      }
      const cached = result.usage?.cachedInputTokens ?? 0;
      return {
        id: result.id ?? `msg_${created}`,
        type: 'message',
        role: 'assistant',
        model,
        content,
        stop_reason:
          result.finishReason === 'length'
            ? 'max_tokens'
            : result.finishReason === 'tool-calls'
              ? 'tool_use'
              : result.stopSequence !== undefined
                ? 'stop_sequence'
                : 'end_turn',
        stop_sequence: result.stopSequence ?? null,
        usage: {
          input_tokens: Math.max(0, usage.prompt_tokens - cached),
          cache_read_input_tokens: cached,
          output_tokens: usage.completion_tokens,
        },
      };
    }
  }
}

interface Answer {
  index: number;
  text: string;
  logprobs: TokenLogprob[] | undefined;
  choice?: Choice;
}

/** Every answer of a Result by index (choice 0 from the top level), with its log probabilities. */
function answers(result: Result): Answer[] {
  const zero = { index: 0, text: result.text, logprobs: result.logprobs };
  if (result.choices === undefined) return [zero];
  const out: Answer[] = [zero];
  for (const choice of result.choices) {
    if (choice.index !== 0)
      out.push({ index: choice.index, text: choice.text, logprobs: choice.logprobs, choice });
  }
  return out;
}

function choiceFinish(answer: Answer): string {
  return openAiFinishWord({ type: 'finish', reason: answer.choice?.finishReason ?? 'stop', raw: null });
}
