import type { ChatImage, ChatRequest, ResponseFormat } from '../../events/chat-request.ts';
import { isRecord, type JsonRecord } from '../common/json-fields.ts';
import {
  extraFields,
  optionalBoolean,
  optionalNumber,
  optionalStopList,
  optionalString,
  requireRecord,
} from '../common/request-fields.ts';
import { RequestError } from '../dialect.ts';

/** Request fields both native Ollama endpoints share (wire-formats.md §6.1). */

/** `options` keys with a normalized home; the rest travel in `extra.options`. */
const KNOWN_OPTIONS = new Set([
  'num_predict',
  'temperature',
  'top_p',
  'top_k',
  'seed',
  'stop',
  'frequency_penalty',
  'presence_penalty',
  'repeat_penalty',
  'min_p',
]);

/** Ollama's `think` levels (besides `true`/`false`). */
const THINK_LEVELS = new Set(['low', 'medium', 'high', 'max']);

/**
 * The body as an object with its `model` (Ollama answers 400 `model is required` without one).
 */
export function requireOllamaBody(input: unknown): { body: JsonRecord; model: string } {
  const body = requireRecord(input);
  const model = optionalString(body, 'model');
  if (model === undefined || model === '') throw new RequestError('model is required', { field: 'model' });
  return { body, model };
}

/**
 * Reads `options` (sampling: `num_predict`, `temperature`, `top_p`, `top_k`, `seed`, `stop`,
 * `frequency_penalty`, `presence_penalty`, `repeat_penalty`, `min_p`), `format` and `think` into `request`. A negative `num_predict` (-1: no
 * limit, -2: fill the context) has no normalized form and stays in the returned rest of `options`.
 */
export function readOllamaOptions(body: JsonRecord, request: ChatRequest): JsonRecord | undefined {
  const format = readOllamaFormat(body.format);
  if (format !== undefined) request.responseFormat = format;
  const think = body.think;
  if (think !== undefined && think !== null) {
    if (typeof think === 'boolean' || (typeof think === 'string' && THINK_LEVELS.has(think))) {
      request.reasoning = think;
    } else {
      throw new RequestError('think must be true, false, "low", "medium", "high" or "max"', {
        field: 'think',
      });
    }
  }
  const options = body.options;
  if (options === undefined || options === null) return undefined;
  if (!isRecord(options)) throw new RequestError('options must be an object', { field: 'options' });
  const numPredict = optionalNumber(options, 'num_predict', { path: 'options.num_predict', integer: true });
  const rest = extraFields(options, KNOWN_OPTIONS) ?? {};
  if (numPredict !== undefined) {
    if (numPredict >= 0) request.maxTokens = numPredict;
    else rest.num_predict = numPredict;
  }
  setDefined(
    request,
    'temperature',
    optionalNumber(options, 'temperature', { path: 'options.temperature', min: 0 }),
  );
  setDefined(request, 'topP', optionalNumber(options, 'top_p', { path: 'options.top_p', min: 0, max: 1 }));
  setDefined(request, 'topK', optionalNumber(options, 'top_k', { path: 'options.top_k', integer: true }));
  setDefined(request, 'seed', optionalNumber(options, 'seed', { path: 'options.seed', integer: true }));
  setDefined(request, 'stop', optionalStopList(options, 'stop', 'options.stop'));
  setDefined(
    request,
    'frequencyPenalty',
    optionalNumber(options, 'frequency_penalty', { path: 'options.frequency_penalty' }),
  );
  setDefined(
    request,
    'presencePenalty',
    optionalNumber(options, 'presence_penalty', { path: 'options.presence_penalty' }),
  );
  setDefined(
    request,
    'repetitionPenalty',
    optionalNumber(options, 'repeat_penalty', { path: 'options.repeat_penalty', min: 0 }),
  );
  setDefined(request, 'minP', optionalNumber(options, 'min_p', { path: 'options.min_p', min: 0, max: 1 }));
  return Object.keys(rest).length > 0 ? rest : undefined;
}

/**
 * Writes the `options` object (only when something goes in it), `format` and `think` onto `body`. Reasoning
 * efforts from other dialects are clamped to Ollama's levels: `none` -> false, `minimal` -> `low`,
 * `xhigh`/`ultra` -> `max`, any other word -> true.
 */
export function writeOllamaOptions(body: JsonRecord, request: ChatRequest): void {
  if (request.reasoning !== undefined) body.think = ollamaThink(request.reasoning);
  if (request.responseFormat !== undefined && request.responseFormat.type !== 'text') {
    body.format =
      request.responseFormat.type === 'json_object' ? 'json' : (request.responseFormat.schema ?? {});
  }
  const passed = request.extra?.options;
  const options: JsonRecord = isRecord(passed) ? { ...passed } : {};
  if (request.maxTokens !== undefined) options.num_predict = request.maxTokens;
  if (request.temperature !== undefined) options.temperature = request.temperature;
  if (request.topP !== undefined) options.top_p = request.topP;
  if (request.topK !== undefined) options.top_k = request.topK;
  if (request.seed !== undefined) options.seed = request.seed;
  if (request.stop !== undefined) options.stop = request.stop;
  if (request.frequencyPenalty !== undefined) options.frequency_penalty = request.frequencyPenalty;
  if (request.presencePenalty !== undefined) options.presence_penalty = request.presencePenalty;
  if (request.repetitionPenalty !== undefined) options.repeat_penalty = request.repetitionPenalty;
  if (request.minP !== undefined) options.min_p = request.minP;
  if (Object.keys(options).length > 0) body.options = options;
}

/** Copies `extra` (all but `options`, which `writeOllamaOptions` merges) onto `body`. */
export function writeOllamaExtra(body: JsonRecord, request: ChatRequest): void {
  for (const [key, value] of Object.entries(request.extra ?? {})) {
    if (key !== 'options' && !(key in body)) body[key] = value;
  }
}

/**
 * Ollama's `format`: `"json"` (any JSON: OpenAI's `json_object`) or a JSON Schema object (its
 * `json_schema`, with no name); `""` is no format.
 */
function readOllamaFormat(value: unknown): ResponseFormat | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (value === 'json') return { type: 'json_object' };
  if (isRecord(value)) return { type: 'json_schema', schema: value };
  throw new RequestError('format must be "json" or a JSON schema object', { field: 'format' });
}

function ollamaThink(reasoning: boolean | string): boolean | string {
  if (typeof reasoning === 'boolean') return reasoning;
  switch (reasoning) {
    case 'none':
      return false;
    case 'minimal':
    case 'low':
      return 'low';
    case 'medium':
      return 'medium';
    case 'high':
      return 'high';
    case 'xhigh':
    case 'max':
    case 'ultra':
      return 'max';
    default:
      return true;
  }
}

/**
 * Images as Ollama takes them: base64 bytes. A URL has no Ollama counterpart (the gateway refuses it
 * before this, naming the field); a caller of this mapping gets the same 400.
 */
export function ollamaImages(images: readonly ChatImage[]): string[] {
  return images.map((image, i) => {
    if (image.data === undefined) {
      throw new RequestError(`images[${i}]: Ollama takes base64 images only, not a URL`, { field: 'images' });
    }
    return image.data;
  });
}

/**
 * `logprobs: true` with `top_logprobs` (0–20, Ollama's 400 outside) alternatives per token: the
 * normalized top-K count. `logprobs: false` is the default, and `top_logprobs` means nothing without
 * `logprobs: true`.
 */
export function readOllamaLogprobs(body: JsonRecord, request: ChatRequest): void {
  const logprobs = optionalBoolean(body, 'logprobs');
  const top = optionalNumber(body, 'top_logprobs', { integer: true, min: 0, max: 20 });
  if (logprobs === true) request.logprobs = top ?? 0;
}

/** The top-K count as `logprobs: true` and `top_logprobs` (left out for 0, Ollama's default). */
export function writeOllamaLogprobs(body: JsonRecord, request: ChatRequest): void {
  if (request.logprobs === undefined) return;
  body.logprobs = true;
  if (request.logprobs > 0) body.top_logprobs = request.logprobs;
}

function setDefined<K extends keyof ChatRequest>(request: ChatRequest, key: K, value: ChatRequest[K]): void {
  if (value !== undefined) request[key] = value;
}
