import type { TextEvent, ToolCallDeltaEvent } from '../../events/stream-event.ts';
import { ToolCallAccumulator } from '../../events/tool-call-accumulator.ts';
import { isRecord, type JsonRecord, numberField, stringField } from '../common/json-fields.ts';
import { parseTokenLogprobs } from '../common/token-logprobs.ts';
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
  /** Choice 0's tool calls; other choices' are in #otherTools, made when one arrives. */
  readonly #tools = new ChoiceTools();
  #otherTools: Map<number, ChoiceTools> | undefined;

  constructor(options: DecoderOptions = {}) {
    super('openai-chat', options);
    this.#dropReasoning = options.dropReasoning === true;
  }

  protected override atDone(emit: Emit): void {
    this.#completeTools(emit, 0, true);
    if (this.#otherTools !== undefined)
      for (const index of this.#otherTools.keys()) this.#completeTools(emit, index, false);
  }

  protected override atEnd(emit: Emit): void {
    this.#completeTools(emit, 0, false);
    if (this.#otherTools !== undefined)
      for (const index of this.#otherTools.keys()) this.#completeTools(emit, index, false);
  }

  protected override beforeFinish(emit: Emit, index: number): void {
    this.#completeTools(emit, index, false);
  }

  protected choice(choice: JsonRecord, emit: Emit, index: number): void {
    const delta = choice.delta;
    if (!isRecord(delta)) return;
    if (!this.#dropReasoning) {
      // vLLM until late 2025 and llama-server write `reasoning_content`; vLLM 2026 and Ollama `reasoning`.
      // Plain property reads, not stringField: this runs once per chunk (bench/decode-throughput.ts).
      const first = delta.reasoning_content;
      const reasoning = typeof first === 'string' ? first : delta.reasoning;
      if (typeof reasoning === 'string' && reasoning !== '') {
        emit(
          index === 0
            ? { type: 'reasoning', text: reasoning }
            : { type: 'reasoning', text: reasoning, choice: index },
        );
      }
    }
    const content = delta.content;
    if (typeof content === 'string' && content !== '') {
      const logprobs = choice.logprobs;
      if (index === 0 && (logprobs === undefined || logprobs === null)) emit({ type: 'text', text: content });
      else emit(textEvent(content, logprobs, index));
    }
    const toolCalls = delta.tool_calls;
    // TGI before 3.2 sent one object instead of a list.
    if (Array.isArray(toolCalls)) for (const call of toolCalls) this.#toolCall(call, emit, index);
    else if (isRecord(toolCalls)) this.#toolCall(toolCalls, emit, index);
  }

  #toolsOf(index: number): ChoiceTools {
    if (index === 0) return this.#tools;
    this.#otherTools ??= new Map();
    let tools = this.#otherTools.get(index);
    if (tools === undefined) {
      tools = new ChoiceTools();
      this.#otherTools.set(index, tools);
    }
    return tools;
  }

  #toolCall(call: unknown, emit: Emit, choice: number): void {
    if (!isRecord(call)) return;
    const fn = isRecord(call.function) ? call.function : {};
    const args = fn.arguments;
    const delta: ToolCallDeltaEvent = {
      type: 'tool-call-delta',
      index: numberField(call, 'index') ?? 0,
      // Ollama's OpenAI layer sends whole calls; a server may even send the arguments as an object.
      argumentsDelta: typeof args === 'string' ? args : isRecord(args) ? JSON.stringify(args) : '',
    };
    const tools = this.#toolsOf(choice);
    if (!tools.named.has(delta.index)) {
      const id = stringField(call, 'id');
      if (id !== undefined && id !== '') delta.id = id;
      const name = stringField(fn, 'name');
      if (name !== undefined && name !== '') delta.name = name;
      if (delta.name !== undefined) tools.named.add(delta.index);
    }
    if (choice !== 0) delta.choice = choice;
    tools.calls.add(delta);
    emit(delta);
  }

  /** Tool calls are complete at the finish, or at `[DONE]` (TGI tool streams carry no finish). */
  #completeTools(emit: Emit, choice: number, atDone: boolean): void {
    const tools = choice === 0 ? this.#tools : this.#otherTools?.get(choice);
    if (tools === undefined || tools.calls.size === 0) return;
    for (const call of tools.calls.complete()) {
      if (choice !== 0) call.choice = choice;
      emit(call);
    }
    if (atDone && choice === 0 && !this.finished) {
      this.finished = true;
      emit({ type: 'finish', reason: 'tool-calls', raw: null });
    }
  }
}

/** One choice's tool calls being assembled. */
class ChoiceTools {
  readonly calls = new ToolCallAccumulator();
  /** Tool-call indexes whose id and name were already emitted (TGI repeats the id on every fragment). */
  readonly named = new Set<number>();
}

function textEvent(text: string, logprobs: unknown, choice: number): TextEvent {
  const event: TextEvent = { type: 'text', text };
  if (logprobs !== undefined && logprobs !== null) {
    const parsed = parseTokenLogprobs(logprobs);
    if (parsed !== undefined) event.logprobs = parsed;
  }
  if (choice !== 0) event.choice = choice;
  return event;
}
