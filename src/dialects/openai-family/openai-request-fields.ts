import type { ChatRequest } from '../../events/chat-request.ts';
import { isRecord, type JsonRecord } from '../common/json-fields.ts';
import {
  extraFields,
  openAiResponseFormat,
  optionalBoolean,
  optionalNumber,
  optionalStopList,
  optionalString,
  parseOpenAiResponseFormat,
} from '../common/request-fields.ts';
import { RequestError } from '../dialect.ts';

/** The fields of an OpenAI-style body that `readOpenAiSampling` reads (besides the output cap). */
export const OPENAI_SAMPLING_FIELDS: readonly string[] = [
  'model',
  'stream',
  'max_tokens',
  'temperature',
  'top_p',
  'top_k',
  'seed',
  'stop',
  'frequency_penalty',
  'presence_penalty',
  'repetition_penalty',
  'repeat_penalty',
  'min_p',
  'n',
  'response_format',
  'stream_options',
];

/** Model, sampling, stop and `stream` of an OpenAI-style body (chat and completions alike). */
export function readOpenAiSampling(body: JsonRecord, request: ChatRequest): void {
  request.model = optionalString(body, 'model');
  request.temperature = optionalNumber(body, 'temperature', { min: 0 });
  request.topP = optionalNumber(body, 'top_p', { min: 0, max: 1 });
  // vLLM takes -1 (and 0) for "no top-k".
  request.topK = optionalNumber(body, 'top_k', { integer: true });
  request.seed = optionalNumber(body, 'seed', { integer: true });
  request.stop = optionalStopList(body, 'stop');
  request.frequencyPenalty = optionalNumber(body, 'frequency_penalty');
  request.presencePenalty = optionalNumber(body, 'presence_penalty');
  // The servers' extensions: vLLM reads `repetition_penalty` on these routes, llama-server `repeat_penalty`.
  request.repetitionPenalty =
    optionalNumber(body, 'repetition_penalty', { min: 0 }) ??
    optionalNumber(body, 'repeat_penalty', { min: 0 });
  request.minP = optionalNumber(body, 'min_p', { min: 0, max: 1 });
  request.n = optionalNumber(body, 'n', { integer: true, min: 1 });
  request.responseFormat = parseOpenAiResponseFormat(body.response_format);
  request.stream = optionalBoolean(body, 'stream');
}

/**
 * The fields outside `known` go to `extra`, with `stream_options`: `include_usage` is read, and the
 * rest of it (vendor options such as vLLM's `continuous_usage_stats`) is kept for a same-dialect upstream.
 */
export function readExtraAndStreamOptions(
  body: JsonRecord,
  request: ChatRequest,
  known: ReadonlySet<string>,
): void {
  const extra = extraFields(body, known) ?? {};
  const options = body.stream_options;
  if (options !== undefined && options !== null) {
    if (!isRecord(options))
      throw new RequestError('stream_options must be an object', { field: 'stream_options' });
    request.includeUsage = optionalBoolean(options, 'include_usage', 'stream_options.include_usage');
    const rest = extraFields(options, new Set(['include_usage']));
    if (rest !== undefined) extra.stream_options = rest;
  }
  if (Object.keys(extra).length > 0) request.extra = extra;
}

/** Writes the output cap, sampling and stop of a normalized request into an OpenAI-style body. */
export function writeOpenAiSampling(request: ChatRequest, body: JsonRecord): void {
  if (request.maxTokens !== undefined) body.max_tokens = request.maxTokens;
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.topP !== undefined) body.top_p = request.topP;
  if (request.topK !== undefined) body.top_k = request.topK;
  if (request.seed !== undefined) body.seed = request.seed;
  if (request.stop !== undefined) body.stop = request.stop;
  if (request.frequencyPenalty !== undefined) body.frequency_penalty = request.frequencyPenalty;
  if (request.presencePenalty !== undefined) body.presence_penalty = request.presencePenalty;
  // Both servers' names for it (vLLM's and llama-server's; each ignores the other's): an upstream known
  // only as "OpenAI-shaped" may be either, and the penalty must not be lost on one of them.
  if (request.repetitionPenalty !== undefined) {
    body.repetition_penalty = request.repetitionPenalty;
    body.repeat_penalty = request.repetitionPenalty;
  }
  if (request.minP !== undefined) body.min_p = request.minP;
  if (request.n !== undefined) body.n = request.n;
  if (request.responseFormat !== undefined)
    body.response_format = openAiResponseFormat(request.responseFormat);
}

/** Writes `stream_options` (include_usage over the kept vendor options) and the `extra` fields. */
export function writeStreamOptionsAndExtra(request: ChatRequest, body: JsonRecord): void {
  const extra = request.extra ?? {};
  const passOptions = isRecord(extra.stream_options) ? extra.stream_options : undefined;
  if (request.includeUsage !== undefined || passOptions !== undefined) {
    const options: JsonRecord = { ...passOptions };
    if (request.includeUsage !== undefined) options.include_usage = request.includeUsage;
    body.stream_options = options;
  }
  for (const [key, value] of Object.entries(extra)) if (key !== 'stream_options') body[key] = value;
}
