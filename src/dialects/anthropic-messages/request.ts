import type {
  ChatImage,
  ChatMessage,
  ChatRequest,
  ChatToolCall,
  ToolDefinition,
  UnmappedContent,
} from '../../events/chat-request.ts';
import { isRecord, type JsonRecord } from '../common/json-fields.ts';
import {
  dropUndefined,
  extraFields,
  imageMediaType,
  optionalBoolean,
  optionalNumber,
  optionalStopList,
  optionalString,
  requireRecord,
} from '../common/request-fields.ts';
import { RequestError } from '../dialect.ts';

/** The cap written when a normalized request has none (Anthropic's API refuses a body without one). */
export const DEFAULT_MAX_TOKENS = 4096;

const KNOWN = new Set([
  'model',
  'messages',
  'system',
  'max_tokens',
  'stream',
  'temperature',
  'top_p',
  'top_k',
  'stop_sequences',
  'tools',
  'tool_choice',
  'thinking',
  // Not Anthropic's, but llama-server and vLLM take it on this route (the captures send it).
  'seed',
]);

/**
 * `POST /v1/messages` body -> normalized request. `max_tokens` is required (as Anthropic's API has it);
 * `system` (a string or text blocks) becomes the first turn; content blocks map to turns: text is
 * joined, `image` blocks (base64 or URL) are the turn's images, `tool_use` blocks become the assistant
 * turn's tool calls, each `tool_result` a `tool` turn. Blocks with no normalized home (`document`,
 * `search_result`, server tool blocks; a non-text block in a `tool_result` or `system`) are named in
 * `unmapped`, and `thinking` / `redacted_thinking` blocks (earlier reasoning) as hints: a same-dialect
 * upstream gets the body as it came; a translation refuses them, or drops them when allowed, and drops
 * the hints, naming each. `metadata` and unknown fields travel in `extra`.
 */
export function anthropicMessagesFromBody(input: unknown): ChatRequest {
  const body = requireRecord(input);
  const request: ChatRequest = { model: optionalString(body, 'model') };
  // 0 is taken (as llama-server does): the upstream, not the gateway, says whether it can answer it.
  const maxTokens = optionalNumber(body, 'max_tokens', { integer: true, min: 0 });
  if (maxTokens === undefined) throw new RequestError('max_tokens is required', { field: 'max_tokens' });
  request.maxTokens = maxTokens;
  const messages: ChatMessage[] = [];
  const unmapped: UnmappedContent[] = [];
  const system = body.system;
  if (system !== undefined && system !== null) {
    const text = blocksText(system, 'system', unmapped);
    if (text !== '') messages.push({ role: 'system', content: text });
  }
  const turns = body.messages;
  if (!Array.isArray(turns))
    throw new RequestError('messages must be a list of messages', { field: 'messages' });
  if (turns.length === 0) throw new RequestError('messages must not be empty', { field: 'messages' });
  turns.forEach((turn, i) => {
    parseTurn(turn, `messages[${i}]`, messages, unmapped);
  });
  request.messages = messages;
  if (unmapped.length > 0) request.unmapped = unmapped;
  request.temperature = optionalNumber(body, 'temperature', { min: 0 });
  request.topP = optionalNumber(body, 'top_p', { min: 0, max: 1 });
  request.topK = optionalNumber(body, 'top_k', { integer: true });
  request.seed = optionalNumber(body, 'seed', { integer: true });
  request.stop = optionalStopList(body, 'stop_sequences');
  request.stream = optionalBoolean(body, 'stream');
  request.tools = parseAnthropicTools(body.tools);
  request.toolChoice = parseAnthropicToolChoice(body.tool_choice);
  readThinking(body.thinking, request);
  const extra = extraFields(body, KNOWN);
  if (extra !== undefined) request.extra = extra;
  return dropUndefined(request);
}

/** Normalized request -> `POST /v1/messages` body (streaming). */
export function anthropicMessagesToBody(request: ChatRequest): JsonRecord {
  // `max_tokens` is required on this route: a request that set no cap gets LiteLLM's default for it.
  const body: JsonRecord = {
    model: request.model ?? 'default',
    max_tokens: request.maxTokens ?? DEFAULT_MAX_TOKENS,
  };
  const source = request.messages ?? [{ role: 'user' as const, content: request.prompt ?? '' }];
  const system = source.filter((m) => m.role === 'system').map((m) => m.content);
  if (system.length > 0) body.system = system.join('\n\n');
  body.messages = anthropicTurns(source.filter((m) => m.role !== 'system'));
  body.stream = true;
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.topP !== undefined) body.top_p = request.topP;
  if (request.topK !== undefined) body.top_k = request.topK;
  if (request.seed !== undefined) body.seed = request.seed;
  if (request.stop !== undefined) body.stop_sequences = request.stop;
  if (request.tools !== undefined) body.tools = request.tools.map(anthropicTool);
  if (request.toolChoice !== undefined) body.tool_choice = anthropicToolChoice(request.toolChoice);
  const thinking = anthropicThinking(request);
  if (thinking !== undefined) body.thinking = thinking;
  for (const [key, value] of Object.entries(request.extra ?? {})) body[key] = value;
  return body;
}

function parseTurn(turn: unknown, path: string, out: ChatMessage[], unmapped: UnmappedContent[]): void {
  if (!isRecord(turn)) throw new RequestError(`${path} must be an object`, { field: path });
  const role = turn.role;
  if (role !== 'user' && role !== 'assistant') {
    throw new RequestError(`${path}.role must be user or assistant`, { field: `${path}.role` });
  }
  const content = turn.content;
  if (typeof content === 'string') {
    out.push({ role, content });
    return;
  }
  if (!Array.isArray(content)) {
    throw new RequestError(`${path}.content must be a string or a list of content blocks`, {
      field: `${path}.content`,
    });
  }
  let text = '';
  const toolCalls: ChatToolCall[] = [];
  const images: ChatImage[] = [];
  content.forEach((block, j) => {
    const at = `${path}.content[${j}]`;
    if (!isRecord(block) || typeof block.type !== 'string') {
      throw new RequestError(`${at} must be a content block with a type`, { field: at });
    }
    switch (block.type) {
      case 'text':
        if (typeof block.text !== 'string')
          throw new RequestError(`${at}.text must be a string`, { field: `${at}.text` });
        text += block.text;
        return;
      case 'tool_use': {
        const id = optionalString(block, 'id', `${at}.id`) ?? '';
        const name = optionalString(block, 'name', `${at}.name`);
        if (name === undefined)
          throw new RequestError(`${at}.name must be a string`, { field: `${at}.name` });
        toolCalls.push({ id, name, arguments: JSON.stringify(block.input ?? {}) });
        return;
      }
      case 'tool_result': {
        const id = optionalString(block, 'tool_use_id', `${at}.tool_use_id`);
        if (id === undefined) {
          throw new RequestError(`${at}.tool_use_id must be a string`, { field: `${at}.tool_use_id` });
        }
        const result = block.content;
        out.push({
          role: 'tool',
          toolCallId: id,
          content: result === undefined ? '' : blocksText(result, `${at}.content`, unmapped),
        });
        return;
      }
      case 'image':
        images.push(readImage(block.source, `${at}.source`));
        return;
      case 'thinking':
      case 'redacted_thinking':
        // Earlier reasoning sent back: Anthropic's API itself ignores it in earlier turns; no other
        // dialect takes it.
        unmapped.push({ name: `${at} (${block.type})`, hint: true });
        return;
      default:
        // document, search_result, server tool blocks: no normalized home.
        unmapped.push({ name: `${at} (${block.type})` });
        return;
    }
  });
  if (text === '' && toolCalls.length === 0 && images.length === 0) return;
  const message: ChatMessage = { role, content: text };
  if (toolCalls.length > 0) message.toolCalls = toolCalls;
  if (images.length > 0) message.images = images;
  out.push(message);
}

/** An image block's `source`: `{type: "base64", media_type, data}` or `{type: "url", url}`. */
function readImage(source: unknown, path: string): ChatImage {
  if (isRecord(source) && source.type === 'base64' && typeof source.data === 'string') {
    const image: ChatImage = { data: source.data };
    if (typeof source.media_type === 'string') image.mediaType = source.media_type;
    return image;
  }
  if (isRecord(source) && source.type === 'url' && typeof source.url === 'string') return { url: source.url };
  throw new RequestError(`${path} must be {type: "base64", media_type, data} or {type: "url", url}`, {
    field: path,
  });
}

/** An image as an Anthropic block (bytes need a media type: sniffed when the client gave none). */
function anthropicImage(image: ChatImage): JsonRecord {
  if (image.data === undefined) return { type: 'image', source: { type: 'url', url: image.url ?? '' } };
  return {
    type: 'image',
    source: { type: 'base64', media_type: imageMediaType(image), data: image.data },
  };
}

/** A string, or text blocks (`system`, a `tool_result`'s content), as one text; other blocks are unmapped. */
function blocksText(value: unknown, path: string, unmapped: UnmappedContent[]): string {
  if (typeof value === 'string') return value;
  if (!Array.isArray(value)) {
    throw new RequestError(`${path} must be a string or a list of text blocks`, { field: path });
  }
  let text = '';
  value.forEach((block, i) => {
    if (!isRecord(block) || typeof block.type !== 'string') {
      throw new RequestError(`${path} must hold content blocks with a type`, { field: path });
    }
    if (block.type === 'text' && typeof block.text === 'string') text += block.text;
    else unmapped.push({ name: `${path}[${i}] (${block.type})` });
  });
  return text;
}

function parseAnthropicTools(value: unknown): ToolDefinition[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value)) throw new RequestError('tools must be a list', { field: 'tools' });
  return value.map((tool, i) => {
    const path = `tools[${i}]`;
    if (!isRecord(tool) || typeof tool.name !== 'string') {
      throw new RequestError(`${path}.name must be a string`, { field: `${path}.name` });
    }
    const definition: ToolDefinition = { name: tool.name };
    if (typeof tool.description === 'string') definition.description = tool.description;
    if (tool.input_schema !== undefined) definition.parameters = tool.input_schema;
    return definition;
  });
}

/** `{type: auto | any | none | tool, name}` -> `auto`, `required`, `none` or the tool's name. */
function parseAnthropicToolChoice(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (isRecord(value)) {
    switch (value.type) {
      case 'auto':
        return 'auto';
      case 'any':
        return 'required';
      case 'none':
        return 'none';
      case 'tool':
        if (typeof value.name === 'string') return value.name;
    }
  }
  throw new RequestError('tool_choice must be {type: "auto" | "any" | "none"} or {type: "tool", name}', {
    field: 'tool_choice',
  });
}

function readThinking(value: unknown, request: ChatRequest): void {
  if (value === undefined || value === null) return;
  if (!isRecord(value) || typeof value.type !== 'string') {
    throw new RequestError('thinking must be {type: "enabled", budget_tokens} or {type: "disabled"}', {
      field: 'thinking',
    });
  }
  if (value.type === 'disabled') {
    request.reasoning = false;
    return;
  }
  request.reasoning = true;
  const budget = optionalNumber(value, 'budget_tokens', {
    path: 'thinking.budget_tokens',
    integer: true,
    min: 0,
  });
  if (budget !== undefined) request.reasoningBudgetTokens = budget;
}

/**
 * Turns for Anthropic: a `tool` turn becomes a `tool_result` block in a user turn (consecutive ones
 * share it), an assistant turn's tool calls become `tool_use` blocks after its text.
 */
function anthropicTurns(messages: readonly ChatMessage[]): JsonRecord[] {
  const turns: JsonRecord[] = [];
  let results: JsonRecord[] | undefined;
  for (const message of messages) {
    if (message.role === 'tool') {
      const block = { type: 'tool_result', tool_use_id: message.toolCallId ?? '', content: message.content };
      if (results === undefined) {
        results = [block];
        turns.push({ role: 'user', content: results });
      } else {
        results.push(block);
      }
      continue;
    }
    results = undefined;
    const images = message.images ?? [];
    if ((message.toolCalls === undefined || message.toolCalls.length === 0) && images.length === 0) {
      turns.push({ role: message.role, content: message.content });
      continue;
    }
    const blocks: JsonRecord[] = images.map(anthropicImage);
    if (message.content !== '') blocks.push({ type: 'text', text: message.content });
    for (const call of message.toolCalls ?? []) {
      blocks.push({ type: 'tool_use', id: call.id, name: call.name, input: parseArguments(call.arguments) });
    }
    turns.push({ role: message.role, content: blocks });
  }
  return turns;
}

function parseArguments(args: string): unknown {
  if (args.trim() === '') return {};
  try {
    return JSON.parse(args);
  } catch {
    throw new RequestError(
      'a tool call’s arguments are not valid JSON, and Anthropic takes an input object',
      {
        field: 'messages',
      },
    );
  }
}

function anthropicTool(tool: ToolDefinition): JsonRecord {
  const out: JsonRecord = { name: tool.name };
  if (tool.description !== undefined) out.description = tool.description;
  out.input_schema = tool.parameters ?? { type: 'object', properties: {} };
  return out;
}

function anthropicToolChoice(choice: string): JsonRecord {
  if (choice === 'auto') return { type: 'auto' };
  if (choice === 'required') return { type: 'any' };
  if (choice === 'none') return { type: 'none' };
  return { type: 'tool', name: choice };
}

/**
 * `thinking` from the normalized reasoning ask. Anthropic needs a budget: the client's own, else an
 * effort word mapped as LiteLLM maps `reasoning_effort` (low 1024, medium 2048, high 4096), else the
 * API's minimum, 1024.
 */
function anthropicThinking(request: ChatRequest): JsonRecord | undefined {
  const reasoning = request.reasoning;
  if (reasoning === undefined) return undefined;
  if (reasoning === false || reasoning === 'none') return { type: 'disabled' };
  const budget =
    request.reasoningBudgetTokens ?? (reasoning === 'high' ? 4096 : reasoning === 'medium' ? 2048 : 1024);
  return { type: 'enabled', budget_tokens: budget };
}
