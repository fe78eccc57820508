import type { ChatRequest } from '../../events/chat-request.ts';
import type { JsonRecord } from '../common/json-fields.ts';
import {
  dropUndefined,
  openAiToolChoice,
  openAiTools,
  optionalNumber,
  optionalString,
  parseMessages,
  parseToolChoice,
  parseTools,
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

const KNOWN = new Set([
  ...OPENAI_SAMPLING_FIELDS,
  'messages',
  'max_completion_tokens',
  'tools',
  'tool_choice',
  'reasoning_effort',
]);

/** `POST /v1/chat/completions` body -> normalized request. */
export function openAiChatFromBody(input: unknown): ChatRequest {
  const body = requireRecord(input);
  const request: ChatRequest = { messages: parseMessages(body) };
  if (request.messages!.length === 0)
    throw new RequestError('messages must not be empty', { field: 'messages' });
  readOpenAiSampling(body, request);
  request.maxTokens =
    optionalNumber(body, 'max_completion_tokens', { integer: true, min: 0 }) ??
    optionalNumber(body, 'max_tokens', { integer: true, min: 0 });
  request.tools = parseTools(body);
  request.toolChoice = parseToolChoice(body);
  const effort = optionalString(body, 'reasoning_effort');
  if (effort !== undefined) request.reasoning = effort;
  readExtraAndStreamOptions(body, request, KNOWN);
  return dropUndefined(request);
}

/** Normalized request -> `POST /v1/chat/completions` body (streaming). */
export function openAiChatToBody(request: ChatRequest): JsonRecord {
  const body: JsonRecord = {
    model: request.model ?? 'default',
    messages: openAiMessages(request),
    stream: true,
  };
  writeOpenAiSampling(request, body);
  if (request.tools !== undefined) body.tools = openAiTools(request.tools);
  if (request.toolChoice !== undefined) body.tool_choice = openAiToolChoice(request.toolChoice);
  if (typeof request.reasoning === 'string') body.reasoning_effort = request.reasoning;
  writeStreamOptionsAndExtra(request, body);
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
