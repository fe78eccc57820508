import type { ChatMessage, ChatRole, ChatToolCall, ToolDefinition } from '../../events/chat-request.ts';
import { RequestError } from '../dialect.ts';
import { isRecord, type JsonRecord } from './json-fields.ts';

/** Validators for incoming request bodies: each failure is a 400 that names the field. */

export function requireRecord(body: unknown, what = 'the request body'): JsonRecord {
  if (!isRecord(body)) throw new RequestError(`${what} must be a JSON object`);
  return body;
}

export function optionalString(body: JsonRecord, key: string, path = key): string | undefined {
  const value = body[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new RequestError(`${path} must be a string`, { field: path });
  return value;
}

export function optionalNumber(
  body: JsonRecord,
  key: string,
  options: { path?: string; integer?: boolean; min?: number; max?: number } = {},
): number | undefined {
  const path = options.path ?? key;
  const value = body[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new RequestError(`${path} must be a number`, { field: path });
  }
  if (options.integer === true && !Number.isInteger(value)) {
    throw new RequestError(`${path} must be an integer`, { field: path });
  }
  if (options.min !== undefined && value < options.min) {
    throw new RequestError(`${path} must be at least ${options.min}`, { field: path });
  }
  if (options.max !== undefined && value > options.max) {
    throw new RequestError(`${path} must be at most ${options.max}`, { field: path });
  }
  return value;
}

export function optionalBoolean(body: JsonRecord, key: string, path = key): boolean | undefined {
  const value = body[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean') throw new RequestError(`${path} must be true or false`, { field: path });
  return value;
}

/** `stop` as a string or a list of strings. */
export function optionalStopList(body: JsonRecord, key: string, path = key): string[] | undefined {
  const value = body[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string') return [value];
  if (Array.isArray(value) && value.every((item) => typeof item === 'string')) return value as string[];
  throw new RequestError(`${path} must be a string or a list of strings`, { field: path });
}

const ROLES = new Set<ChatRole>(['system', 'user', 'assistant', 'tool']);

/** Message content: a string, null, or a list of parts whose text parts are joined. */
export function messageContent(value: unknown, path: string): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) {
    let text = '';
    for (const part of value) {
      if (typeof part === 'string') text += part;
      else if (isRecord(part) && typeof part.text === 'string') text += part.text;
      else if (!(isRecord(part) && typeof part.type === 'string')) {
        throw new RequestError(`${path} parts must be objects with a type`, { field: path });
      }
    }
    return text;
  }
  throw new RequestError(`${path} must be a string or a list of parts`, { field: path });
}

/** OpenAI-style messages (also Ollama's, whose tool-call arguments are objects). */
export function parseMessages(body: JsonRecord, key = 'messages'): ChatMessage[] {
  const value = body[key];
  if (!Array.isArray(value)) throw new RequestError(`${key} must be a list of messages`, { field: key });
  return value.map((item, i) => parseMessage(item, `${key}[${i}]`));
}

function parseMessage(item: unknown, path: string): ChatMessage {
  if (!isRecord(item)) throw new RequestError(`${path} must be an object`, { field: path });
  const role = item.role;
  if (typeof role !== 'string' || !ROLES.has(role as ChatRole)) {
    throw new RequestError(`${path}.role must be one of system, user, assistant, tool`, {
      field: `${path}.role`,
    });
  }
  const message: ChatMessage = {
    role: role as ChatRole,
    content: messageContent(item.content, `${path}.content`),
  };
  if (Array.isArray(item.tool_calls)) {
    message.toolCalls = item.tool_calls.map((call, i) => parseToolCall(call, `${path}.tool_calls[${i}]`));
  }
  const toolCallId = optionalString(item, 'tool_call_id', `${path}.tool_call_id`);
  if (toolCallId !== undefined) message.toolCallId = toolCallId;
  const name =
    optionalString(item, 'name', `${path}.name`) ?? optionalString(item, 'tool_name', `${path}.tool_name`);
  if (name !== undefined) message.name = name;
  return message;
}

function parseToolCall(call: unknown, path: string): ChatToolCall {
  if (!isRecord(call) || !isRecord(call.function)) {
    throw new RequestError(`${path} must be an object with a function`, { field: path });
  }
  const fn = call.function;
  const name = optionalString(fn, 'name', `${path}.function.name`) ?? '';
  const args = fn.arguments;
  return {
    id: typeof call.id === 'string' ? call.id : '',
    name,
    arguments: typeof args === 'string' ? args : JSON.stringify(args ?? {}),
  };
}

/** OpenAI-style `tools: [{type: "function", function: {name, description, parameters}}]`. */
export function parseTools(body: JsonRecord, key = 'tools'): ToolDefinition[] | undefined {
  const value = body[key];
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value)) throw new RequestError(`${key} must be a list`, { field: key });
  return value.map((tool, i) => {
    const path = `${key}[${i}]`;
    const fn = isRecord(tool) ? tool.function : undefined;
    if (!isRecord(fn) || typeof fn.name !== 'string') {
      throw new RequestError(`${path}.function.name must be a string`, { field: `${path}.function.name` });
    }
    const definition: ToolDefinition = { name: fn.name };
    if (typeof fn.description === 'string') definition.description = fn.description;
    if (fn.parameters !== undefined) definition.parameters = fn.parameters;
    return definition;
  });
}

/** OpenAI-style `tool_choice`: a word, or `{type: "function", function: {name}}`. */
export function parseToolChoice(body: JsonRecord, key = 'tool_choice'): string | undefined {
  const value = body[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string') return value;
  if (isRecord(value) && isRecord(value.function) && typeof value.function.name === 'string') {
    return value.function.name;
  }
  throw new RequestError(`${key} must be a string or {type: "function", function: {name}}`, { field: key });
}

/** Renders normalized tools as OpenAI-style tool objects. */
export function openAiTools(tools: ToolDefinition[]): JsonRecord[] {
  return tools.map((tool) => {
    const fn: JsonRecord = { name: tool.name };
    if (tool.description !== undefined) fn.description = tool.description;
    if (tool.parameters !== undefined) fn.parameters = tool.parameters;
    return { type: 'function', function: fn };
  });
}

/** Renders a normalized tool choice as OpenAI writes it. */
export function openAiToolChoice(choice: string): unknown {
  if (choice === 'auto' || choice === 'none' || choice === 'required') return choice;
  return { type: 'function', function: { name: choice } };
}

/** The fields of `body` not in `known`, for passing through to a same-dialect upstream. */
export function extraFields(
  body: JsonRecord,
  known: ReadonlySet<string>,
): Record<string, unknown> | undefined {
  let extra: Record<string, unknown> | undefined;
  for (const key of Object.keys(body)) {
    if (known.has(key)) continue;
    extra ??= {};
    extra[key] = body[key];
  }
  return extra;
}

/**
 * A copy without the keys whose value is undefined (optional fields are absent, not undefined). A copy,
 * not `delete`: deleting turns an object into a dictionary (about 1 KiB more per request, held by every
 * open stream; measured with bench/heap-snapshot-top.ts).
 */
export function dropUndefined<T extends object>(value: T): T {
  const kept: Record<string, unknown> = {};
  // for…in, not Object.entries: no array per field (`value` is a plain object this code built).
  for (const key in value) {
    const field = value[key];
    if (field !== undefined) kept[key] = field;
  }
  return kept as T;
}
