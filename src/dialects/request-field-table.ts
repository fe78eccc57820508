import type { ChatRequest } from '../events/chat-request.ts';
import type { DialectId } from './dialect.ts';

/** The families the translation table groups request fields in. */
export type FieldFamily =
  | 'sampling'
  | 'limits'
  | 'stop'
  | 'structured output'
  | 'tools'
  | 'reasoning'
  | 'multimodal'
  | 'logprobs'
  | 'n';

/**
 * One normalized request field and where each dialect keeps it: the body path (`options.temperature`,
 * `parameters.max_new_tokens`), or `null` when the dialect has no counterpart. A request translated to
 * an upstream whose cell is `null` is refused with a 400 naming the field (or the field is dropped, and
 * listed in a response header, when the request or the operator allows it: `drop_params`).
 */
export interface FieldRow {
  family: FieldFamily;
  field: keyof ChatRequest;
  /** The body path per dialect; a dialect missing from the record has no counterpart either. */
  wire: Partial<Record<DialectId, string | null>>;
  /** Values every dialect means when the field is absent: asking for them needs no counterpart. */
  isDefault?: ((value: unknown) => boolean) | undefined;
  /** What the cell means beyond its path, for the README table (one line). */
  note?: string | undefined;
}

/**
 * Where each normalized request field lives in each dialect's body. Request mapping (each dialect's
 * `request.ts`) writes and reads these paths, test/dialects/request-field-table.test.ts checks that it
 * does, and docs/translation.md is generated from this table (`node scripts/translation-table.mjs`), so
 * the three cannot drift. Fields a dialect reads that have no row here travel in the request's `extra`:
 * they reach a same-dialect upstream unchanged and are refused (or dropped, when allowed) on any other.
 */
export const REQUEST_FIELDS: readonly FieldRow[] = [
  {
    family: 'sampling',
    field: 'temperature',
    wire: {
      'openai-chat': 'temperature',
      'openai-completions': 'temperature',
      'ollama-chat': 'options.temperature',
      'ollama-generate': 'options.temperature',
      llamacpp: 'temperature',
      tgi: 'parameters.temperature',
      'anthropic-messages': 'temperature',
      'openai-responses': 'temperature',
    },
    note: 'TGI: 0 is written as do_sample: false (greedy); no do_sample, or do_sample: false with no sampling field, reads as 0',
  },
  {
    family: 'sampling',
    field: 'topP',
    wire: {
      'openai-chat': 'top_p',
      'openai-completions': 'top_p',
      'ollama-chat': 'options.top_p',
      'ollama-generate': 'options.top_p',
      llamacpp: 'top_p',
      tgi: 'parameters.top_p',
      'anthropic-messages': 'top_p',
      'openai-responses': 'top_p',
    },
  },
  {
    family: 'sampling',
    field: 'topK',
    wire: {
      'openai-chat': 'top_k',
      'openai-completions': 'top_k',
      'ollama-chat': 'options.top_k',
      'ollama-generate': 'options.top_k',
      llamacpp: 'top_k',
      tgi: 'parameters.top_k',
      'anthropic-messages': 'top_k',
      'openai-responses': null,
    },
    note: 'top_k on the OpenAI routes is the vLLM / llama-server extension',
  },
  {
    family: 'sampling',
    field: 'seed',
    wire: {
      'openai-chat': 'seed',
      'openai-completions': 'seed',
      'ollama-chat': 'options.seed',
      'ollama-generate': 'options.seed',
      llamacpp: 'seed',
      tgi: 'parameters.seed',
      'anthropic-messages': 'seed',
      'openai-responses': null,
    },
    note: 'seed on /v1/messages is the llama-server / vLLM extension',
  },
  {
    family: 'sampling',
    field: 'frequencyPenalty',
    wire: {
      'openai-chat': 'frequency_penalty',
      'openai-completions': 'frequency_penalty',
      'ollama-chat': 'options.frequency_penalty',
      'ollama-generate': 'options.frequency_penalty',
      llamacpp: 'frequency_penalty',
      tgi: 'parameters.frequency_penalty',
      'anthropic-messages': null,
      'openai-responses': null,
    },
  },
  {
    family: 'sampling',
    field: 'presencePenalty',
    wire: {
      'openai-chat': 'presence_penalty',
      'openai-completions': 'presence_penalty',
      'ollama-chat': 'options.presence_penalty',
      'ollama-generate': 'options.presence_penalty',
      llamacpp: 'presence_penalty',
      tgi: null,
      'anthropic-messages': null,
      'openai-responses': null,
    },
  },
  {
    family: 'limits',
    field: 'maxTokens',
    wire: {
      'openai-chat': 'max_tokens',
      'openai-completions': 'max_tokens',
      'ollama-chat': 'options.num_predict',
      'ollama-generate': 'options.num_predict',
      llamacpp: 'n_predict',
      tgi: 'parameters.max_new_tokens',
      'anthropic-messages': 'max_tokens',
      'openai-responses': 'max_output_tokens',
    },
    note: 'openai-chat also reads max_completion_tokens',
  },
  {
    family: 'stop',
    field: 'stop',
    wire: {
      'openai-chat': 'stop',
      'openai-completions': 'stop',
      'ollama-chat': 'options.stop',
      'ollama-generate': 'options.stop',
      llamacpp: 'stop',
      tgi: 'parameters.stop',
      'anthropic-messages': 'stop_sequences',
      'openai-responses': null,
    },
  },
  {
    family: 'tools',
    field: 'tools',
    wire: {
      'openai-chat': 'tools',
      'openai-completions': null,
      'ollama-chat': 'tools',
      'ollama-generate': null,
      llamacpp: null,
      tgi: null,
      'anthropic-messages': 'tools',
      'openai-responses': 'tools',
    },
    isDefault: (value) => Array.isArray(value) && value.length === 0,
  },
  {
    family: 'tools',
    field: 'toolChoice',
    wire: {
      'openai-chat': 'tool_choice',
      'openai-completions': null,
      'ollama-chat': null,
      'ollama-generate': null,
      llamacpp: null,
      tgi: null,
      'anthropic-messages': 'tool_choice',
      'openai-responses': 'tool_choice',
    },
    // `auto` is what every server does with tools and no choice.
    isDefault: (value) => value === 'auto',
    note: 'Ollama: `none` is written by leaving the tools out',
  },
  {
    family: 'reasoning',
    field: 'reasoning',
    wire: {
      'openai-chat': 'reasoning_effort',
      'openai-completions': null,
      'ollama-chat': 'think',
      'ollama-generate': 'think',
      llamacpp: null,
      tgi: null,
      'anthropic-messages': 'thinking',
      'openai-responses': 'reasoning.effort',
    },
    note: 'an effort word (low/medium/high); Ollama also takes true/false, which has no OpenAI counterpart',
  },
  {
    family: 'reasoning',
    field: 'reasoningBudgetTokens',
    wire: {
      'openai-chat': null,
      'openai-completions': null,
      'ollama-chat': null,
      'ollama-generate': null,
      llamacpp: null,
      tgi: null,
      'anthropic-messages': 'thinking.budget_tokens',
      'openai-responses': null,
    },
  },
  {
    family: 'structured output',
    field: 'responseFormat',
    wire: {
      'openai-chat': null,
      'openai-completions': null,
      'ollama-chat': null,
      'ollama-generate': null,
      llamacpp: null,
      tgi: null,
      'anthropic-messages': null,
      'openai-responses': 'text.format',
    },
    isDefault: (value) =>
      typeof value === 'object' && value !== null && (value as { type?: unknown }).type === 'text',
  },
];

/** The row of a normalized field, if it has one. */
export function fieldRow(field: keyof ChatRequest): FieldRow | undefined {
  return REQUEST_FIELDS.find((row) => row.field === field);
}

/**
 * What a request translated from `client` to `upstream` would lose, as the client named it: normalized
 * fields the upstream's dialect has no counterpart for, and the client's fields no dialect mapping reads
 * (its `extra`, nested keys as `options.repeat_penalty`). Empty for a same-dialect call: the client's
 * body goes upstream as it is.
 */
export function untranslatableFields(request: ChatRequest, client: DialectId, upstream: DialectId): string[] {
  if (client === upstream) return [];
  const lost: string[] = [];
  for (const row of REQUEST_FIELDS) {
    const value = request[row.field];
    if (value === undefined || row.isDefault?.(value) === true) continue;
    if (row.wire[upstream] === undefined || row.wire[upstream] === null) {
      lost.push(row.wire[client] ?? String(row.field));
    }
  }
  const extra = request.extra;
  if (extra !== undefined) {
    for (const [key, value] of Object.entries(extra)) {
      // Nested groups a dialect splits (Ollama `options`, TGI `parameters`, vendor `stream_options`).
      if (typeof value === 'object' && value !== null && !Array.isArray(value) && NESTED_GROUPS.has(key)) {
        for (const inner of Object.keys(value)) lost.push(`${key}.${inner}`);
      } else {
        lost.push(key);
      }
    }
  }
  return lost;
}

/** Body keys whose unread members travel in `extra` as an object of the same name. */
const NESTED_GROUPS = new Set(['options', 'parameters', 'stream_options']);
