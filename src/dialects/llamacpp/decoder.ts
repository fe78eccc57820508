import { snippet } from '../../errors.ts';
import type { ErrorEvent, FinishEvent, TextEvent } from '../../events/stream-event.ts';
import { TextAccumulator } from '../../events/text-accumulator.ts';
import type { Usage } from '../../events/usage.ts';
import type { Frame } from '../../wire/frame.ts';
import { parseJson } from '../../wire/parse-json.ts';
import { errorFromPayload } from '../common/error-payload.ts';
import { isRecord, type JsonRecord, numberField, stringField } from '../common/json-fields.ts';
import { parsePayload } from '../common/parse-payload.ts';
import { TextFrameTemplate } from '../common/text-frame-template.ts';
import { parseTokenLogprobs } from '../common/token-logprobs.ts';
import { type DecoderOptions, type DialectDecoder, DialectError, type Emit } from '../dialect.ts';
import { parseLlamacppTimings } from '../llamacpp-family/llamacpp-timings.ts';

/**
 * What a partial event carries that the decoder does not read, and that changes from event to event:
 * `tokens_predicted` counts up (the final event's count is the one read), and with `timings_per_token`
 * each partial event has a progress snapshot of `timings` (only the final event's are read). A text
 * frame read through the template (the frame's `tokens` become the text event's `tokenIds`) may have any
 * number there; every other field must be byte for byte the learned frame's.
 */
const PARTIAL_IGNORED_KEYS: readonly string[] = [
  '"tokens_predicted":',
  '"cache_n":',
  '"prompt_n":',
  '"prompt_ms":',
  '"prompt_per_token_ms":',
  '"prompt_per_second":',
  '"predicted_n":',
  '"predicted_ms":',
  '"predicted_per_token_ms":',
  '"predicted_per_second":',
];

/**
 * Decodes llama-server's native `/completion` stream (wire-formats.md §4.2): `data: {json}` events, no
 * `[DONE]`; the last event has `"stop": true`. Reads both final-event shapes: `stop_type` (Dec 2024 on)
 * and the `stopped_eos` / `stopped_word` / `stopped_limit` flags (before, and in forks), and the
 * `response_fields` projection (only the fields asked for: a final event without `stop` is known by its
 * `stop_type`). A request with several prompts streams them interleaved by `index` (after a `data: null`
 * the server writes first): each is a choice, and the stream is complete when every one has stopped.
 *
 * Events, in order:
 * - `start` (no metadata: partial events carry none) at the first event;
 * - `usage` with `inputTokens` once, from the first partial event's `tokens_evaluated` (2025+ builds), so
 *   the prompt size is known even when the stream is cut;
 * - `text` per non-empty `content` (`""` is a token that completed a held-back UTF-8 sequence or stop
 *   string, or the end-of-sequence token), with its `tokens` ids and `completion_probabilities` (`n_probs`)
 *   when the server sent them;
 * - from the final event: a second `start` carrying `model` (it appears only there; the Result merges
 *   start events), `finish`, `usage` (`tokens_evaluated`, `tokens_predicted`, `timings.cache_n`) and
 *   `timings`. Per-token `timings` on partial events (`timings_per_token`) are progress snapshots and are
 *   not emitted; the final event's are the totals.
 */
export class LlamacppDecoder implements DialectDecoder {
  #started = false;
  /** Prompt 0 stopped. */
  #stopped = false;
  /** Prompts other than 0 (a multi-prompt request): text so far, and whether each stopped. */
  #others: Map<number, { text: TextAccumulator; stopped: boolean }> | undefined;
  #errored = false;
  #inputReported = false;
  /** Text emitted so far, to tell a final `content` that repeats it from one that adds to it. */
  readonly #text = new TextAccumulator();
  readonly #template: TextFrameTemplate | undefined;
  /** Ids of tokens with no text, for the next text event. */
  #pendingIds: number[] | undefined;
  readonly #decodeFully = (frame: Frame, emit: Emit): void => this.#decode(frame, emit);

  constructor(options: DecoderOptions = {}) {
    this.#template =
      options.frameTemplates === false
        ? undefined
        : new TextFrameTemplate(PARTIAL_IGNORED_KEYS, { tokenIdsKey: '"tokens":' });
  }

  get complete(): boolean {
    return this.#allStopped() && !this.#errored;
  }

  /** After every prompt's final event, or after an error (the server closes the stream after either). */
  get terminated(): boolean {
    return this.#allStopped() || this.#errored;
  }

  #allStopped(): boolean {
    if (!this.#stopped) return false;
    if (this.#others !== undefined)
      for (const other of this.#others.values()) if (!other.stopped) return false;
    return true;
  }

  /** The final `"stop": true` event is this dialect's terminal marker. */
  get sawTerminator(): boolean {
    return this.#stopped;
  }

  frame(frame: Frame, emit: Emit): void {
    if (this.#template === undefined) {
      this.#decode(frame, emit);
      return;
    }
    // The full path adds to #text itself (and then returns ''): read the result before #text. Ids of
    // tokens with no text go with the next text event, wherever it is decoded.
    const text = this.#template.frame(
      frame,
      this.#pendingIds === undefined ? emit : this.#withPendingIds(emit),
      this.#decodeFully,
    );
    if (text !== '') this.#text.add(text);
  }

  /** `emit` with the pending ids put at the front of the next text event's. */
  #withPendingIds(emit: Emit): Emit {
    return (event) => {
      const pending = this.#pendingIds;
      if (event.type === 'text' && pending !== undefined) {
        this.#pendingIds = undefined;
        event.tokenIds = pending.concat(event.tokenIds ?? []);
      }
      emit(event);
    };
  }

  #decode(frame: Frame, emit: Emit): void {
    if (frame.legacyError === true || frame.event === 'error') {
      this.#errorFrame(frame.data, emit);
      return;
    }
    // Never sent by llama-server's native endpoint; tolerated (a proxy may add it).
    if (frame.data === '[DONE]') return;
    // A multi-prompt request's stream opens with `data: null` (b10108): nothing in it.
    if (frame.data === 'null') return;
    const payload = parsePayload('llamacpp', frame.data);
    const error = errorFromPayload(payload);
    if (error !== undefined) {
      this.#errored = true;
      emit(error);
      return;
    }
    const stop = isFinalEvent(payload);
    if (stop === undefined) {
      throw new DialectError('llamacpp', `an event has no boolean "stop": ${snippet(frame.data, 120)}`);
    }
    if (!this.#started) {
      this.#started = true;
      emit({ type: 'start' });
    }
    const index = payload.index;
    if (typeof index === 'number' && index !== 0) {
      this.#otherPrompt(index, payload, stop, emit);
      return;
    }
    if (stop) this.#final(payload, emit);
    else this.#partial(payload, emit);
  }

  /** An event of prompt `index` > 0: its text and its finish, as choice `index`. */
  #otherPrompt(index: number, payload: JsonRecord, stop: boolean, emit: Emit): void {
    this.#others ??= new Map();
    let other = this.#others.get(index);
    if (other === undefined) {
      other = { text: new TextAccumulator(), stopped: false };
      this.#others.set(index, other);
    }
    if (other.stopped) return;
    const text = newContent(payload, stop, other.text);
    if (text !== '') {
      other.text.add(text);
      emit(withChoice(textEvent(text, payload), index));
    }
    if (!stop) return;
    other.stopped = true;
    emit(withChoice(finishFromFinal(payload), index));
    const usage = usageFromFinal(payload);
    if (usage?.outputTokens !== undefined) this.#otherOutputTokens += usage.outputTokens;
    if (usage?.inputTokens !== undefined) this.#otherInputTokens += usage.inputTokens;
  }

  #otherOutputTokens = 0;
  #otherInputTokens = 0;
  /** Prompt 0's counts, which a multi-prompt stream's total adds to. */
  #firstUsage: Usage | undefined;

  /** The non-standard `error: {...}` line (before Sep 2025), or an `event: error`. */
  #errorFrame(data: string, emit: Emit): void {
    this.#errored = true;
    const parsed = parseJson(data);
    let event: ErrorEvent | undefined;
    if (parsed.ok && isRecord(parsed.value)) {
      const payload = parsed.value;
      event = 'error' in payload ? errorFromPayload(payload) : errorFromPayload(payload, true);
    }
    emit(event ?? { type: 'error', message: data, raw: data });
  }

  #partial(payload: JsonRecord, emit: Emit): void {
    if (!this.#inputReported) {
      const input = numberField(payload, 'tokens_evaluated');
      if (input !== undefined && input > 0) {
        this.#inputReported = true;
        emit({ type: 'usage', usage: { inputTokens: input } });
      }
    }
    this.#content(payload, emit);
  }

  #final(payload: JsonRecord, emit: Emit): void {
    if (this.#stopped) return;
    this.#stopped = true;
    // In stream mode the final `content` is "" (already sent); if a server repeats the whole text
    // there, only what is new is emitted.
    this.#content(payload, emit);
    const model = stringField(payload, 'model');
    if (model !== undefined && model !== '') emit({ type: 'start', model });
    emit(finishFromFinal(payload));
    const usage = usageFromFinal(payload);
    if (usage !== undefined) {
      this.#firstUsage = usage;
      emit({ type: 'usage', usage });
    }
    if (isRecord(payload.timings)) emit({ type: 'timings', timings: parseLlamacppTimings(payload.timings) });
  }

  #content(payload: JsonRecord, emit: Emit): void {
    // Called for the final event after #stopped is set: a final `content` may repeat the whole text.
    // Only a final event can repeat the text: the text is read (and flattened) only then.
    const text = newContent(payload, this.#stopped, this.#text);
    if (text === '') {
      // A token the server does not render (a special token mid-answer) has no text, but its id is part
      // of the answer's token sequence (a token-exact continuation needs every id): it goes with the
      // next text. Ids of such events before the final one (the end-of-sequence or stop-word token) go nowhere.
      const tokens = payload.tokens;
      if (!this.#stopped && Array.isArray(tokens) && tokens.length > 0) {
        const pending = this.#pendingIds ?? [];
        for (const id of tokens) if (typeof id === 'number') pending.push(id);
        this.#pendingIds = pending;
      }
      return;
    }
    this.#text.add(text);
    const event = textEvent(text, payload);
    const pending = this.#pendingIds;
    if (pending !== undefined) {
      this.#pendingIds = undefined;
      event.tokenIds = pending.concat(event.tokenIds ?? []);
    }
    emit(event);
  }

  end(emit: Emit): void {
    // A multi-prompt stream's usage is every prompt's: the others' counts join prompt 0's at the end.
    if (this.#others === undefined || this.#otherOutputTokens + this.#otherInputTokens === 0) return;
    const usage: Usage = {
      inputTokens: (this.#firstUsage?.inputTokens ?? 0) + this.#otherInputTokens,
      outputTokens: (this.#firstUsage?.outputTokens ?? 0) + this.#otherOutputTokens,
    };
    emit({ type: 'usage', usage });
  }
}

/**
 * Whether an event is the final one: its `stop`, or, in a `response_fields` projection without `stop`,
 * the presence of a stop field. Undefined when neither says (not an event of this dialect).
 */
function isFinalEvent(payload: JsonRecord): boolean | undefined {
  const stop = payload.stop;
  if (typeof stop === 'boolean') return stop;
  if (typeof payload.stop_type === 'string' || typeof payload.stopped_eos === 'boolean') return true;
  // A projection that kept only `content` (or `content` and other per-token fields): a partial event.
  if (typeof payload.content === 'string') return false;
  return undefined;
}

/** The text an event adds: its `content`, less what a final event repeats of the text so far. */
function newContent(payload: JsonRecord, final: boolean, soFar: TextAccumulator): string {
  const content = stringField(payload, 'content');
  if (content === undefined || content === '') return '';
  if (!final) return content;
  const text = soFar.text;
  return content.startsWith(text) ? content.slice(text.length) : content;
}

/** A text event with the token ids and probabilities the server sent beside it. */
function textEvent(text: string, payload: JsonRecord): TextEvent {
  const event: TextEvent = { type: 'text', text };
  const tokens = payload.tokens;
  if (Array.isArray(tokens) && tokens.length > 0) {
    event.tokenIds = tokens.filter((id): id is number => typeof id === 'number');
  }
  const probabilities = payload.completion_probabilities;
  if (probabilities !== undefined) {
    const logprobs = parseTokenLogprobs(probabilities);
    if (logprobs !== undefined && logprobs.length > 0) event.logprobs = logprobs;
  }
  return event;
}

function withChoice<T extends TextEvent | FinishEvent>(event: T, choice: number): T {
  event.choice = choice;
  return event;
}

/**
 * The finish of a final event. `stop_type`: `eos` and `word` (+ `stopping_word`) -> stop, `limit` ->
 * length, `none` (only on failures, wire-formats.md §4.5) -> error. The older flags are read in the
 * order the server set them last: end-of-sequence wins over a limit reached on the same token.
 */
export function finishFromFinal(payload: JsonRecord): FinishEvent {
  const finish = finishWord(payload);
  // The server cut the prompt to fit its context (`truncated`): the answer is to a prompt it did not read whole.
  if (payload.truncated === true) finish.inputTruncated = true;
  return finish;
}

function finishWord(payload: JsonRecord): FinishEvent {
  const word = stringField(payload, 'stopping_word');
  const stopType = stringField(payload, 'stop_type');
  if (stopType !== undefined) {
    switch (stopType) {
      case 'eos':
        return { type: 'finish', reason: 'stop', raw: stopType };
      case 'word':
        return withStopSequence({ type: 'finish', reason: 'stop', raw: stopType }, word);
      case 'limit':
        return { type: 'finish', reason: 'length', raw: stopType };
      case 'none':
        return { type: 'finish', reason: 'error', raw: stopType };
      default:
        return { type: 'finish', reason: 'other', raw: stopType };
    }
  }
  if (payload.stopped_eos === true) return { type: 'finish', reason: 'stop', raw: 'stopped_eos' };
  if (payload.stopped_word === true) {
    return withStopSequence({ type: 'finish', reason: 'stop', raw: 'stopped_word' }, word);
  }
  if (payload.stopped_limit === true) return { type: 'finish', reason: 'length', raw: 'stopped_limit' };
  // All flags false is the old form of `stop_type: "none"`; no information at all (a `response_fields`
  // projection) says nothing about why.
  if (typeof payload.stopped_eos === 'boolean') return { type: 'finish', reason: 'error', raw: null };
  return { type: 'finish', reason: 'other', raw: null };
}

function withStopSequence(finish: FinishEvent, word: string | undefined): FinishEvent {
  if (word !== undefined && word !== '') finish.stopSequence = word;
  return finish;
}

/**
 * Token counts of a final event. `raw` keeps the final event's count fields (`tokens_cached` is the KV
 * cache fill, not cached prompt tokens; `truncated` says the context ran out), so a llama.cpp encoder
 * can write them back.
 */
function usageFromFinal(payload: JsonRecord): Usage | undefined {
  const usage: Usage = {};
  const input = numberField(payload, 'tokens_evaluated');
  const output = numberField(payload, 'tokens_predicted');
  if (input !== undefined) usage.inputTokens = input;
  if (output !== undefined) usage.outputTokens = output;
  if (isRecord(payload.timings)) {
    const cached = numberField(payload.timings, 'cache_n');
    if (cached !== undefined) usage.cachedInputTokens = cached;
  }
  if (input === undefined && output === undefined) return undefined;
  const raw: JsonRecord = {};
  for (const key of ['tokens_predicted', 'tokens_evaluated', 'tokens_cached', 'truncated']) {
    if (payload[key] !== undefined) raw[key] = payload[key];
  }
  usage.raw = raw;
  return usage;
}
