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
  | 'n'
  | 'roles'
  | 'prompt';

/** Normalized fields that live on the turns (`ChatMessage`), not on the request. */
export type MessageFeature = 'images' | 'developer';

/**
 * One normalized request field and where each dialect keeps it: the body path (`options.temperature`,
 * `parameters.max_new_tokens`), or `null` when the dialect has no counterpart. A request translated to
 * an upstream whose cell is `null` is refused with a 400 naming the field (or the field is dropped, and
 * listed in a response header, when the request or the operator allows it: `drop_params`).
 */
export interface FieldRow {
  family: FieldFamily;
  field: keyof ChatRequest | MessageFeature;
  /** The field's value in a request, when it is not `request[field]` (a feature of the turns). */
  value?: ((request: ChatRequest) => unknown) | undefined;
  /** Values a dialect's cell cannot carry all the same (refused as if the cell were `null`). */
  lossy?: Partial<Record<DialectId, (value: unknown) => boolean>> | undefined;
  /**
   * The body path per dialect; a dialect missing from the record has no counterpart either. Paths
   * separated by `, ` are the places the value's kind picks from (an effort word or a true/false switch);
   * `key[]` is any element of the list at `key`.
   */
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
      'openai-responses': 'top_k',
    },
    note: 'top_k on the OpenAI routes (chat, completions, Responses) is the vLLM / llama-server extension',
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
      'openai-responses': 'seed',
    },
    note: 'seed on /v1/messages and /v1/responses is the llama-server / vLLM extension',
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
      'openai-responses': 'stop',
    },
    note: 'stop on /v1/responses is the llama-server / vLLM extension (OpenAI’s Responses has none)',
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
      'openai-chat': 'reasoning_effort, chat_template_kwargs.enable_thinking',
      'openai-completions': null,
      'ollama-chat': 'think',
      'ollama-generate': 'think',
      llamacpp: null,
      tgi: null,
      'anthropic-messages': 'thinking',
      'openai-responses': 'reasoning.effort',
    },
    note: 'an effort word (low/medium/high) or true/false; openai-chat carries the words as `reasoning_effort` and true/false as llama-server’s and vLLM’s `chat_template_kwargs.enable_thinking`; Responses writes a bare true as its default effort, `medium`',
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
    family: 'sampling',
    field: 'repetitionPenalty',
    wire: {
      'openai-chat': 'repetition_penalty, repeat_penalty',
      'openai-completions': 'repetition_penalty, repeat_penalty',
      'ollama-chat': 'options.repeat_penalty',
      'ollama-generate': 'options.repeat_penalty',
      llamacpp: 'repeat_penalty',
      tgi: 'parameters.repetition_penalty',
      'anthropic-messages': null,
      'openai-responses': null,
    },
    // TGI refuses a penalty that is not strictly positive (its router's validation).
    lossy: { tgi: (value) => typeof value === 'number' && value <= 0 },
    note: 'the multiplicative penalty (1 = none); on the OpenAI routes it is an extension that vLLM names `repetition_penalty` and llama-server `repeat_penalty` (each ignores the other’s), so both are written and either is read; not frequency_penalty, which is additive; TGI takes only a positive one, so 0 is refused for it',
  },
  {
    family: 'sampling',
    field: 'minP',
    wire: {
      'openai-chat': 'min_p',
      'openai-completions': 'min_p',
      'ollama-chat': 'options.min_p',
      'ollama-generate': 'options.min_p',
      llamacpp: 'min_p',
      tgi: null,
      'anthropic-messages': null,
      'openai-responses': null,
    },
    note: 'min_p on the OpenAI routes is the vLLM / llama-server extension',
  },
  {
    family: 'structured output',
    field: 'responseFormat',
    wire: {
      'openai-chat': 'response_format',
      'openai-completions': 'response_format, json_schema',
      'ollama-chat': 'format',
      'ollama-generate': 'format',
      llamacpp: 'json_schema',
      tgi: 'parameters.grammar',
      'anthropic-messages': null,
      'openai-responses': 'text.format',
    },
    isDefault: (value) =>
      typeof value === 'object' && value !== null && (value as { type?: unknown }).type === 'text',
    note: 'on /v1/completions vLLM reads `response_format` and llama-server only `json_schema` (it reads `response_format` on its chat route alone), so both are written; `json_object` is Ollama `"json"`, and the schema `{"type": "object"}` for llama.cpp and TGI (`{type: "json", value: schema}`); a JSON schema reaches Ollama, llama.cpp and TGI without its name (a nameless one is named `response` for OpenAI); llama.cpp `grammar` and TGI `regex` grammars are not normalized',
  },
  {
    family: 'multimodal',
    field: 'images',
    value: (request) => {
      const images = request.messages?.flatMap((message) => message.images ?? []) ?? [];
      return images.length > 0 ? images : undefined;
    },
    wire: {
      'openai-chat': 'messages[].content[].image_url',
      'openai-completions': null,
      'ollama-chat': 'messages[].images',
      'ollama-generate': 'images',
      llamacpp: null,
      tgi: null,
      'anthropic-messages': 'messages[].content[].source',
      'openai-responses': 'input[].content[].image_url',
    },
    lossy: { 'ollama-chat': hasImageUrl, 'ollama-generate': hasImageUrl },
    note: 'a data URL or an http(s) URL; Ollama takes base64 bytes only, so an image given by URL is refused for it; a media type Ollama does not send is read from the bytes for Anthropic',
  },
  {
    family: 'roles',
    field: 'developer',
    value: (request) => (request.messages?.some((message) => message.developer === true) ? true : undefined),
    wire: {
      'openai-chat': 'messages[].role',
      'openai-completions': 'prompt',
      'ollama-chat': 'messages[].role',
      'ollama-generate': 'system',
      llamacpp: 'prompt',
      tgi: 'inputs',
      'anthropic-messages': 'system',
      'openai-responses': 'input[].role',
    },
    note: 'OpenAI’s `developer` turn: kept as `developer` on openai-chat and openai-responses, written as a system turn (`system`, or a `system:` line of the rendered prompt) everywhere else',
  },
  {
    family: 'logprobs',
    field: 'logprobs',
    wire: {
      'openai-chat': 'logprobs',
      'openai-completions': 'logprobs',
      'ollama-chat': 'logprobs',
      'ollama-generate': 'logprobs',
      llamacpp: 'n_probs',
      tgi: 'parameters.top_n_tokens',
      'anthropic-messages': null,
      'openai-responses': 'top_logprobs',
    },
    // Every dialect with a cell here writes a re-encoded stream's log probabilities back
    // (REENCODED_STREAMS_WRITE; test/dialects/cross-dialect-fields.test.ts checks both).
    lossy: { llamacpp: (value) => value === 0, tgi: (value) => value === 0 },
    note: 'the top-K count: openai-chat and Ollama `logprobs: true` with `top_logprobs: K` (none: 0); openai-responses `include: ["message.output_text.logprobs"]` with `top_logprobs: K`; TGI `parameters.top_n_tokens: K` (each token’s own `logprob` always comes); llama.cpp `n_probs: 0` and TGI `top_n_tokens: 0` ask for nothing, so 0 is refused for them. A translated stream carries the upstream’s log probabilities back in the client’s shape (`logprobs.content`, the legacy completions object, `completion_probabilities`, Ollama’s per-line `logprobs`, the Responses deltas’ and output text’s `logprobs`)',
  },
  {
    family: 'n',
    field: 'n',
    wire: {
      'openai-chat': 'n',
      'openai-completions': 'n',
      'ollama-chat': null,
      'ollama-generate': null,
      llamacpp: null,
      tgi: null,
      'anthropic-messages': null,
      'openai-responses': null,
    },
    isDefault: (value) => value === 1,
    // Both dialects with a cell write each event's choice as its own `index` (REENCODED_STREAMS_WRITE).
    note: 'maps between the two OpenAI dialects; a translated stream writes each answer with its own `index`, role chunk and finish chunk, and usage once',
  },
  {
    family: 'prompt',
    field: 'raw',
    wire: {
      'openai-chat': null,
      'openai-completions': 'prompt',
      'ollama-chat': null,
      'ollama-generate': 'raw',
      llamacpp: 'prompt',
      tgi: 'inputs',
      'anthropic-messages': null,
      'openai-responses': null,
    },
    isDefault: (value) => value === false,
    note: 'Ollama `raw: true`, the prompt with no template: what a completion-style prompt always is; a chat route always applies its template, so it is refused there',
  },
  {
    family: 'prompt',
    field: 'loadOnly',
    wire: {
      'openai-chat': null,
      'openai-completions': null,
      'ollama-chat': 'messages',
      'ollama-generate': 'prompt',
      llamacpp: null,
      tgi: null,
      'anthropic-messages': null,
      'openai-responses': null,
    },
    isDefault: (value) => value === false,
    note: 'Ollama’s load-only request (`/api/generate` with no or an empty `prompt`, `/api/chat` with no `messages`), which Ollama answers `done_reason: "load"` without generating; every other server would generate from an empty prompt, so it is refused for them',
  },
];

/**
 * The dialects whose encoders write back, in a re-encoded (translated) stream, each event's `choice`
 * (several answers, `n`) and a text event's `logprobs`. A dialect may have a cell in the `n` or
 * `logprobs` row only if it is listed here: a client would otherwise get several answers merged into one,
 * or its asked-for log probabilities silently missing (test/dialects/cross-dialect-fields.test.ts holds
 * the table to this and round-trips each listed encoder).
 */
export const REENCODED_STREAMS_WRITE: {
  readonly choices: readonly DialectId[];
  readonly logprobs: readonly DialectId[];
} = {
  choices: ['openai-chat', 'openai-completions'],
  logprobs: [
    'openai-chat',
    'openai-completions',
    'llamacpp',
    'ollama-chat',
    'ollama-generate',
    'openai-responses',
    'tgi',
  ],
};

function hasImageUrl(value: unknown): boolean {
  return Array.isArray(value) && value.some((image: { url?: unknown }) => image.url !== undefined);
}

/** A row's value in a request. */
export function fieldValue(row: FieldRow, request: ChatRequest): unknown {
  return row.value === undefined ? request[row.field as keyof ChatRequest] : row.value(request);
}

/** The row of a normalized field, if it has one. */
export function fieldRow(field: keyof ChatRequest | MessageFeature): FieldRow | undefined {
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
    const value = fieldValue(row, request);
    if (value === undefined || row.isDefault?.(value) === true) continue;
    const cell = row.wire[upstream];
    if (cell === undefined || cell === null || row.lossy?.[upstream]?.(value) === true) {
      lost.push(row.wire[client] ?? String(row.field));
    }
  }
  const extra = request.extra;
  const hints = HINT_FIELDS[client];
  if (extra !== undefined) {
    for (const [key, value] of Object.entries(extra)) {
      if (hints?.includes(key) === true) continue;
      // Nested groups a dialect splits (Ollama `options`, TGI `parameters`, vendor `stream_options`).
      if (typeof value === 'object' && value !== null && !Array.isArray(value) && NESTED_GROUPS.has(key)) {
        for (const inner of Object.keys(value)) lost.push(`${key}.${inner}`);
      } else {
        lost.push(key);
      }
    }
  }
  for (const part of request.unmapped ?? []) if (part.hint !== true) lost.push(part.name);
  return lost;
}

/**
 * Fields that only tell a server how to keep the model (Ollama `keep_alive`: how long it stays loaded
 * after the request), with no meaning to a server of another dialect. The gateway does not refuse a
 * request for them — Ollama clients send them routinely, and the answer is the same without them — but
 * drops them and names them in `x-tokenwire-dropped-params`, `drop_params` or not.
 */
export const HINT_FIELDS: Readonly<Partial<Record<DialectId, readonly string[]>>> = {
  'ollama-chat': ['keep_alive'],
  'ollama-generate': ['keep_alive'],
};

/**
 * What a request translated from `client` to `upstream` drops without refusing it, as the client named
 * it: its hint fields (HINT_FIELDS) and the earlier reasoning it sent back (`unmapped` hints). Empty for
 * a same-dialect call.
 */
export function droppedHints(request: ChatRequest, client: DialectId, upstream: DialectId): string[] {
  if (client === upstream) return [];
  const dropped: string[] = [];
  const extra = request.extra;
  for (const key of HINT_FIELDS[client] ?? []) if (extra !== undefined && key in extra) dropped.push(key);
  for (const part of request.unmapped ?? []) if (part.hint === true) dropped.push(part.name);
  return dropped;
}

/** Body keys whose unread members travel in `extra` as an object of the same name. */
const NESTED_GROUPS = new Set(['options', 'parameters', 'stream_options']);
