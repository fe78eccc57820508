import type { ChatRequest } from '../../events/chat-request.ts';
import { RequestError } from '../dialect.ts';
import { isRecord, type JsonRecord } from '../shared/json-fields.ts';
import {
  extraFields,
  openAiToolChoice,
  openAiTools,
  optionalBoolean,
  optionalNumber,
  optionalStopList,
  optionalString,
  parseMessages,
  parseToolChoice,
  parseTools,
  requireRecord,
} from '../shared/request-fields.ts';

const KNOWN = new Set([
  'model',
  'messages',
  'stream',
  'max_tokens',
  'max_completion_tokens',
  'temperature',
  'top_p',
  'top_k',
  'seed',
  'stop',
  'frequency_penalty',
  'presence_penalty',
  'tools',
  'tool_choice',
  'stream_options',
  'reasoning_effort',
]);

/** `POST /v1/chat/completions` body -> normalized request. */
export function openAiChatFromBody(input: unknown): ChatRequest {
  const body = requireRecord(input);
  const request: ChatRequest = { messages: parseMessages(body) };
  if (request.messages!.length === 0)
    throw new RequestError('messages must not be empty', { field: 'messages' });
  request.model = optionalString(body, 'model');
  request.maxTokens =
    optionalNumber(body, 'max_completion_tokens', { integer: true, min: 0 }) ??
    optionalNumber(body, 'max_tokens', { integer: true, min: 0 });
  request.temperature = optionalNumber(body, 'temperature', { min: 0 });
  request.topP = optionalNumber(body, 'top_p', { min: 0, max: 1 });
  request.topK = optionalNumber(body, 'top_k', { integer: true });
  request.seed = optionalNumber(body, 'seed', { integer: true });
  request.stop = optionalStopList(body, 'stop');
  request.frequencyPenalty = optionalNumber(body, 'frequency_penalty');
  request.presencePenalty = optionalNumber(body, 'presence_penalty');
  request.tools = parseTools(body);
  request.toolChoice = parseToolChoice(body);
  request.stream = optionalBoolean(body, 'stream');
  const effort = optionalString(body, 'reasoning_effort');
  if (effort !== undefined) request.reasoning = effort;
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

/** Normalized request -> `POST /v1/chat/completions` body (streaming). */
export function openAiChatToBody(request: ChatRequest): JsonRecord {
  const body: JsonRecord = {
    model: request.model ?? 'default',
    messages: openAiMessages(request),
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
  if (request.tools !== undefined) body.tools = openAiTools(request.tools);
  if (request.toolChoice !== undefined) body.tool_choice = openAiToolChoice(request.toolChoice);
  if (typeof request.reasoning === 'string') body.reasoning_effort = request.reasoning;
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

function openAiMessages(request: ChatRequest): JsonRecord[] {
  const messages = request.messages ?? [{ role: 'user' as const, content: request.prompt ?? '' }];
  return messages.map((message) => {
    const out: JsonRecord = { role: message.role, content: message.content };
    if (message.toolCalls !== undefined) {
      out.tool_calls = message.toolCalls.map((call) => ({
        id: call.id,
        type: 'function',
        function: { name: call.name, arguments: call.arguments },
      }));
    }
    if (message.toolCallId !== undefined) out.tool_call_id = message.toolCallId;
    if (message.name !== undefined) out.name = message.name;
    return out;
  });
}

function dropUndefined<T extends object>(value: T): T {
  for (const key of Object.keys(value) as (keyof T)[]) if (value[key] === undefined) delete value[key];
  return value;
}
