import type { ChatMessage, ChatRequest, UnmappedContent } from '../../events/chat-request.ts';
import { isRecord, type JsonRecord } from '../common/json-fields.ts';
import {
  dropUndefined,
  extraFields,
  imageUrl,
  openAiToolChoice,
  openAiTools,
  optionalBoolean,
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
  'logprobs',
  'top_logprobs',
  'chat_template_kwargs',
]);

/** `POST /v1/chat/completions` body -> normalized request. */
export function openAiChatFromBody(input: unknown): ChatRequest {
  const body = requireRecord(input);
  const unmapped: UnmappedContent[] = [];
  const request: ChatRequest = { messages: parseMessages(body, 'messages', unmapped) };
  if (unmapped.length > 0) request.unmapped = unmapped;
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
  const logprobs = optionalBoolean(body, 'logprobs');
  const top = optionalNumber(body, 'top_logprobs', { integer: true, min: 0 });
  if (logprobs === true) request.logprobs = top ?? 0;
  // `logprobs: false` is the default, and `top_logprobs` means nothing without `logprobs: true`.
  readExtraAndStreamOptions(body, request, KNOWN);
  readTemplateKwargs(body, request);
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
  if (request.logprobs !== undefined) {
    body.logprobs = true;
    if (request.logprobs > 0) body.top_logprobs = request.logprobs;
  }
  writeStreamOptionsAndExtra(request, body);
  // After `extra`, which may hold the client's other template kwargs: the switch goes in beside them.
  const kwargs = request.extra?.chat_template_kwargs;
  if (typeof request.reasoning === 'boolean' || isRecord(kwargs)) {
    const out: JsonRecord = isRecord(kwargs) ? { ...kwargs } : {};
    if (typeof request.reasoning === 'boolean') out.enable_thinking = request.reasoning;
    body.chat_template_kwargs = out;
  }
  return body;
}

/**
 * llama-server's and vLLM's `chat_template_kwargs`: `enable_thinking` (a boolean, as Ollama's `think`)
 * is the reasoning switch when no effort word was given; the other keys are kept for a same-dialect upstream.
 */
function readTemplateKwargs(body: JsonRecord, request: ChatRequest): void {
  const kwargs = body.chat_template_kwargs;
  if (kwargs === undefined || kwargs === null) return;
  if (!isRecord(kwargs))
    throw new RequestError('chat_template_kwargs must be an object', { field: 'chat_template_kwargs' });
  const thinking = optionalBoolean(kwargs, 'enable_thinking', 'chat_template_kwargs.enable_thinking');
  if (thinking !== undefined && request.reasoning === undefined) request.reasoning = thinking;
  // With an effort word as well, the switch stays as the client sent it (for a same-dialect upstream).
  const read = thinking !== undefined && request.reasoning === thinking;
  const rest = extraFields(kwargs, new Set(read ? ['enable_thinking'] : []));
  if (rest === undefined) return;
  request.extra ??= {};
  request.extra.chat_template_kwargs = rest;
}

function openAiMessages(request: ChatRequest): JsonRecord[] {
  const messages = request.messages ?? [{ role: 'user' as const, content: request.prompt ?? '' }];
  return messages.map((message) => {
    const out: JsonRecord = {
      role: message.developer === true ? 'developer' : message.role,
      content: openAiContent(message),
    };
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

/** Text, or text and `image_url` parts when the turn has images. */
function openAiContent(message: ChatMessage): string | JsonRecord[] {
  if (message.images === undefined || message.images.length === 0) return message.content;
  const parts: JsonRecord[] = [];
  if (message.content !== '') parts.push({ type: 'text', text: message.content });
  for (const image of message.images) parts.push({ type: 'image_url', image_url: { url: imageUrl(image) } });
  return parts;
}
