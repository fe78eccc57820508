import type {
  ChatImage,
  ChatMessage,
  ChatRequest,
  ResponseFormat,
  ToolDefinition,
  UnmappedContent,
} from '../../events/chat-request.ts';
import { isRecord, type JsonRecord } from '../common/json-fields.ts';
import {
  dropUndefined,
  extraFields,
  imageFromUrl,
  imageUrl,
  optionalBoolean,
  optionalNumber,
  optionalStopList,
  optionalString,
  requireRecord,
} from '../common/request-fields.ts';
import { RequestError } from '../dialect.ts';

/**
 * The fields `responsesFromBody` reads. `seed`, `stop` and `top_k` are not OpenAI's, but llama-server and
 * vLLM take them on this route (llama-server converts the request to a chat one), so they are mapped.
 */
const KNOWN = new Set([
  'model',
  'input',
  'instructions',
  'max_output_tokens',
  'temperature',
  'top_p',
  'top_k',
  'seed',
  'stop',
  'tools',
  'tool_choice',
  'reasoning',
  'text',
  'store',
  'stream',
  'previous_response_id',
  'conversation',
  'include',
  'top_logprobs',
]);

/** The `include` value that turns on the output tokens' log probabilities. */
const LOGPROBS_INCLUDE = 'message.output_text.logprobs';

/**
 * Fields that need state the gateway does not keep (an earlier response, a conversation): refused with a
 * 400 naming the field, as Ollama (stateless) refuses them too, rather than answered without the history.
 */
const STATEFUL = ['previous_response_id', 'conversation'] as const;

/** `POST /v1/responses` body -> normalized request. */
export function responsesFromBody(input: unknown): ChatRequest {
  const body = requireRecord(input);
  for (const field of STATEFUL) {
    if (body[field] !== undefined && body[field] !== null) {
      throw new RequestError(
        `${field} is not supported: this server keeps no earlier responses; send the whole conversation in input`,
        { field },
      );
    }
  }
  const messages: ChatMessage[] = [];
  const instructions = optionalString(body, 'instructions');
  if (instructions !== undefined && instructions !== '')
    messages.push({ role: 'system', content: instructions });
  const unmapped: UnmappedContent[] = [];
  readInput(body.input, messages, unmapped);
  const request: ChatRequest = { messages };
  if (unmapped.length > 0) request.unmapped = unmapped;
  request.model = optionalString(body, 'model');
  request.maxTokens = optionalNumber(body, 'max_output_tokens', { integer: true, min: 0 });
  request.temperature = optionalNumber(body, 'temperature', { min: 0 });
  request.topP = optionalNumber(body, 'top_p', { min: 0, max: 1 });
  request.topK = optionalNumber(body, 'top_k', { integer: true });
  request.seed = optionalNumber(body, 'seed', { integer: true });
  request.stop = optionalStopList(body, 'stop');
  request.tools = parseResponsesTools(body.tools);
  request.toolChoice = parseResponsesToolChoice(body.tool_choice);
  request.stream = optionalBoolean(body, 'stream');
  request.store = optionalBoolean(body, 'store');
  const extra = extraFields(body, KNOWN) ?? {};
  readLogprobs(body, request, extra);
  readReasoning(body.reasoning, request, extra);
  readText(body.text, request, extra);
  if (Object.keys(extra).length > 0) request.extra = extra;
  return dropUndefined(request);
}

/** `input`: a string (one user turn) or a list of items: messages, `function_call`, `function_call_output`. */
function readInput(input: unknown, messages: ChatMessage[], unmapped: UnmappedContent[]): void {
  if (typeof input === 'string') {
    messages.push({ role: 'user', content: input });
    return;
  }
  if (!Array.isArray(input)) {
    throw new RequestError('input must be a string or a list of items', { field: 'input' });
  }
  input.forEach((item, i) => {
    const path = `input[${i}]`;
    if (!isRecord(item)) throw new RequestError(`${path} must be an object`, { field: path });
    // The shorthand `{role, content}` has no type: it is a message (as the servers read it).
    const type = item.type ?? (item.role === undefined ? undefined : 'message');
    switch (type) {
      case 'message': {
        const parts = inputParts(item.content, `${path}.content`, unmapped);
        const message: ChatMessage = { role: inputRole(item.role, path), content: parts.text };
        // `developer` is a system turn, marked so that an OpenAI-family upstream gets it back.
        if (item.role === 'developer') message.developer = true;
        if (parts.images.length > 0) message.images = parts.images;
        messages.push(message);
        return;
      }
      case 'function_call': {
        const call = {
          id: requiredString(item, 'call_id', path),
          name: requiredString(item, 'name', path),
          arguments: requiredString(item, 'arguments', path),
        };
        const last = messages[messages.length - 1];
        // Calls that follow an assistant turn belong to it (a message item, then its calls).
        if (last !== undefined && last.role === 'assistant') {
          if (last.toolCalls === undefined) last.toolCalls = [call];
          else last.toolCalls.push(call);
        } else messages.push({ role: 'assistant', content: '', toolCalls: [call] });
        return;
      }
      case 'function_call_output':
        messages.push({
          role: 'tool',
          toolCallId: requiredString(item, 'call_id', path),
          content: inputParts(item.output, `${path}.output`, unmapped, false).text,
        });
        return;
      case 'reasoning':
        // Earlier reasoning sent back for context: no normalized place, and servers drop it or keep it
        // opaque (Ollama reads only `encrypted_content`): a hint, dropped and named by a translation.
        unmapped.push({ name: `${path} (reasoning)`, hint: true });
        return;
      default:
        throw new RequestError(
          `${path}.type ${JSON.stringify(type)} is not supported (message, function_call, function_call_output)`,
          { field: `${path}.type` },
        );
    }
  });
  if (messages.length === 0) throw new RequestError('input must not be empty', { field: 'input' });
}

function inputRole(role: unknown, path: string): ChatMessage['role'] {
  if (role === 'user' || role === 'assistant' || role === 'system') return role;
  if (role === 'developer') return 'system';
  throw new RequestError(`${path}.role must be user, assistant, system or developer`, {
    field: `${path}.role`,
  });
}

/**
 * Text parts joined (`input_text`, `output_text`, `text`; an assistant's `refusal` is its text), and
 * `input_image` parts given by `image_url` (a data URL or an http(s) one) when allowed. Any other part
 * (`input_file`, `input_audio`, an image by `file_id`, an image in a tool's output) has no normalized
 * form: named in `unmapped` (kept for a same-dialect upstream, refused or dropped by a translation).
 */
function inputParts(
  content: unknown,
  path: string,
  unmapped: UnmappedContent[],
  withImages = true,
): { text: string; images: ChatImage[] } {
  const images: ChatImage[] = [];
  if (typeof content === 'string') return { text: content, images };
  if (!Array.isArray(content))
    throw new RequestError(`${path} must be a string or a list of parts`, { field: path });
  let text = '';
  content.forEach((part, j) => {
    if (withImages && isRecord(part) && part.type === 'input_image' && typeof part.image_url === 'string') {
      images.push(imageFromUrl(part.image_url, `${path}[${j}].image_url`));
      return;
    }
    const partPath = `${path}[${j}]`;
    if (
      isRecord(part) &&
      (part.type === 'input_text' || part.type === 'output_text' || part.type === 'text') &&
      typeof part.text === 'string'
    ) {
      text += part.text;
      return;
    }
    if (isRecord(part) && part.type === 'refusal' && typeof part.refusal === 'string') {
      text += part.refusal;
      return;
    }
    if (isRecord(part) && typeof part.type === 'string') {
      unmapped.push({ name: `${partPath} (${part.type})` });
      return;
    }
    throw new RequestError(`${partPath} must be a content part with a type`, { field: partPath });
  });
  return { text, images };
}

function requiredString(item: JsonRecord, key: string, path: string): string {
  const value = item[key];
  if (typeof value !== 'string')
    throw new RequestError(`${path}.${key} must be a string`, { field: `${path}.${key}` });
  return value;
}

/** Responses tools are flat: `{type: "function", name, description, parameters, strict}`. */
function parseResponsesTools(value: unknown): ToolDefinition[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value)) throw new RequestError('tools must be a list', { field: 'tools' });
  return value.map((tool, i) => {
    const path = `tools[${i}]`;
    if (!isRecord(tool) || tool.type !== 'function') {
      const type = isRecord(tool) ? tool.type : undefined;
      throw new RequestError(`${path}.type ${JSON.stringify(type)} is not supported (only function tools)`, {
        field: `${path}.type`,
      });
    }
    if (typeof tool.name !== 'string')
      throw new RequestError(`${path}.name must be a string`, { field: `${path}.name` });
    const definition: ToolDefinition = { name: tool.name };
    if (typeof tool.description === 'string') definition.description = tool.description;
    if (tool.parameters !== undefined && tool.parameters !== null) definition.parameters = tool.parameters;
    return definition;
  });
}

/** `auto`, `none`, `required`, or `{type: "function", name}`. */
function parseResponsesToolChoice(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (value === 'auto' || value === 'none' || value === 'required') return value;
  if (isRecord(value) && value.type === 'function' && typeof value.name === 'string') return value.name;
  throw new RequestError('tool_choice must be auto, none, required or {type: "function", name}', {
    field: 'tool_choice',
  });
}

/**
 * `include: ["message.output_text.logprobs"]` asks for the output tokens' log probabilities, with
 * `top_logprobs` (0–20) alternatives each: the normalized top-K count. `top_logprobs` alone asks for
 * nothing (as `top_logprobs` without `logprobs: true` on OpenAI chat). The other `include` values are
 * kept in `extra.include`.
 */
function readLogprobs(body: JsonRecord, request: ChatRequest, extra: Record<string, unknown>): void {
  const top = optionalNumber(body, 'top_logprobs', { integer: true, min: 0, max: 20 });
  const include = body.include;
  if (include === undefined || include === null) return;
  if (!Array.isArray(include) || !include.every((value) => typeof value === 'string')) {
    throw new RequestError('include must be a list of strings', { field: 'include' });
  }
  const rest = include.filter((value) => value !== LOGPROBS_INCLUDE);
  if (rest.length !== include.length) request.logprobs = top ?? 0;
  if (rest.length > 0) extra.include = rest;
}

/** `reasoning: {effort, summary}`: the effort is normalized (`none` turns reasoning off); the rest is kept. */
function readReasoning(value: unknown, request: ChatRequest, extra: Record<string, unknown>): void {
  if (value === undefined || value === null) return;
  if (!isRecord(value)) throw new RequestError('reasoning must be an object', { field: 'reasoning' });
  const effort = optionalString(value, 'effort', 'reasoning.effort');
  if (effort !== undefined) request.reasoning = effort === 'none' ? false : effort;
  const rest = extraFields(value, new Set(['effort']));
  if (rest !== undefined) extra.reasoning = rest;
}

/** `text: {format, verbosity}`: the format is normalized (structured output); the rest is kept. */
function readText(value: unknown, request: ChatRequest, extra: Record<string, unknown>): void {
  if (value === undefined || value === null) return;
  if (!isRecord(value)) throw new RequestError('text must be an object', { field: 'text' });
  const format = value.format;
  if (format !== undefined && format !== null) {
    if (
      !isRecord(format) ||
      !(format.type === 'text' || format.type === 'json_object' || format.type === 'json_schema')
    ) {
      throw new RequestError('text.format.type must be text, json_object or json_schema', {
        field: 'text.format.type',
      });
    }
    const out: ResponseFormat = { type: format.type };
    if (format.type === 'json_schema') {
      if (!isRecord(format.schema)) {
        throw new RequestError('text.format.schema must be an object', { field: 'text.format.schema' });
      }
      out.schema = format.schema;
      const name = optionalString(format, 'name', 'text.format.name');
      if (name !== undefined) out.name = name;
      const strict = optionalBoolean(format, 'strict', 'text.format.strict');
      if (strict !== undefined) out.strict = strict;
      const description = optionalString(format, 'description', 'text.format.description');
      if (description !== undefined) out.description = description;
    }
    request.responseFormat = out;
  }
  const rest = extraFields(value, new Set(['format']));
  if (rest !== undefined) extra.text = rest;
}

/** Normalized request -> `POST /v1/responses` body (streaming). */
export function responsesToBody(request: ChatRequest): JsonRecord {
  const body: JsonRecord = { model: request.model ?? 'default' };
  const messages = request.messages ?? [];
  // Leading system turns are the instructions; later ones stay in the input as system messages.
  let first = 0;
  const instructions: string[] = [];
  // A `developer` turn stays one (in the input), as the client sent it.
  while (first < messages.length && messages[first]!.role === 'system' && messages[first]!.developer !== true)
    instructions.push(messages[first++]!.content);
  if (instructions.length > 0) body.instructions = instructions.join('\n\n');
  const rest = messages.slice(first);
  if (rest.length === 0 && messages.length === 0) body.input = request.prompt ?? '';
  else if (rest.length === 1 && rest[0]!.role === 'user' && rest[0]!.images === undefined)
    body.input = rest[0]!.content;
  else body.input = inputItems(rest);
  body.stream = true;
  if (request.maxTokens !== undefined) body.max_output_tokens = request.maxTokens;
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.topP !== undefined) body.top_p = request.topP;
  if (request.topK !== undefined) body.top_k = request.topK;
  if (request.seed !== undefined) body.seed = request.seed;
  if (request.stop !== undefined) body.stop = request.stop;
  if (request.tools !== undefined) {
    body.tools = request.tools.map((tool) => {
      const out: JsonRecord = { type: 'function', name: tool.name };
      if (tool.description !== undefined) out.description = tool.description;
      if (tool.parameters !== undefined) out.parameters = tool.parameters;
      return out;
    });
  }
  const choice = request.toolChoice;
  if (choice !== undefined) {
    body.tool_choice =
      choice === 'auto' || choice === 'none' || choice === 'required'
        ? choice
        : { type: 'function', name: choice };
  }
  const extra = request.extra ?? {};
  const reasoningRest = isRecord(extra.reasoning) ? extra.reasoning : undefined;
  if (request.reasoning !== undefined || reasoningRest !== undefined) {
    const reasoning: JsonRecord = { ...reasoningRest };
    if (typeof request.reasoning === 'string') reasoning.effort = request.reasoning;
    else if (request.reasoning === false) reasoning.effort = 'none';
    // A bare "reason" (Ollama `think: true`, Anthropic thinking enabled): OpenAI's default effort.
    else if (request.reasoning === true) reasoning.effort = 'medium';
    body.reasoning = reasoning;
  }
  const textRest = isRecord(extra.text) ? extra.text : undefined;
  if (request.responseFormat !== undefined || textRest !== undefined) {
    const text: JsonRecord = { ...textRest };
    if (request.responseFormat !== undefined) text.format = dropUndefined({ ...request.responseFormat });
    body.text = text;
  }
  if (request.store !== undefined) body.store = request.store;
  for (const [key, value] of Object.entries(extra))
    if (key !== 'reasoning' && key !== 'text' && key !== 'include') body[key] = value;
  const include = Array.isArray(extra.include) ? [...extra.include] : [];
  if (request.logprobs !== undefined) {
    include.push(LOGPROBS_INCLUDE);
    if (request.logprobs > 0) body.top_logprobs = request.logprobs;
  }
  if (include.length > 0) body.include = include;
  return body;
}

function inputItems(messages: readonly ChatMessage[]): JsonRecord[] {
  const items: JsonRecord[] = [];
  for (const message of messages) {
    if (message.role === 'tool') {
      items.push({
        type: 'function_call_output',
        call_id: message.toolCallId ?? '',
        output: message.content,
      });
      continue;
    }
    if (message.content !== '' || message.toolCalls === undefined || message.images !== undefined) {
      const role = message.developer === true ? 'developer' : message.role;
      items.push({ role, content: responsesContent(message) });
    }
    for (const call of message.toolCalls ?? []) {
      items.push({ type: 'function_call', call_id: call.id, name: call.name, arguments: call.arguments });
    }
  }
  return items;
}

/** Text, or `input_text` and `input_image` parts when the turn has images. */
function responsesContent(message: ChatMessage): string | JsonRecord[] {
  if (message.images === undefined || message.images.length === 0) return message.content;
  const parts: JsonRecord[] = [];
  if (message.content !== '') parts.push({ type: 'input_text', text: message.content });
  for (const image of message.images) parts.push({ type: 'input_image', image_url: imageUrl(image) });
  return parts;
}
