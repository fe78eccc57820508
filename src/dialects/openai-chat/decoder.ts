import type { ToolCallDeltaEvent } from '../../events/stream-event.ts';
import { ToolCallAccumulator } from '../../events/tool-call-accumulator.ts';
import { isRecord, type JsonRecord, numberField, stringField } from '../common/json-fields.ts';
import type { DecoderOptions, Emit } from '../dialect.ts';
import { OpenAiChunkDecoder } from '../openai-family/openai-chunk-decoder.ts';

/**
 * Decodes `chat.completion.chunk` streams from every server that writes them: vLLM, llama-server,
 * TGI and Ollama's OpenAI layer, old and new. The shared parts are in OpenAiChunkDecoder; this reads a
 * delta's reasoning, content and tool-call fragments, and completes tool calls at the finish or at
 * `[DONE]` (TGI tool streams carry no finish).
 */
export class OpenAiChatDecoder extends OpenAiChunkDecoder {
  readonly #dropReasoning: boolean;
  readonly #tools = new ToolCallAccumulator();
  /** Tool-call indexes whose id and name were already emitted (TGI repeats the id on every fragment). */
  readonly #namedTools = new Set<number>();

  constructor(options: DecoderOptions = {}) {
    super('openai-chat', options);
    this.#dropReasoning = options.dropReasoning === true;
  }

  protected override atDone(emit: Emit): void {
    this.#completeTools(emit, true);
  }

  protected override atEnd(emit: Emit): void {
    this.#completeTools(emit, false);
  }

  protected override beforeFinish(emit: Emit): void {
    this.#completeTools(emit, false);
  }

  protected choice(choice: JsonRecord, emit: Emit): void {
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
    if (atDone && !this.finished) {
      this.finished = true;
      emit({ type: 'finish', reason: 'tool-calls', raw: null });
    }
  }
}
