import {
  type ChatMessage,
  type ChatRequest,
  requestMessages,
  type UnmappedContent,
} from '../../events/chat-request.ts';
import { isRecord, type JsonRecord } from '../common/json-fields.ts';
import {
  extraFields,
  openAiTools,
  optionalBoolean,
  parseMessages,
  parseTools,
} from '../common/request-fields.ts';
import {
  ollamaImages,
  readOllamaLogprobs,
  readOllamaOptions,
  requireOllamaBody,
  writeOllamaExtra,
  writeOllamaLogprobs,
  writeOllamaOptions,
} from '../ollama-family/ollama-request-fields.ts';

const KNOWN = new Set([
  'model',
  'messages',
  'stream',
  'options',
  'think',
  'tools',
  'format',
  'logprobs',
  'top_logprobs',
]);

/**
 * `POST /api/chat` body -> normalized request. `model` is required (Ollama answers 400 without one);
 * `messages` may be empty or absent (Ollama then only loads the model). Sampling comes from `options`,
 * reasoning from `think`, structured output from `format`, tools in the OpenAI shape, message `images`
 * (base64) as the turn's images. Ollama always reports usage on its `done` line, so `includeUsage` is
 * set: a translated upstream must be asked for the counts. `logprobs: true` with `top_logprobs` is
 * `logprobs` (the top-K count); `keep_alive` (a hint, dropped and named by a translation: HINT_FIELDS),
 * `truncate` and every other field travel in `extra` (with the rest of `options` in `extra.options`). A
 * turn's `thinking` (earlier reasoning) is a hint in `unmapped`.
 */
export function ollamaChatFromBody(input: unknown): ChatRequest {
  const { body, model } = requireOllamaBody(input);
  const unmapped: UnmappedContent[] = [];
  const messages =
    body.messages === undefined || body.messages === null ? [] : parseMessages(body, 'messages', unmapped);
  const request: ChatRequest = { model, messages, includeUsage: true };
  if (unmapped.length > 0) request.unmapped = unmapped;
  // No turns: Ollama loads the model and answers `done_reason: "load"`.
  if (messages.length === 0) request.loadOnly = true;
  const stream = optionalBoolean(body, 'stream');
  if (stream !== undefined) request.stream = stream;
  const tools = parseTools(body);
  if (tools !== undefined) request.tools = tools;
  const options = readOllamaOptions(body, request);
  readOllamaLogprobs(body, request);
  const extra = extraFields(body, KNOWN) ?? {};
  if (options !== undefined) extra.options = options;
  if (Object.keys(extra).length > 0) request.extra = extra;
  return request;
}

/**
 * Normalized request -> `POST /api/chat` body (streaming). `options` is written only when a sampling
 * field is set. Ollama has no `tool_choice`: `none` leaves the tools out, other choices are dropped.
 */
export function ollamaChatToBody(request: ChatRequest): JsonRecord {
  const body: JsonRecord = {
    model: request.model ?? 'default',
    messages: chatMessages(request).map(ollamaMessage),
    stream: true,
  };
  if (request.tools !== undefined && request.toolChoice !== 'none') body.tools = openAiTools(request.tools);
  writeOllamaOptions(body, request);
  writeOllamaLogprobs(body, request);
  writeOllamaExtra(body, request);
  return body;
}

/** The turns to send; an empty list (a load-only request) stays empty unless there is a prompt. */
function chatMessages(request: ChatRequest): ChatMessage[] {
  if (request.loadOnly === true) return [];
  if (request.messages !== undefined && request.messages.length === 0 && request.prompt === undefined)
    return [];
  return requestMessages(request);
}

function ollamaMessage(message: ChatMessage): JsonRecord {
  const out: JsonRecord = { role: message.role, content: message.content };
  if (message.toolCalls !== undefined && message.toolCalls.length > 0) {
    out.tool_calls = message.toolCalls.map((call) => {
      const fn = { name: call.name, arguments: argumentsObject(call.arguments) };
      return call.id === '' ? { function: fn } : { id: call.id, function: fn };
    });
  }
  if (message.role === 'tool' && message.name !== undefined) out.tool_name = message.name;
  if (message.toolCallId !== undefined) out.tool_call_id = message.toolCallId;
  if (message.images !== undefined && message.images.length > 0) out.images = ollamaImages(message.images);
  return out;
}

/** Ollama takes tool-call arguments as an object; text that is not one becomes `{}`. */
function argumentsObject(text: string): JsonRecord {
  try {
    const value: unknown = JSON.parse(text);
    return isRecord(value) ? value : {};
  } catch {
    return {};
  }
}

/**
 * Ollama's answer to a load-only chat (`loadOnly`: no messages): one JSON object, an empty assistant
 * message with `done: true, done_reason: "load"`, as `application/json; charset=utf-8` streaming or not
 * (server/routes.go, ChatHandler); `createdAt` is Ollama's `created_at` text.
 */
export function ollamaChatLoadAnswer(model: string, createdAt: string): JsonRecord {
  return {
    model,
    created_at: createdAt,
    message: { role: 'assistant', content: '' },
    done: true,
    done_reason: 'load',
  };
}
