import { unifyFinishReason } from '../../events/finish-reason.ts';
import type { FinishEvent, StartEvent } from '../../events/stream-event.ts';
import type { Frame } from '../../wire/frame.ts';
import { errorFromPayload } from '../common/error-payload.ts';
import { isRecord, type JsonRecord, numberField, stringField } from '../common/json-fields.ts';
import { parsePayload } from '../common/parse-payload.ts';
import { TextFrameTemplate } from '../common/text-frame-template.ts';
import type { DecoderOptions, DialectDecoder, DialectId, Emit } from '../dialect.ts';
import { parseLlamacppTimings } from '../llamacpp-family/llamacpp-timings.ts';
import { isZeroUsage, parseOpenAiUsage } from './openai-usage.ts';

/**
 * What `chat.completion.chunk` and `text_completion` streams share, from every server that writes them
 * (vLLM, llama-server, TGI, Ollama's OpenAI layer): the `[DONE]` sentinel (checked before parsing: it is
 * not JSON), errors inside the 200 in every shape (including old llama-server's `error:` line), the start
 * metadata, every choice (events of choices other than 0 carry their index), the finish, usage (skipping the all-zero
 * usage Ollama puts on every chunk) and llama-server's `timings`. Subclasses read a choice's content.
 */
export abstract class OpenAiChunkDecoder implements DialectDecoder {
  /** Choice 0's finish_reason arrived. */
  protected finished = false;
  /** Choices other than 0 that have begun and not finished (`n > 1`); created when one arrives. */
  #openChoices: Set<number> | undefined;
  readonly #dialect: DialectId;
  #started = false;
  #done = false;
  #errored = false;
  readonly #template: TextFrameTemplate | undefined;
  readonly #decodeFully = (frame: Frame, emit: Emit): void => this.#decode(frame, emit);

  protected constructor(dialect: DialectId, options: DecoderOptions = {}) {
    this.#dialect = dialect;
    // `created` is read from the first chunk only; Ollama's OpenAI layer restamps it on every chunk.
    this.#template = options.frameTemplates === false ? undefined : new TextFrameTemplate(['"created":']);
  }

  /** Every answer finished (or `[DONE]` arrived), and no error came. */
  get complete(): boolean {
    const allFinished = this.finished && (this.#openChoices === undefined || this.#openChoices.size === 0);
    return (allFinished || this.#done) && !this.#errored;
  }

  get terminated(): boolean {
    return this.#done;
  }

  get sawTerminator(): boolean {
    return this.#done;
  }

  frame(frame: Frame, emit: Emit): void {
    if (this.#template === undefined) this.#decode(frame, emit);
    else this.#template.frame(frame, emit, this.#decodeFully);
  }

  #decode(frame: Frame, emit: Emit): void {
    const data = frame.data;
    if (data === '[DONE]' || isPaddedDone(data)) {
      this.#done = true;
      this.atDone(emit);
      return;
    }
    const payload = parsePayload(this.#dialect, data);
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
        if (!isRecord(choice)) continue;
        const index = typeof choice.index === 'number' ? choice.index : 0;
        if (index !== 0) this.#beginChoice(index);
        this.choice(choice, emit, index);
        this.#finish(choice, emit, index);
      }
    }
    const usage = payload.usage;
    // vLLM writes `"usage":null` on every completions chunk (not a record: skipped); Ollama's OpenAI layer
    // an all-zero usage on every chunk with choices when include_usage is set; the real one comes last.
    if (isRecord(usage) && !(isZeroUsage(usage) && Array.isArray(choices) && choices.length > 0)) {
      emit({ type: 'usage', usage: parseOpenAiUsage(usage) });
    }
    if (isRecord(payload.timings)) emit({ type: 'timings', timings: parseLlamacppTimings(payload.timings) });
  }

  end(emit: Emit): void {
    this.atEnd(emit);
  }

  /**
   * Reads the content of one choice (text, reasoning, tool-call fragments). Events of a choice other
   * than 0 carry its index (`choice`); choice 0's carry none.
   */
  protected abstract choice(choice: JsonRecord, emit: Emit, index: number): void;
  /** Called just before a choice's finish event (a chat decoder completes its tool calls here). */
  protected beforeFinish(_emit: Emit, _index: number): void {}
  /** Called at `[DONE]`. */
  protected atDone(_emit: Emit): void {}
  /** Called at the end of the bytes. */
  protected atEnd(_emit: Emit): void {}

  #beginChoice(index: number): void {
    this.#openChoices ??= new Set();
    if (!this.#closedChoices?.has(index)) this.#openChoices.add(index);
  }

  /** Choices other than 0 that finished (a server may repeat a finish). */
  #closedChoices: Set<number> | undefined;

  #finish(choice: JsonRecord, emit: Emit, index: number): void {
    const raw = choice.finish_reason;
    // TGI completions and very old Ollama write `"finish_reason": ""` until the end: empty means not finished.
    if (typeof raw !== 'string' || raw === '') return;
    if (index === 0) {
      if (this.finished) return;
      this.finished = true;
    } else {
      if (this.#closedChoices?.has(index)) return;
      this.#closedChoices ??= new Set();
      this.#closedChoices.add(index);
      this.#openChoices?.delete(index);
    }
    this.beforeFinish(emit, index);
    const finish: FinishEvent = { type: 'finish', reason: unifyFinishReason(raw), raw };
    // vLLM names the stop string that fired in `stop_reason` (an integer when it was a stop token).
    if (typeof choice.stop_reason === 'string') finish.stopSequence = choice.stop_reason;
    if (index !== 0) finish.choice = index;
    emit(finish);
  }
}

/**
 * `[DONE]` with whitespace around it (`data:  [DONE]`: the SSE parser removes one space only). A padded
 * sentinel is still the sentinel (seed 001's first failure mode); it is never JSON.
 */
function isPaddedDone(data: string): boolean {
  return data.length > 6 && data.length < 16 && data.trim() === '[DONE]';
}

function startEvent(payload: JsonRecord): StartEvent {
  const start: StartEvent = { type: 'start' };
  const id = stringField(payload, 'id');
  const model = stringField(payload, 'model');
  const created = numberField(payload, 'created');
  const fingerprint = stringField(payload, 'system_fingerprint');
  // TGI's chunk id is always "": no id at all.
  if (id !== undefined && id !== '') start.id = id;
  if (model !== undefined) start.model = model;
  if (created !== undefined) start.created = created;
  if (fingerprint !== undefined) start.systemFingerprint = fingerprint;
  return start;
}
