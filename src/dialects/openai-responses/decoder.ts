import { unifyFinishReason } from '../../events/finish-reason.ts';
import type {
  ErrorEvent,
  FinishEvent,
  StartEvent,
  TextEvent,
  TokenLogprob,
} from '../../events/stream-event.ts';
import { completeToolCall } from '../../events/tool-call-accumulator.ts';
import type { Usage } from '../../events/usage.ts';
import type { Frame } from '../../wire/frame.ts';
import { errorFromPayload } from '../common/error-payload.ts';
import { isRecord, type JsonRecord, numberField, recordField, stringField } from '../common/json-fields.ts';
import { parsePayload } from '../common/parse-payload.ts';
import { TextFrameTemplate } from '../common/text-frame-template.ts';
import { parseTokenLogprobs } from '../common/token-logprobs.ts';
import { type DecoderOptions, type DialectDecoder, DialectError, type Emit } from '../dialect.ts';
import { parseLlamacppTimings } from '../llamacpp-family/llamacpp-timings.ts';

/**
 * What the decoder noticed that the events do not say: the stream's own bookkeeping going wrong
 * (`tokenwire inspect` lists them). Kept on the decoder, not in the events, so a relay's output and the
 * Result are the same whether or not anyone reads them.
 * - `sequence-gap`: a `sequence_number` that is not the previous one plus one (an event lost or reordered).
 *   The stream is then not complete: its terminal event throws a `DialectError` naming the gap.
 * - `sequence-missing`: some events carry `sequence_number` and this one does not.
 * - `completed-at-cap`: `status: "completed"` with as many output tokens as the request's cap
 *   (llama-server b10108 says `completed` when `max_output_tokens` cut the answer): read as `length`.
 * - `after-terminal`: an event after the terminal one (`response.completed`, `.incomplete`, `.failed`).
 */
export interface ResponsesFinding {
  code: 'sequence-gap' | 'sequence-missing' | 'completed-at-cap' | 'after-terminal';
  message: string;
}

/** `maxOutputTokens`: a `completed` response whose output count reached it was cut by the cap. */
export type ResponsesDecoderOptions = Pick<DecoderOptions, 'dropReasoning' | 'maxOutputTokens'>;

interface PendingCall {
  id: string;
  name: string;
  fragments: string[];
  done: boolean;
}

/**
 * Decodes OpenAI Responses streams (`event: response.*` SSE) from OpenAI, vLLM, llama-server and Ollama.
 * The payload's `type` is read, not the `event:` line (llama-server's mid-stream failure is a bare
 * `data: {"error": …}` with no `event:`). Exactly one terminal event ends the answer; an `error` event or
 * `response.failed` is an error, never complete.
 */
export class OpenAiResponsesDecoder implements DialectDecoder {
  complete = false;
  terminated = false;
  sawTerminator = false;
  /** What went wrong in the stream's bookkeeping (see `ResponsesFinding`). */
  readonly findings: ResponsesFinding[] = [];
  /** Every event so far carried a `sequence_number` (OpenAI, vLLM, Ollama do; llama-server does not). */
  sequenceNumbers: boolean | undefined;
  readonly #dropReasoning: boolean;
  readonly #cap: number | undefined;
  #lastSequence: number | undefined;
  #started = false;
  #model: string | undefined;
  #created: number | undefined;
  /** Calls being assembled, by tool index (fragments joined once, parsed once, at the done item). */
  readonly #tools = new Map<number, PendingCall>();
  /** Function-call item id -> tool index, in the order the calls were added. */
  readonly #toolIndex = new Map<string, number>();
  /** Items whose id was already put on a text or reasoning event. */
  readonly #namedItems = new Set<string>();
  #refusal = false;

  /** Text deltas shaped like an earlier one, read without `JSON.parse` (their sequence_number still checked). */
  readonly #template: TextFrameTemplate | undefined;
  readonly #decodeFully = (frame: Frame, emit: Emit): void => this.#decode(frame, emit);

  constructor(options: ResponsesDecoderOptions & Pick<DecoderOptions, 'frameTemplates'> = {}) {
    this.#dropReasoning = options.dropReasoning === true;
    this.#cap = options.maxOutputTokens;
    this.#template =
      options.frameTemplates === false ? undefined : new TextFrameTemplate(['"sequence_number":']);
  }

  frame(frame: Frame, emit: Emit): void {
    const template = this.#template;
    if (template === undefined || this.terminated) {
      this.#decode(frame, emit);
      return;
    }
    const text = template.match(frame);
    if (text === undefined) {
      template.frame(frame, emit, this.#decodeFully);
      return;
    }
    // A text delta like the last learned one: its sequence number is read from the bytes and checked.
    this.#checkSequence(sequenceNumberIn(frame.data), frame.event ?? 'response.output_text.delta');
    if (text !== '') emit({ type: 'text', text });
  }

  #decode(frame: Frame, emit: Emit): void {
    const payload = parsePayload('openai-responses', frame.data);
    const type = payload.type;
    if (typeof type !== 'string') {
      // llama-server's failure after the 200: `data: {"error": {"code", "message", "type"}}`, no `event:`.
      const error = errorFromPayload(payload);
      if (error !== undefined) {
        emit(error);
        return;
      }
      throw new DialectError('openai-responses', 'an event has no "type"');
    }
    this.#sequence(payload);
    if (this.terminated) {
      this.findings.push({ code: 'after-terminal', message: `${type} after the terminal event` });
      return;
    }
    switch (type) {
      case 'response.created':
      case 'response.in_progress':
      case 'response.queued':
        this.#start(recordField(payload, 'response'), emit);
        return;
      case 'response.output_item.added':
        this.#itemAdded(recordField(payload, 'item'), payload, emit);
        return;
      case 'response.output_item.done':
        this.#itemDone(recordField(payload, 'item'), payload, emit);
        return;
      case 'response.output_text.delta':
      case 'response.refusal.delta': {
        if (type === 'response.refusal.delta') this.#refusal = true;
        const delta = stringField(payload, 'delta');
        if (delta === undefined || delta === '') return;
        const itemId = this.#newItem(payload);
        const event: TextEvent = { type: 'text', text: delta };
        if (itemId !== undefined) event.itemId = itemId;
        // `logprobs: []` unless the request asked (`include: ["message.output_text.logprobs"]`).
        const logprobs = payload.logprobs;
        if (Array.isArray(logprobs) && logprobs.length > 0) {
          const parsed = parseTokenLogprobs(logprobs);
          if (parsed !== undefined && parsed.length > 0) event.logprobs = parsed;
        }
        emit(event);
        // llama-server puts its `timings` on the last delta when a stop word ended the answer (p09).
        const timings = payload.timings;
        if (isRecord(timings)) emit({ type: 'timings', timings: parseLlamacppTimings(timings) });
        return;
      }
      case 'response.reasoning_text.delta':
      case 'response.reasoning_summary_text.delta': {
        if (this.#dropReasoning) return;
        const delta = stringField(payload, 'delta');
        if (delta === undefined || delta === '') return;
        const itemId = this.#newItem(payload);
        emit(
          itemId === undefined
            ? { type: 'reasoning', text: delta }
            : { type: 'reasoning', text: delta, itemId },
        );
        return;
      }
      case 'response.function_call_arguments.delta': {
        const delta = stringField(payload, 'delta');
        if (delta === undefined || delta === '') return;
        const index = this.#indexOf(payload);
        this.#tools.get(index)?.fragments.push(delta);
        emit({ type: 'tool-call-delta', index, argumentsDelta: delta });
        return;
      }
      case 'response.completed':
      case 'response.incomplete':
      case 'response.failed':
        this.#terminal(type, recordField(payload, 'response') ?? {}, payload, emit);
        return;
      case 'error':
        emit(responsesError(payload));
        return;
      default:
        // `.done` events repeat what the deltas said; content parts, annotations and vLLM's own
        // `response.reasoning_part.*` carry nothing the events need.
        return;
    }
  }

  end(emit: Emit): void {
    // A cut stream: calls still being assembled are emitted, so the partial answer keeps them.
    if (!this.terminated) this.#completeTools(emit);
  }

  #sequence(payload: JsonRecord): void {
    const seq = payload.sequence_number;
    this.#checkSequence(typeof seq === 'number' ? seq : undefined, String(payload.type));
  }

  #checkSequence(seq: number | undefined, type: string): void {
    if (seq === undefined) {
      if (this.sequenceNumbers === true) {
        this.findings.push({
          code: 'sequence-missing',
          message: `${type} has no sequence_number`,
        });
        // It arrived all the same: the next number is one past the number it would have had.
        if (this.#lastSequence !== undefined) this.#lastSequence += 1;
      }
      this.sequenceNumbers = false;
      return;
    }
    this.sequenceNumbers ??= true;
    const last = this.#lastSequence;
    if (last !== undefined && seq !== last + 1) {
      this.findings.push({
        code: 'sequence-gap',
        message: `sequence_number ${seq} after ${last} (expected ${last + 1})`,
      });
    }
    this.#lastSequence = seq;
  }

  #start(response: JsonRecord | undefined, emit: Emit): void {
    if (this.#started || response === undefined) return;
    this.#started = true;
    const start: StartEvent = { type: 'start' };
    const id = stringField(response, 'id');
    if (id !== undefined) start.id = id;
    this.#model = stringField(response, 'model');
    if (this.#model !== undefined) start.model = this.#model;
    this.#created = numberField(response, 'created_at');
    if (this.#created !== undefined) start.created = this.#created;
    emit(start);
  }

  /** The item id for the first text or reasoning piece of an item, else undefined. */
  #newItem(payload: JsonRecord): string | undefined {
    const id = stringField(payload, 'item_id');
    if (id === undefined || this.#namedItems.has(id)) return undefined;
    this.#namedItems.add(id);
    return id;
  }

  #itemAdded(item: JsonRecord | undefined, payload: JsonRecord, emit: Emit): void {
    if (item === undefined || item.type !== 'function_call') return;
    const key = stringField(item, 'id') ?? `#${numberField(payload, 'output_index') ?? this.#toolIndex.size}`;
    if (this.#toolIndex.has(key)) return;
    const index = this.#toolIndex.size;
    this.#toolIndex.set(key, index);
    const call: PendingCall = {
      id: stringField(item, 'call_id') ?? key,
      name: stringField(item, 'name') ?? '',
      fragments: [],
      done: false,
    };
    const args = stringField(item, 'arguments') ?? '';
    if (args !== '') call.fragments.push(args);
    this.#tools.set(index, call);
    emit({ type: 'tool-call-delta', index, id: call.id, name: call.name, argumentsDelta: args });
  }

  #itemDone(item: JsonRecord | undefined, payload: JsonRecord, emit: Emit): void {
    if (item === undefined) return;
    if (item.type === 'message') {
      this.#wholeMessage(item, emit);
      return;
    }
    if (item.type !== 'function_call') return;
    const key = stringField(item, 'id') ?? `#${numberField(payload, 'output_index') ?? 0}`;
    // A call that came whole, with no `.added` (converters that write only the done item).
    if (!this.#toolIndex.has(key)) this.#itemAdded(item, payload, emit);
    const index = this.#toolIndex.get(key)!;
    this.#completeTool(index, stringField(item, 'arguments'), emit);
  }

  /** A message item whose text came only whole, in its done item (no deltas named it): its text. */
  #wholeMessage(item: JsonRecord, emit: Emit): void {
    const id = stringField(item, 'id');
    if (id === undefined || this.#namedItems.has(id) || !Array.isArray(item.content)) return;
    let text = '';
    const logprobs: TokenLogprob[] = [];
    for (const part of item.content) {
      if (isRecord(part) && part.type === 'output_text' && typeof part.text === 'string') {
        text += part.text;
        if (Array.isArray(part.logprobs)) logprobs.push(...(parseTokenLogprobs(part.logprobs) ?? []));
      }
    }
    if (text === '') return;
    this.#namedItems.add(id);
    emit(
      logprobs.length > 0 ? { type: 'text', text, itemId: id, logprobs } : { type: 'text', text, itemId: id },
    );
  }

  #indexOf(payload: JsonRecord): number {
    const id = stringField(payload, 'item_id');
    const known = id === undefined ? undefined : this.#toolIndex.get(id);
    if (known !== undefined) return known;
    return this.#toolIndex.get(`#${numberField(payload, 'output_index') ?? 0}`) ?? 0;
  }

  #completeTool(index: number, finalArguments: string | undefined, emit: Emit): void {
    const call = this.#tools.get(index);
    if (call === undefined || call.done) return;
    call.done = true;
    // The done item's arguments are the whole text: when no delta carried them, they are its only copy.
    if (finalArguments !== undefined && finalArguments !== '' && call.fragments.length === 0) {
      call.fragments.push(finalArguments);
      emit({ type: 'tool-call-delta', index, argumentsDelta: finalArguments });
    }
    emit(completeToolCall(index, call.id, call.name, call.fragments.join('')));
  }

  #completeTools(emit: Emit): void {
    for (const index of this.#toolIndex.values()) this.#completeTool(index, undefined, emit);
  }

  #terminal(type: string, response: JsonRecord, payload: JsonRecord, emit: Emit): void {
    // A lost event is lost text: an answer with a gap in its numbers is not whole, whatever its terminal
    // event says. The stream fails as malformed, naming the gap; what arrived stays in the partial answer.
    const gap = this.findings.find((finding) => finding.code === 'sequence-gap');
    if (gap !== undefined) {
      throw new DialectError(
        'openai-responses',
        `${gap.message}: an event was lost, so the answer misses what it carried (${type} not taken as its end)`,
      );
    }
    this.terminated = true;
    this.sawTerminator = true;
    // llama-server names the model and the creation time only here.
    const model = stringField(response, 'model');
    const created = numberField(response, 'created_at');
    if (
      (model !== undefined && this.#model === undefined) ||
      (created !== undefined && this.#created === undefined)
    ) {
      const start: StartEvent = { type: 'start' };
      const id = stringField(response, 'id');
      if (id !== undefined) start.id = id;
      if (model !== undefined) start.model = this.#model = model;
      if (created !== undefined) start.created = this.#created = created;
      this.#started = true;
      emit(start);
    }
    this.#completeTools(emit);
    const usageObject = recordField(response, 'usage');
    const usage = usageObject === undefined ? undefined : parseResponsesUsage(usageObject);
    if (type === 'response.failed') {
      const error = recordField(response, 'error');
      const event: ErrorEvent = {
        type: 'error',
        message: (error === undefined ? undefined : stringField(error, 'message')) ?? 'the response failed',
        raw: error ?? response,
      };
      const code = error === undefined ? undefined : stringField(error, 'code');
      if (code !== undefined) event.errorType = code;
      emit(event);
    } else {
      emit(this.#finish(type, response, usage));
      this.complete = true;
    }
    if (usage !== undefined) emit({ type: 'usage', usage });
    const timings = recordField(payload, 'timings');
    if (timings !== undefined) emit({ type: 'timings', timings: parseLlamacppTimings(timings) });
  }

  #finish(type: string, response: JsonRecord, usage: Usage | undefined): FinishEvent {
    // vLLM ends a capped answer with `response.completed` whose status is `incomplete`.
    if (type === 'response.incomplete' || response.status === 'incomplete') {
      const details = recordField(response, 'incomplete_details');
      const reason = (details === undefined ? undefined : stringField(details, 'reason')) ?? null;
      return {
        type: 'finish',
        reason:
          reason === 'max_output_tokens'
            ? 'length'
            : reason === 'content_filter'
              ? 'content-filter'
              : unifyFinishReason(reason),
        raw: reason,
      };
    }
    const raw = stringField(response, 'status') ?? 'completed';
    if (this.#toolIndex.size > 0) return { type: 'finish', reason: 'tool-calls', raw };
    if (this.#refusal) return { type: 'finish', reason: 'content-filter', raw: 'refusal' };
    const cap = this.#cap;
    if (cap !== undefined && usage?.outputTokens !== undefined && usage.outputTokens >= cap) {
      this.findings.push({
        code: 'completed-at-cap',
        message: `status "${raw}" with ${usage.outputTokens} output tokens, the request's max_output_tokens: read as cut off`,
      });
      return { type: 'finish', reason: 'length', raw };
    }
    return { type: 'finish', reason: raw === 'completed' ? 'stop' : unifyFinishReason(raw), raw };
  }
}

/** The standalone `error` event: `{type: "error", code, message, param, sequence_number}`. */
function responsesError(payload: JsonRecord): ErrorEvent {
  // Some servers nest it (`{"type": "error", "error": {…}}`): read either.
  const nested = errorFromPayload(payload);
  if (nested !== undefined && isRecord(payload.error)) return nested;
  const event: ErrorEvent = {
    type: 'error',
    message: stringField(payload, 'message') ?? 'unknown error',
    raw: payload,
  };
  const code = payload.code;
  if (typeof code === 'string') event.errorType = code;
  else if (typeof code === 'number') event.status = code;
  return event;
}

/** `usage: {input_tokens, input_tokens_details.cached_tokens, output_tokens, output_tokens_details, total_tokens}`. */
export function parseResponsesUsage(usage: JsonRecord): Usage {
  const out: Usage = { raw: usage };
  const input = numberField(usage, 'input_tokens');
  const output = numberField(usage, 'output_tokens');
  const total = numberField(usage, 'total_tokens');
  if (input !== undefined) out.inputTokens = input;
  if (output !== undefined) out.outputTokens = output;
  if (total !== undefined) out.totalTokens = total;
  const inputDetails = recordField(usage, 'input_tokens_details');
  const cached = inputDetails === undefined ? undefined : numberField(inputDetails, 'cached_tokens');
  if (cached !== undefined) out.cachedInputTokens = cached;
  const outputDetails = recordField(usage, 'output_tokens_details');
  const reasoning = outputDetails === undefined ? undefined : numberField(outputDetails, 'reasoning_tokens');
  if (reasoning !== undefined) out.reasoningTokens = reasoning;
  return out;
}

/** The `sequence_number` of a payload, read from its bytes (a frame the template matched: no parse). */
function sequenceNumberIn(data: string): number | undefined {
  const at = data.indexOf('"sequence_number":');
  if (at === -1) return undefined;
  let value = 0;
  let digits = 0;
  for (let i = at + 18; i < data.length; i++) {
    const code = data.charCodeAt(i);
    if (code < 48 || code > 57) break;
    value = value * 10 + (code - 48);
    digits += 1;
  }
  return digits === 0 ? undefined : value;
}
