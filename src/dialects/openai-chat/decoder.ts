import { unifyFinishReason } from '../../events/finish-reason.ts';
import type { FinishEvent, StartEvent, ToolCallDeltaEvent } from '../../events/stream-event.ts';
import { ToolCallAccumulator } from '../../events/tool-call-accumulator.ts';
import type { Frame } from '../../wire/frame.ts';
import type { DecoderOptions, DialectDecoder, Emit } from '../dialect.ts';
import { errorFromPayload } from '../shared/error-payload.ts';
import { isRecord, type JsonRecord, numberField, stringField } from '../shared/json-fields.ts';
import { parseLlamacppTimings } from '../shared/llamacpp-timings.ts';
import { isZeroUsage, parseOpenAiUsage } from '../shared/openai-usage.ts';
import { parsePayload } from '../shared/parse-payload.ts';

/**
 * Decodes `chat.completion.chunk` streams from every server that writes them: vLLM, llama-server,
 * TGI and Ollama's OpenAI layer, old and new. Only choice 0 is read (the answer; `n > 1` is rare in
 * streaming and each choice would need its own Result).
 */
export class OpenAiChatDecoder implements DialectDecoder {
  readonly #dropReasoning: boolean;
  readonly #tools = new ToolCallAccumulator();
  /** Tool-call indexes whose id and name were already emitted (TGI repeats the id on every fragment). */
  readonly #namedTools = new Set<number>();
  #started = false;
  #finished = false;
  #done = false;
  #errored = false;

  constructor(options: DecoderOptions = {}) {
    this.#dropReasoning = options.dropReasoning === true;
  }

  get complete(): boolean {
    return (this.#finished || this.#done) && !this.#errored;
  }

  get terminated(): boolean {
    return this.#done;
  }

  get sawTerminator(): boolean {
    return this.#done;
  }

  frame(frame: Frame, emit: Emit): void {
    const data = frame.data;
    // The sentinel is not JSON: check it before parsing.
    if (data === '[DONE]') {
      this.#done = true;
      this.#completeTools(emit, true);
      return;
    }
    const payload = parsePayload('openai-chat', data);
    const error = errorFromPayload(payload, frame.legacyError === true);
    if (error !== undefined || frame.event === 'error') {
      this.#errored = true;
      emit(error ?? { type: 'error', message: data });
      return;
    }
    if (!this.#started) {
      this.#started = true;
      emit(startEvent(payload));
    }
    const choices = payload.choices;
    if (Array.isArray(choices)) {
      for (let i = 0; i < choices.length; i++) {
        const choice: unknown = choices[i];
        if (isRecord(choice) && (choice.index === undefined || choice.index === 0))
          this.#choice(choice, emit);
      }
    }
    const usage = payload.usage;
    // Ollama's OpenAI completions put an all-zero usage on every chunk; the real one comes last.
    if (isRecord(usage) && !(isZeroUsage(usage) && Array.isArray(choices) && choices.length > 0)) {
      emit({ type: 'usage', usage: parseOpenAiUsage(usage) });
    }
    if (isRecord(payload.timings)) emit({ type: 'timings', timings: parseLlamacppTimings(payload.timings) });
  }

  end(emit: Emit): void {
    this.#completeTools(emit, false);
  }

  #choice(choice: JsonRecord, emit: Emit): void {
    const delta = choice.delta;
    if (isRecord(delta)) {
      if (!this.#dropReasoning) {
        // vLLM until late 2025 and llama-server write `reasoning_content`; vLLM 2026 and Ollama `reasoning`.
        // Plain property reads, not stringField: this runs once per chunk (bench/decode-throughput.ts).
        const first = delta.reasoning_content;
        const reasoning = typeof first === 'string' ? first : delta.reasoning;
        if (typeof reasoning === 'string' && reasoning !== '') emit({ type: 'reasoning', text: reasoning });
      }
      const content = delta.content;
      if (typeof content === 'string' && content !== '') emit({ type: 'text', text: content });
      const toolCalls = delta.tool_calls;
      // TGI before 3.2 sent one object instead of a list.
      if (Array.isArray(toolCalls)) for (const call of toolCalls) this.#toolCall(call, emit);
      else if (isRecord(toolCalls)) this.#toolCall(toolCalls, emit);
    }
    const raw = choice.finish_reason;
    // Very old Ollama wrote `"finish_reason": ""` on every chunk: empty means not finished.
    if (typeof raw === 'string' && raw !== '' && !this.#finished) {
      this.#finished = true;
      this.#completeTools(emit, false);
      const finish: FinishEvent = { type: 'finish', reason: unifyFinishReason(raw), raw };
      // vLLM names the stop string that fired in `stop_reason` (an integer when it was a stop token).
      if (typeof choice.stop_reason === 'string') finish.stopSequence = choice.stop_reason;
      emit(finish);
    }
  }

  #toolCall(call: unknown, emit: Emit): void {
    if (!isRecord(call)) return;
    const fn = isRecord(call.function) ? call.function : {};
    const args = fn.arguments;
    const delta: ToolCallDeltaEvent = {
      type: 'tool-call-delta',
      index: numberField(call, 'index') ?? 0,
      // Ollama's OpenAI layer sends whole calls; a server may even send the arguments as an object.
      argumentsDelta: typeof args === 'string' ? args : isRecord(args) ? JSON.stringify(args) : '',
    };
    if (!this.#namedTools.has(delta.index)) {
      const id = stringField(call, 'id');
      if (id !== undefined && id !== '') delta.id = id;
      const name = stringField(fn, 'name');
      if (name !== undefined && name !== '') delta.name = name;
      if (delta.name !== undefined) this.#namedTools.add(delta.index);
    }
    this.#tools.add(delta);
    emit(delta);
  }

  /** Tool calls are complete at the finish, or at `[DONE]` (TGI tool streams carry no finish). */
  #completeTools(emit: Emit, atDone: boolean): void {
    if (this.#tools.size === 0) return;
    for (const call of this.#tools.complete()) emit(call);
    if (atDone && !this.#finished) {
      this.#finished = true;
      emit({ type: 'finish', reason: 'tool-calls', raw: null });
    }
  }
}

function startEvent(payload: JsonRecord): StartEvent {
  const start: StartEvent = { type: 'start' };
  const id = stringField(payload, 'id');
  // TGI's chunk id is always "": no id at all.
  const model = stringField(payload, 'model');
  const created = numberField(payload, 'created');
  const fingerprint = stringField(payload, 'system_fingerprint');
  if (id !== undefined && id !== '') start.id = id;
  if (model !== undefined) start.model = model;
  if (created !== undefined) start.created = created;
  if (fingerprint !== undefined) start.systemFingerprint = fingerprint;
  return start;
}
