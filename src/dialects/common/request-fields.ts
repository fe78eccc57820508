import type {
  ChatImage,
  ChatMessage,
  ChatRole,
  ChatToolCall,
  ResponseFormat,
  ToolDefinition,
  UnmappedContent,
} from '../../events/chat-request.ts';
import { RequestError } from '../dialect.ts';
import { isRecord, type JsonRecord } from './json-fields.ts';

/** Validators for incoming request bodies: each failure is a 400 that names the field. */

/**
 * The request body as an object. Every dialect's request parsing starts here, so this is also where a
 * number JSON cannot carry is refused: `JSON.parse` reads `1e400` as `Infinity`, which `JSON.stringify`
 * writes back as `null`, so a field the gateway forwards untouched (`n`, `logit_bias`, an option) would
 * reach the upstream as `null`. A 400 naming the field, in every field, as for the ones we read.
 */
export function requireRecord(body: unknown, what = 'the request body'): JsonRecord {
  if (!isRecord(body)) throw new RequestError(`${what} must be a JSON object`);
  rejectNonFiniteNumbers(body);
  return body;
}

/** Throws a 400 naming the first field (depth first) that holds `Infinity`, `-Infinity` or `NaN`. */
export function rejectNonFiniteNumbers(body: JsonRecord): void {
  // Iterative: a deeply nested body must not overflow the stack here.
  const values: unknown[] = [body];
  const paths: string[] = [''];
  while (values.length > 0) {
    const value = values.pop();
    const path = paths.pop() as string;
    if (typeof value === 'number') {
      if (!Number.isFinite(value)) {
        const field = path === '' ? 'the request body' : path;
        throw new RequestError(`${field} must be a finite number (JSON numbers this large do not exist)`, {
          field,
        });
      }
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) {
        const item = value[i];
        if (typeof item === 'object' ? item !== null : typeof item === 'number') {
          values.push(item);
          paths.push(`${path}[${i}]`);
        }
      }
    } else if (typeof value === 'object' && value !== null) {
      const keys = Object.keys(value);
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i] as string;
        const item = (value as JsonRecord)[key];
        if (typeof item === 'object' ? item !== null : typeof item === 'number') {
          values.push(item);
          paths.push(path === '' ? key : `${path}.${key}`);
        }
      }
    }
  }
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

const ROLES = new Set<string>(['system', 'developer', 'user', 'assistant', 'tool']);

/**
 * Message content: a string, null, or a list of parts whose text parts are joined (a part with no
 * normalized form is refused, naming it).
 */
export function messageContent(value: unknown, path: string): string {
  return readContent(value, path).text;
}

/**
 * Content and its images: a string, null, or a list of parts — text parts joined (an assistant's
 * `refusal` part is its text), OpenAI `image_url` parts (`{type: "image_url", image_url: {url}}`, a data
 * URL or an http(s) one) read as images. Any other part (`input_audio`, `file`…) has no normalized form:
 * named in `unmapped` (kept for a same-dialect upstream, refused or dropped by a translation), or refused
 * here when there is no `unmapped` list.
 */
function readContent(
  value: unknown,
  path: string,
  unmapped?: UnmappedContent[],
): { text: string; images: ChatImage[] | undefined } {
  if (value === undefined || value === null) return { text: '', images: undefined };
  if (typeof value === 'string') return { text: value, images: undefined };
  if (Array.isArray(value)) {
    let text = '';
    let images: ChatImage[] | undefined;
    value.forEach((part, i) => {
      if (typeof part === 'string') text += part;
      else if (isRecord(part) && typeof part.text === 'string') text += part.text;
      else if (isRecord(part) && part.type === 'image_url') {
        const at = `${path}[${i}].image_url`;
        const image = part.image_url;
        // The old shape, `image_url: "https://…"`, is accepted too.
        const url = isRecord(image) ? image.url : image;
        if (typeof url !== 'string') throw new RequestError(`${at}.url must be a string`, { field: at });
        images ??= [];
        images.push(imageFromUrl(url, at));
      } else if (isRecord(part) && part.type === 'refusal' && typeof part.refusal === 'string') {
        text += part.refusal;
      } else if (isRecord(part) && typeof part.type === 'string') {
        const name = `${path}[${i}] (${part.type})`;
        if (unmapped === undefined)
          throw new RequestError(`${name}: this content part cannot be carried`, { field: `${path}[${i}]` });
        unmapped.push({ name });
      } else {
        throw new RequestError(`${path} parts must be objects with a type`, { field: path });
      }
    });
    return { text, images };
  }
  throw new RequestError(`${path} must be a string or a list of parts`, { field: path });
}

/** A data URL (`data:image/png;base64,…`) as media type and bytes; any other URL as a URL. */
export function imageFromUrl(url: string, path: string): ChatImage {
  if (url.startsWith('http://') || url.startsWith('https://')) return { url };
  if (!url.startsWith('data:')) {
    throw new RequestError(`${path} must be a data URL or an http(s) URL`, { field: path });
  }
  const comma = url.indexOf(',');
  const header = comma < 0 ? '' : url.slice(5, comma);
  if (comma < 0 || !header.endsWith(';base64')) {
    throw new RequestError(`${path}: a data URL must be base64 (data:<type>;base64,<bytes>)`, {
      field: path,
    });
  }
  const mediaType = header.slice(0, -';base64'.length);
  const image: ChatImage = { data: url.slice(comma + 1) };
  if (mediaType !== '') image.mediaType = mediaType;
  return image;
}

/** An image as a URL: its own, or a data URL of its bytes (media type sniffed when not known). */
export function imageUrl(image: ChatImage): string {
  if (image.url !== undefined) return image.url;
  return `data:${imageMediaType(image)};base64,${image.data ?? ''}`;
}

/**
 * The image's media type: the one it came with, else read from the first bytes of its base64 (PNG,
 * JPEG, GIF, WebP signatures), else PNG. Ollama sends bare base64; Anthropic needs a type.
 */
export function imageMediaType(image: ChatImage): string {
  if (image.mediaType !== undefined) return image.mediaType;
  const data = image.data ?? '';
  if (data.startsWith('/9j/')) return 'image/jpeg';
  if (data.startsWith('R0lGOD')) return 'image/gif';
  if (data.startsWith('UklGR')) return 'image/webp';
  return 'image/png';
}

/**
 * OpenAI-style messages (also Ollama's, whose tool-call arguments are objects). Content parts with no
 * normalized form, and an Ollama turn's `thinking` (earlier reasoning: a hint), go to `unmapped`.
 */
export function parseMessages(
  body: JsonRecord,
  key = 'messages',
  unmapped: UnmappedContent[] = [],
): ChatMessage[] {
  const value = body[key];
  if (!Array.isArray(value)) throw new RequestError(`${key} must be a list of messages`, { field: key });
  return value.map((item, i) => parseMessage(item, `${key}[${i}]`, unmapped));
}

function parseMessage(item: unknown, path: string, unmapped: UnmappedContent[]): ChatMessage {
  if (!isRecord(item)) throw new RequestError(`${path} must be an object`, { field: path });
  const role = item.role;
  if (typeof role !== 'string' || !ROLES.has(role)) {
    throw new RequestError(`${path}.role must be one of system, developer, user, assistant, tool`, {
      field: `${path}.role`,
    });
  }
  const content = readContent(item.content, `${path}.content`, unmapped);
  // Ollama's earlier reasoning sent back for context: no other dialect takes it.
  if (typeof item.thinking === 'string' && item.thinking !== '')
    unmapped.push({ name: `${path}.thinking`, hint: true });
  // `developer` is OpenAI's newer name for the system turn: a system turn, marked.
  const message: ChatMessage = {
    role: role === 'developer' ? 'system' : (role as ChatRole),
    content: content.text,
  };
  if (role === 'developer') message.developer = true;
  // Ollama's `images`: base64 bytes, no media type.
  const ollamaImages = item.images;
  let images = content.images;
  if (ollamaImages !== undefined && ollamaImages !== null) {
    if (!Array.isArray(ollamaImages) || !ollamaImages.every((image) => typeof image === 'string')) {
      throw new RequestError(`${path}.images must be a list of base64 strings`, { field: `${path}.images` });
    }
    images = (images ?? []).concat(ollamaImages.map((data: string) => ({ data })));
  }
  if (images !== undefined && images.length > 0) message.images = images;
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

/**
 * Structured output as OpenAI writes it (`response_format`): `{type: "json_object"}`, or
 * `{type: "json_schema", json_schema: {name, schema, strict, description}}`; `text` is the default.
 */
export function parseOpenAiResponseFormat(
  value: unknown,
  key = 'response_format',
): ResponseFormat | undefined {
  if (value === undefined || value === null) return undefined;
  if (
    !isRecord(value) ||
    !(value.type === 'text' || value.type === 'json_object' || value.type === 'json_schema')
  ) {
    throw new RequestError(`${key}.type must be text, json_object or json_schema`, { field: `${key}.type` });
  }
  const format: ResponseFormat = { type: value.type };
  if (value.type !== 'json_schema') return format;
  const spec = value.json_schema;
  if (!isRecord(spec) || !isRecord(spec.schema)) {
    throw new RequestError(`${key}.json_schema.schema must be an object`, {
      field: `${key}.json_schema.schema`,
    });
  }
  format.schema = spec.schema;
  const name = optionalString(spec, 'name', `${key}.json_schema.name`);
  if (name !== undefined) format.name = name;
  const strict = optionalBoolean(spec, 'strict', `${key}.json_schema.strict`);
  if (strict !== undefined) format.strict = strict;
  const description = optionalString(spec, 'description', `${key}.json_schema.description`);
  if (description !== undefined) format.description = description;
  return format;
}

/** A normalized format as OpenAI's `response_format` (a schema with no name is named `response`). */
export function openAiResponseFormat(format: ResponseFormat): JsonRecord {
  if (format.type !== 'json_schema') return { type: format.type };
  const spec: JsonRecord = { name: format.name ?? 'response' };
  if (format.description !== undefined) spec.description = format.description;
  spec.schema = format.schema ?? {};
  if (format.strict !== undefined) spec.strict = format.strict;
  return { type: 'json_schema', json_schema: spec };
}

/** The JSON Schema a format asks for (`json_object`: any object), for dialects that take a bare schema. */
export function formatSchema(format: ResponseFormat): unknown {
  return format.type === 'json_schema' ? (format.schema ?? {}) : { type: 'object' };
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
