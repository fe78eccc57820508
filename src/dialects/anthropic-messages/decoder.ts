import { snippet } from '../../errors.ts';
import type { FinishReason } from '../../events/finish-reason.ts';
import type { ErrorEvent, FinishEvent, StartEvent, ToolCallDeltaEvent } from '../../events/stream-event.ts';
import { completeToolCall } from '../../events/tool-call-accumulator.ts';
import type { Usage } from '../../events/usage.ts';
import type { Frame } from '../../wire/frame.ts';
import { errorFromPayload } from '../common/error-payload.ts';
import { isRecord, type JsonRecord, numberField, stringField } from '../common/json-fields.ts';
import { parsePayload } from '../common/parse-payload.ts';
import { TextFrameTemplate } from '../common/text-frame-template.ts';
import { type DecoderOptions, type DialectDecoder, DialectError, type Emit } from '../dialect.ts';

/** A `tool_use` block being streamed: its call's ordinal among the message's tool calls, and fragments. */
interface ToolBlock {
  call: number;
  id: string | undefined;
  name: string | undefined;
  fragments: string[];
}

/**
 * Decodes an Anthropic Messages stream (wire-formats.md §14.2): `message_start` → (`content_block_start`
 * → `content_block_delta`* → `content_block_stop`)* → `message_delta` → `message_stop`, `ping` anywhere.
 * The event's `type` field is read (it equals the SSE `event:` name; a proxy may drop the names).
 *
 * - `text_delta` → text; `thinking_delta` → reasoning; a non-empty `signature_delta` → a reasoning event
 *   with `text: ""` and the signature (llama-server writes an empty one: nothing); `input_json_delta` →
 *   tool-call fragments, parsed once when the block stops (blocks may interleave: llama-server stops
 *   its text block after the tool block began). Tool calls are numbered 0, 1… in the order their blocks
 *   start, whatever their block index. `citations_delta` and `redacted_thinking` have no home yet.
 * - Usage: `message_start`'s and `message_delta`'s `usage` each become a usage event (a later one refines
 *   an earlier one: gateways send `input_tokens: 0` first and the real count last). `inputTokens` is the
 *   whole prompt, as in the other dialects: `input_tokens` + `cache_read_input_tokens` +
 *   `cache_creation_input_tokens` (Anthropic's `input_tokens` leaves the cached part out).
 * - `stop_reason`: `end_turn`/`stop_sequence` → stop (with `stop_sequence`, which llama-server also sets
 *   on `end_turn`), `max_tokens`/`model_context_window_exceeded` → length, `tool_use` → tool-calls,
 *   `refusal` → content-filter, `pause_turn` and anything else → other; the raw word is kept.
 * - An `error` event (Anthropic's `{"type":"error","error":{type,message}}`, or llama-server's bare
 *   `{"code","message","type"}` under `event: error`) → an error event. Only `message_stop` completes.
 */
export class AnthropicMessagesDecoder implements DialectDecoder {
  readonly #dropReasoning: boolean;
  /** Open tool blocks by content block index. */
  readonly #tools = new Map<number, ToolBlock>();
  #toolCalls = 0;
  #stopped = false;
  #errored = false;

  readonly #template: TextFrameTemplate | undefined;
  readonly #decodeFully = (frame: Frame, emit: Emit): void => this.#decode(frame, emit);

  constructor(options: DecoderOptions = {}) {
    this.#dropReasoning = options.dropReasoning === true;
    // Every `text_delta` of a block has the same bytes around its text (its `index` too).
    this.#template = options.frameTemplates === false ? undefined : new TextFrameTemplate();
  }

  get complete(): boolean {
    return this.#stopped && !this.#errored;
  }

  get terminated(): boolean {
    return this.#stopped || this.#errored;
  }

  get sawTerminator(): boolean {
    return this.#stopped;
  }

  frame(frame: Frame, emit: Emit): void {
    if (this.#template === undefined) this.#decode(frame, emit);
    else this.#template.frame(frame, emit, this.#decodeFully);
  }

  #decode(frame: Frame, emit: Emit): void {
    // vLLM ends its Messages stream with its chat stream's sentinel, after `message_stop`.
    if (frame.data === '[DONE]') return;
    const payload = parsePayload('anthropic-messages', frame.data);
    const type = typeof payload.type === 'string' ? payload.type : frame.event;
    // llama-server's error payload has a `type` of its own (`server_error`): the event name decides.
    if (frame.event === 'error' || type === 'error') {
      this.#error(payload, emit);
      return;
    }
    switch (type) {
      case 'content_block_delta':
        this.#delta(payload, emit);
        return;
      case 'ping':
        return;
      case 'message_start':
        this.#start(payload, emit);
        return;
      case 'content_block_start':
        this.#blockStart(payload, emit);
        return;
      case 'content_block_stop': {
        const index = numberField(payload, 'index');
        const tool = index === undefined ? undefined : this.#tools.get(index);
        if (tool !== undefined) {
          this.#tools.delete(index!);
          emit(completeToolCall(tool.call, tool.id, tool.name, tool.fragments.join('')));
        }
        return;
      }
      case 'message_delta':
        this.#messageDelta(payload, emit);
        return;
      case 'message_stop':
        this.#completeTools(emit);
        this.#stopped = true;
        return;
      default: {
        // A bare `{"error": …}` (a proxy's, or the Responses-route shape) is still an error.
        const error = errorFromPayload(payload);
        if (error !== undefined) {
          this.#errored = true;
          emit(error);
          return;
        }
        // Anthropic may add event types; an object without any type is not this dialect.
        if (type === undefined) {
          throw new DialectError('anthropic-messages', `an event has no "type": ${snippet(frame.data, 120)}`);
        }
      }
    }
  }

  end(emit: Emit): void {
    this.#completeTools(emit);
  }

  #start(payload: JsonRecord, emit: Emit): void {
    const message = isRecord(payload.message) ? payload.message : {};
    const start: StartEvent = { type: 'start' };
    const id = stringField(message, 'id');
    if (id !== undefined) start.id = id;
    const model = stringField(message, 'model');
    if (model !== undefined) start.model = model;
    emit(start);
    // Its `output_tokens` (0, or Anthropic's 1) is the count before the answer, not the answer's: left out
    // (kept in `raw`), so a stream cut before `message_delta` has its output estimated, not said to be 0.
    if (isRecord(message.usage)) this.#usage(anthropicUsage(message.usage, false), emit);
  }

  #blockStart(payload: JsonRecord, emit: Emit): void {
    const index = numberField(payload, 'index') ?? 0;
    const block = payload.content_block;
    if (!isRecord(block)) return;
    switch (block.type) {
      case 'text': {
        const text = stringField(block, 'text');
        if (text !== undefined && text !== '') emit({ type: 'text', text });
        return;
      }
      case 'thinking': {
        const text = stringField(block, 'thinking');
        if (!this.#dropReasoning && text !== undefined && text !== '') emit({ type: 'reasoning', text });
        return;
      }
      case 'tool_use':
      case 'server_tool_use': {
        const tool: ToolBlock = {
          call: this.#toolCalls,
          id: stringField(block, 'id'),
          name: stringField(block, 'name'),
          fragments: [],
        };
        this.#toolCalls += 1;
        this.#tools.set(index, tool);
        // The input streams as `input_json_delta`s; a server that sends it whole puts it here.
        const input = block.input;
        const whole = isRecord(input) && Object.keys(input).length > 0 ? JSON.stringify(input) : '';
        if (whole !== '') tool.fragments.push(whole);
        const delta: ToolCallDeltaEvent = {
          type: 'tool-call-delta',
          index: tool.call,
          argumentsDelta: whole,
        };
        if (tool.id !== undefined) delta.id = tool.id;
        if (tool.name !== undefined) delta.name = tool.name;
        emit(delta);
        return;
      }
      default:
        return;
    }
  }

  #delta(payload: JsonRecord, emit: Emit): void {
    const delta = payload.delta;
    if (!isRecord(delta)) return;
    switch (delta.type) {
      case 'text_delta': {
        const text = delta.text;
        if (typeof text === 'string' && text !== '') emit({ type: 'text', text });
        return;
      }
      case 'input_json_delta': {
        const fragment = delta.partial_json;
        const tool = this.#tools.get(numberField(payload, 'index') ?? 0);
        if (tool === undefined || typeof fragment !== 'string' || fragment === '') return;
        tool.fragments.push(fragment);
        emit({ type: 'tool-call-delta', index: tool.call, argumentsDelta: fragment });
        return;
      }
      case 'thinking_delta': {
        const text = delta.thinking;
        if (!this.#dropReasoning && typeof text === 'string' && text !== '')
          emit({ type: 'reasoning', text });
        return;
      }
      case 'signature_delta': {
        const signature = delta.signature;
        if (!this.#dropReasoning && typeof signature === 'string' && signature !== '') {
          emit({ type: 'reasoning', text: '', signature });
        }
        return;
      }
      default:
        return;
    }
  }

  #messageDelta(payload: JsonRecord, emit: Emit): void {
    this.#completeTools(emit);
    const delta = isRecord(payload.delta) ? payload.delta : {};
    const raw = stringField(delta, 'stop_reason');
    if (raw !== undefined) {
      const stopSequence = stringField(delta, 'stop_sequence');
      const finish: FinishEvent = {
        type: 'finish',
        reason: anthropicFinishReason(raw),
        raw,
      };
      if (stopSequence !== undefined) finish.stopSequence = stopSequence;
      emit(finish);
    }
    if (isRecord(payload.usage)) this.#usage(anthropicUsage(payload.usage, true), emit);
  }

  /** A usage event, when the object held any count. */
  #usage(usage: Usage, emit: Emit): void {
    if (usage.inputTokens !== undefined || usage.outputTokens !== undefined) emit({ type: 'usage', usage });
  }

  #error(payload: JsonRecord, emit: Emit): void {
    this.#errored = true;
    // llama-server writes its own `{"code","message","type"}` under `event: error` (capture a05).
    const bare = payload.type !== 'error' && !isRecord(payload.error);
    const error: ErrorEvent | undefined = errorFromPayload(payload, bare);
    emit(error ?? { type: 'error', message: 'unknown error', raw: payload });
  }

  /** Blocks the stream never stopped (a cut, or a server that skips `content_block_stop`). */
  #completeTools(emit: Emit): void {
    if (this.#tools.size === 0) return;
    const open = [...this.#tools.values()].sort((a, b) => a.call - b.call);
    this.#tools.clear();
    for (const tool of open) emit(completeToolCall(tool.call, tool.id, tool.name, tool.fragments.join('')));
  }
}

/** Anthropic's stop reasons, unified (the raw word travels beside). */
export function anthropicFinishReason(raw: string): FinishReason {
  switch (raw) {
    case 'end_turn':
    case 'stop_sequence':
      return 'stop';
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'tool_use':
      return 'tool-calls';
    case 'refusal':
      return 'content-filter';
    default:
      return 'other';
  }
}

/**
 * An Anthropic `usage` object, normalized: `inputTokens` counts the cached prompt too. `withOutput`
 * false leaves `output_tokens` out (`message_start`'s).
 */
export function anthropicUsage(raw: JsonRecord, withOutput: boolean): Usage {
  const usage: Usage = { raw };
  const input = numberField(raw, 'input_tokens');
  const cacheRead = numberField(raw, 'cache_read_input_tokens');
  const cacheCreation = numberField(raw, 'cache_creation_input_tokens');
  if (input !== undefined) usage.inputTokens = input + (cacheRead ?? 0) + (cacheCreation ?? 0);
  const output = withOutput ? numberField(raw, 'output_tokens') : undefined;
  if (output !== undefined) usage.outputTokens = output;
  if (cacheRead !== undefined) usage.cachedInputTokens = cacheRead;
  if (cacheCreation !== undefined) usage.cacheCreationInputTokens = cacheCreation;
  return usage;
}
