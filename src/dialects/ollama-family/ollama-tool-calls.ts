import type { ToolCallDeltaEvent, ToolCallEvent } from '../../events/stream-event.ts';
import { completeToolCall } from '../../events/tool-call-accumulator.ts';
import { isRecord, type JsonRecord, numberField, stringField } from '../common/json-fields.ts';

/**
 * Reads Ollama's native `tool_calls` (`message.tool_calls` on `/api/chat`, top-level on
 * `/api/generate`): whole calls, `[{"id", "function": {"index", "name", "arguments": {…}}}]`, never
 * fragments (wire-formats.md §6.2). Each call becomes one `tool-call-delta` holding all of its arguments
 * (the compact JSON text of the object) followed at once by its complete `tool-call` event.
 *
 * `firstIndex` numbers calls that carry no `function.index` (older servers): the count of calls seen.
 */
export function parseOllamaToolCalls(
  value: unknown,
  firstIndex: number,
): (ToolCallDeltaEvent | ToolCallEvent)[] {
  if (!Array.isArray(value)) return [];
  const events: (ToolCallDeltaEvent | ToolCallEvent)[] = [];
  let fallback = firstIndex;
  for (const call of value) {
    if (!isRecord(call)) continue;
    const fn = isRecord(call.function) ? call.function : {};
    const index = numberField(fn, 'index') ?? fallback;
    fallback += 1;
    const id = nonEmpty(stringField(call, 'id'));
    const name = nonEmpty(stringField(fn, 'name'));
    const args = argumentsText(fn.arguments);
    const delta: ToolCallDeltaEvent = { type: 'tool-call-delta', index, argumentsDelta: args };
    if (id !== undefined) delta.id = id;
    if (name !== undefined) delta.name = name;
    events.push(delta, completeToolCall(index, id, name, args));
  }
  return events;
}

/**
 * One call in Ollama's shape. `arguments` is the parsed object; when the arguments are not a JSON
 * object (they failed to parse, or parsed to a list or a scalar), their text is written as a JSON
 * string instead, so nothing is lost and tokenwire reads the same call back. Ollama itself never
 * writes that; its clients expect an object.
 */
export function ollamaToolCallObject(call: ToolCallEvent): JsonRecord {
  const args = isRecord(call.input) ? call.input : call.arguments;
  return { id: call.id, function: { index: call.index, name: call.name, arguments: args } };
}

function argumentsText(args: unknown): string {
  if (args === undefined || args === null) return '';
  if (typeof args === 'string') return args;
  return JSON.stringify(args);
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === '' ? undefined : value;
}
