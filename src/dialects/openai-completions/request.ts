import { type ChatRequest, renderPrompt } from '../../events/chat-request.ts';
import { isRecord, type JsonRecord } from '../common/json-fields.ts';
import {
  dropUndefined,
  formatSchema,
  optionalBoolean,
  optionalNumber,
  optionalString,
  requireRecord,
} from '../common/request-fields.ts';
import { RequestError } from '../dialect.ts';
import {
  OPENAI_SAMPLING_FIELDS,
  readExtraAndStreamOptions,
  readOpenAiSampling,
  writeOpenAiSampling,
  writeStreamOptionsAndExtra,
} from '../openai-family/openai-request-fields.ts';

/** Fields read into the normalized request (everything else travels in `extra`). */
const KNOWN = new Set([...OPENAI_SAMPLING_FIELDS, 'prompt', 'logprobs', 'json_schema']);

/** `POST /v1/completions` body -> normalized request. */
export function openAiCompletionsFromBody(input: unknown): ChatRequest {
  const body = requireRecord(input);
  const request: ChatRequest = { prompt: parsePrompt(body.prompt) };
  readOpenAiSampling(body, request);
  request.maxTokens = optionalNumber(body, 'max_tokens', { integer: true, min: 0 });
  // Completion-only fields with no normalized home: checked here, passed through in `extra` (but
  // `logprobs`, the top-K count, is normalized).
  optionalBoolean(body, 'echo');
  request.logprobs = optionalNumber(body, 'logprobs', { integer: true, min: 0 });
  optionalString(body, 'suffix');
  readExtraAndStreamOptions(body, request, KNOWN);
  readJsonSchema(body, request);
  return dropUndefined(request);
}

/**
 * llama-server's own name for the schema on this route (it reads `response_format` only on its chat
 * route): the format, when there is no `response_format`. Beside one that asks for the same schema (as
 * the gateway writes both) it says nothing more; beside a different one it travels in `extra`, so that a
 * translation names it rather than losing it.
 */
function readJsonSchema(body: JsonRecord, request: ChatRequest): void {
  const schema = body.json_schema;
  if (schema === undefined || schema === null) return;
  if (!isRecord(schema))
    throw new RequestError('json_schema must be a JSON schema object', { field: 'json_schema' });
  const format = request.responseFormat;
  if (format === undefined) request.responseFormat = { type: 'json_schema', schema };
  else if (format.type === 'text' || JSON.stringify(formatSchema(format)) !== JSON.stringify(schema)) {
    request.extra ??= {};
    request.extra.json_schema = schema;
  }
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
 * prompt with `renderPrompt` (a completions prompt is always raw: no template); tools and reasoning have
 * no place in a completions body (the gateway refuses them before this).
 */
export function openAiCompletionsToBody(request: ChatRequest): JsonRecord {
  const body: JsonRecord = {
    model: request.model ?? 'default',
    prompt: request.prompt ?? renderPrompt(request),
    stream: true,
  };
  writeOpenAiSampling(request, body);
  // vLLM reads the format as `response_format` on this route; llama-server reads it only on its chat
  // route and takes the bare schema as `json_schema` here (each ignores the other's): both are written.
  if (request.responseFormat !== undefined && request.responseFormat.type !== 'text')
    body.json_schema = formatSchema(request.responseFormat);
  if (request.logprobs !== undefined) body.logprobs = request.logprobs;
  writeStreamOptionsAndExtra(request, body);
  return body;
}
