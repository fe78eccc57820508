import { unifyFinishReason } from '../../events/finish-reason.ts';
import type { FinishEvent, StartEvent } from '../../events/stream-event.ts';
import type { Frame } from '../../wire/frame.ts';
import type { DialectDecoder, Emit } from '../dialect.ts';
import { errorFromPayload } from '../shared/error-payload.ts';
import { isRecord, type JsonRecord, numberField, stringField } from '../shared/json-fields.ts';
import { parseLlamacppTimings } from '../shared/llamacpp-timings.ts';
import { isZeroUsage, parseOpenAiUsage } from '../shared/openai-usage.ts';
import { parsePayload } from '../shared/parse-payload.ts';

/**
 * Decodes `text_completion` streams (`POST /v1/completions`) from every server that writes them:
 * vLLM (every field on every chunk, `"usage":null`), llama-server (`choices` first, `timings` on the
 * last chunk), TGI (`"finish_reason":""` until the last chunk, raw `eos_token`/`stop_sequence`) and
 * Ollama's OpenAI layer (an all-zero `usage` on every chunk). Only choice 0 is read.
 */
export class OpenAiCompletionsDecoder implements DialectDecoder {
  #started = false;
  #finished = false;
  #done = false;
  #errored = false;

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
      return;
    }
    const payload = parsePayload('openai-completions', data);
    // vLLM, TGI and modern llama-server put `{"error": …}` in a data line; llama-server before
    // Sep 2025 wrote a non-SSE `error: {…}` line (the frame is marked `legacyError`).
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
      for (const choice of choices) {
        if (isRecord(choice) && (choice.index === undefined || choice.index === 0))
          this.#choice(choice, emit);
      }
    }
    const usage = payload.usage;
    // vLLM writes `"usage":null` on every chunk (not a record: skipped). Ollama puts an all-zero usage
    // on every chunk when include_usage is set; the real one comes on the last, `choices: []` chunk.
    if (isRecord(usage) && !(isZeroUsage(usage) && Array.isArray(choices) && choices.length > 0)) {
      emit({ type: 'usage', usage: parseOpenAiUsage(usage) });
    }
    if (isRecord(payload.timings)) emit({ type: 'timings', timings: parseLlamacppTimings(payload.timings) });
  }

  end(_emit: Emit): void {
    // Nothing is held back: completions carry no fragments to assemble.
  }

  #choice(choice: JsonRecord, emit: Emit): void {
    const text = choice.text;
    if (typeof text === 'string' && text !== '') emit({ type: 'text', text });
    const raw = choice.finish_reason;
    // TGI writes `"finish_reason": ""` on every chunk but the last: empty means not finished.
    if (typeof raw === 'string' && raw !== '' && !this.#finished) {
      this.#finished = true;
      const finish: FinishEvent = { type: 'finish', reason: unifyFinishReason(raw), raw };
      // vLLM names the stop string that fired in `stop_reason` (an integer when it was a stop token).
      if (typeof choice.stop_reason === 'string') finish.stopSequence = choice.stop_reason;
      emit(finish);
    }
  }
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
