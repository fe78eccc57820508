import { type ChatRequest, renderPrompt } from '../../events/chat-request.ts';
import { RequestError } from '../dialect.ts';
import { isRecord, type JsonRecord } from '../shared/json-fields.ts';
import {
  extraFields,
  optionalBoolean,
  optionalNumber,
  optionalStopList,
  optionalString,
  requireRecord,
} from '../shared/request-fields.ts';

/** Fields read into the normalized request (everything else travels in `extra`). */
const KNOWN = new Set([
  'model',
  'prompt',
  'stream',
  'max_tokens',
  'temperature',
  'top_p',
  'top_k',
  'seed',
  'stop',
  'frequency_penalty',
  'presence_penalty',
  'stream_options',
]);

/** `POST /v1/completions` body -> normalized request. */
export function openAiCompletionsFromBody(input: unknown): ChatRequest {
  const body = requireRecord(input);
  const request: ChatRequest = { prompt: parsePrompt(body.prompt) };
  request.model = optionalString(body, 'model');
  request.maxTokens = optionalNumber(body, 'max_tokens', { integer: true, min: 0 });
  request.temperature = optionalNumber(body, 'temperature', { min: 0 });
  request.topP = optionalNumber(body, 'top_p', { min: 0, max: 1 });
  // vLLM takes -1 (and 0) for "no top-k".
  request.topK = optionalNumber(body, 'top_k', { integer: true });
  request.seed = optionalNumber(body, 'seed', { integer: true });
  request.stop = optionalStopList(body, 'stop');
  request.frequencyPenalty = optionalNumber(body, 'frequency_penalty');
  request.presencePenalty = optionalNumber(body, 'presence_penalty');
  request.stream = optionalBoolean(body, 'stream');
  // Completion-only fields with no normalized home: checked here, passed through in `extra`.
  optionalBoolean(body, 'echo');
  optionalNumber(body, 'logprobs', { integer: true, min: 0 });
  optionalString(body, 'suffix');
  const extra = extraFields(body, KNOWN) ?? {};
  const options = body.stream_options;
  if (options !== undefined && options !== null) {
    if (!isRecord(options))
      throw new RequestError('stream_options must be an object', { field: 'stream_options' });
    request.includeUsage = optionalBoolean(options, 'include_usage', 'stream_options.include_usage');
    const rest = extraFields(options, new Set(['include_usage']));
    if (rest !== undefined) extra.stream_options = rest;
  }
  if (Object.keys(extra).length > 0) request.extra = extra;
  return dropUndefined(request);
}

/**
 * The prompt: a string, or a list holding one string. Several prompts ask for several completions
 * that the servers interleave as choices 1, 2…; a stream here carries one answer, so that is refused
 * with a 400 rather than silently dropping or joining prompts. Token-id prompts are refused too.
 */
function parsePrompt(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) {
    if (value.length === 1 && typeof value[0] === 'string') return value[0];
    if (value.length > 1 && value.every((item) => typeof item === 'string'))
      throw new RequestError(`prompt holds ${value.length} prompts; send one prompt per request`, {
        field: 'prompt',
      });
  }
  if (value === undefined || value === null)
    throw new RequestError('prompt is required', { field: 'prompt' });
  throw new RequestError('prompt must be a string or a list of one string', { field: 'prompt' });
}

/**
 * Normalized request -> `POST /v1/completions` body (streaming). A chat request is rendered into one
 * prompt with `renderPrompt`; tools and reasoning have no place in a completions body and are left out.
 */
export function openAiCompletionsToBody(request: ChatRequest): JsonRecord {
  const body: JsonRecord = {
    model: request.model ?? 'default',
    prompt: request.prompt ?? renderPrompt(request),
    stream: true,
  };
  if (request.maxTokens !== undefined) body.max_tokens = request.maxTokens;
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.topP !== undefined) body.top_p = request.topP;
  if (request.topK !== undefined) body.top_k = request.topK;
  if (request.seed !== undefined) body.seed = request.seed;
  if (request.stop !== undefined) body.stop = request.stop;
  if (request.frequencyPenalty !== undefined) body.frequency_penalty = request.frequencyPenalty;
  if (request.presencePenalty !== undefined) body.presence_penalty = request.presencePenalty;
  const extra = request.extra ?? {};
  const passOptions = isRecord(extra.stream_options) ? extra.stream_options : undefined;
  if (request.includeUsage !== undefined || passOptions !== undefined) {
    const options: JsonRecord = { ...passOptions };
    if (request.includeUsage !== undefined) options.include_usage = request.includeUsage;
    body.stream_options = options;
  }
  for (const [key, value] of Object.entries(extra)) if (key !== 'stream_options') body[key] = value;
  return body;
}

function dropUndefined<T extends object>(value: T): T {
  for (const key of Object.keys(value) as (keyof T)[]) if (value[key] === undefined) delete value[key];
  return value;
}
