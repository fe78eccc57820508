import { snippet } from '../../errors.ts';
import { unifyFinishReason } from '../../events/finish-reason.ts';
import type { TextEvent, TokenLogprob, TopLogprob } from '../../events/stream-event.ts';
import type { Usage } from '../../events/usage.ts';
import type { Frame } from '../../wire/frame.ts';
import { errorFromPayload } from '../common/error-payload.ts';
import { isRecord, type JsonRecord, numberField, stringField } from '../common/json-fields.ts';
import { parsePayload } from '../common/parse-payload.ts';
import { TextFrameTemplate } from '../common/text-frame-template.ts';
import { type DecoderOptions, type DialectDecoder, DialectError, type Emit } from '../dialect.ts';

/**
 * Decodes TGI's native `/generate_stream` (and `POST /` with `stream: true`) stream (wire-formats.md
 * §5.2): one `data:` event per token, `{"index","token":{"id","text","logprob","special"},
 * ["top_tokens",]"generated_text","details"}`, no terminator; the last event has a non-null
 * `generated_text` (and `details` when the request asked for them). Very old TGI had no `index`.
 *
 * - A `special: true` token (`<|eot_id|>`, `</s>`…) is never text. Old TGI without `special`: a final
 *   token whose text does not end `generated_text` is taken as the end-of-sequence token.
 * - A token with text `""` (it ends mid-character; the next token carries the character) emits nothing.
 * - The final token's text is part of the answer (after a length or stop-sequence finish, TGI includes
 *   the stop sequence in the text; it does not say which sequence it was).
 * - `details`: `finish_reason` (`eos_token`, `stop_sequence`, `length`) -> finish; `input_length`
 *   (`prompt_tokens` before 1.0) and `generated_tokens` -> usage. Without details, a special final token
 *   still means the model ended (`stop`, raw null); otherwise no finish is emitted.
 * - `{"error": "...", "error_type": "..."}` (also validation and overload errors, as the first event of
 *   a 200) -> an error event; the server then closes the stream.
 * - Log probabilities: every token has its `logprob` and `id`, asked for or not, so they are read onto
 *   the text event (`logprobs` with the `top_tokens` alternatives as `top`, `tokenIds`) only when the
 *   request asked: when the event has `top_tokens` (`parameters.top_n_tokens` ≥ 1), or always with the
 *   `logprobs` option (for a request that names `top_n_tokens`, 0 included: the chosen tokens only show
 *   nothing in the stream, so only the reader of the request can tell). Otherwise
 *   they are left out, as other servers leave out what was not asked for (and the text fast path stays).
 *   A token with text `""` (part of a character) has its entry put before the next text event's, whose
 *   text it helps spell; a log probability serde wrote as `null` (not finite) gives no entry.
 */
export class TgiDecoder implements DialectDecoder {
  #started = false;
  #finished = false;
  #errored = false;
  readonly #logprobs: boolean;
  /** Entries of tokens with text `""`, for the next text event. */
  #pendingLogprobs: TokenLogprob[] = [];
  #pendingIds: number[] = [];
  readonly #template: TextFrameTemplate | undefined;
  readonly #decodeFully = (frame: Frame, emit: Emit): void => this.#decode(frame, emit);

  constructor(options: TgiDecoderOptions = {}) {
    this.#logprobs = options.logprobs === true;
    // Each token event has its own `index`, token `id` and `logprob`, not read without `top_tokens`
    // (a frame whose text event carries them is never learned as a template).
    this.#template =
      options.frameTemplates === false
        ? undefined
        : new TextFrameTemplate(['"index":', '"id":', '"logprob":']);
  }

  get complete(): boolean {
    return this.#finished && !this.#errored;
  }

  /** After the `generated_text` event, or after an error (TGI closes the stream after either). */
  get terminated(): boolean {
    return this.#finished || this.#errored;
  }

  /** The event with a non-null `generated_text` is this dialect's terminal marker. */
  get sawTerminator(): boolean {
    return this.#finished;
  }

  frame(frame: Frame, emit: Emit): void {
    if (this.#template === undefined) this.#decode(frame, emit);
    else this.#template.frame(frame, emit, this.#decodeFully);
  }

  #decode(frame: Frame, emit: Emit): void {
    // Never sent on /generate_stream; tolerated (a proxy may add it).
    if (frame.data === '[DONE]') return;
    const payload = parsePayload('tgi', frame.data);
    const error = errorFromPayload(payload, frame.legacyError === true);
    if (error !== undefined || frame.event === 'error') {
      this.#errored = true;
      emit(error ?? { type: 'error', message: frame.data, raw: payload });
      return;
    }
    const token = payload.token;
    const generated = payload.generated_text;
    if (!isRecord(token) && typeof generated !== 'string') {
      throw new DialectError(
        'tgi',
        `an event has no "token" or "generated_text": ${snippet(frame.data, 120)}`,
      );
    }
    if (!this.#started) {
      this.#started = true;
      emit({ type: 'start' });
    }
    const final = typeof generated === 'string';
    const special = isRecord(token) && isSpecial(token, final ? generated : undefined);
    if (isRecord(token) && !special) {
      const text = stringField(token, 'text');
      if (this.#logprobs || Array.isArray(payload.top_tokens)) this.#withLogprobs(token, text, payload, emit);
      else if (text !== undefined && text !== '') emit({ type: 'text', text });
    }
    if (final && !this.#finished) {
      this.#finished = true;
      this.#final(payload, special, emit);
    }
  }

  end(_emit: Emit): void {}

  /** A token's text event with its log probability, its alternatives and its id (see the class notes). */
  #withLogprobs(token: JsonRecord, text: string | undefined, payload: JsonRecord, emit: Emit): void {
    const entry = tokenEntry(token) as TokenLogprob | undefined;
    if (entry !== undefined && Array.isArray(payload.top_tokens)) {
      entry.top = [];
      for (const alternative of payload.top_tokens) {
        const top = isRecord(alternative) ? tokenEntry(alternative) : undefined;
        if (top !== undefined) entry.top.push(top);
      }
    }
    if (entry !== undefined) this.#pendingLogprobs.push(entry);
    const id = numberField(token, 'id');
    if (id !== undefined) this.#pendingIds.push(id);
    if (text === undefined || text === '') return;
    const event: TextEvent = { type: 'text', text };
    if (this.#pendingLogprobs.length > 0) event.logprobs = this.#pendingLogprobs;
    if (this.#pendingIds.length > 0) event.tokenIds = this.#pendingIds;
    this.#pendingLogprobs = [];
    this.#pendingIds = [];
    emit(event);
  }

  #final(payload: JsonRecord, specialToken: boolean, emit: Emit): void {
    const details = payload.details;
    if (!isRecord(details)) {
      if (specialToken) emit({ type: 'finish', reason: 'stop', raw: null });
      return;
    }
    const raw = stringField(details, 'finish_reason');
    if (raw !== undefined) emit({ type: 'finish', reason: unifyFinishReason(raw), raw });
    const usage: Usage = { raw: details };
    const input = numberField(details, 'input_length') ?? numberField(details, 'prompt_tokens');
    const output = numberField(details, 'generated_tokens');
    if (input !== undefined) usage.inputTokens = input;
    if (output !== undefined) usage.outputTokens = output;
    if (input !== undefined || output !== undefined) emit({ type: 'usage', usage });
  }
}

/** The decoder's options: the common ones, and whether the request asked for log probabilities. */
export interface TgiDecoderOptions extends DecoderOptions {
  /**
   * Read every token's `logprob` and `id` onto the text events, with or without `top_tokens` (a request
   * that asked for the chosen tokens' log probabilities only). Default: only when `top_tokens` is there.
   */
  logprobs?: boolean | undefined;
}

/** `{id, text, logprob}` as a log-probability entry; undefined when the log probability is not a number. */
function tokenEntry(token: JsonRecord): TopLogprob | undefined {
  const text = stringField(token, 'text');
  const logprob = numberField(token, 'logprob');
  if (text === undefined || logprob === undefined) return undefined;
  const entry: TopLogprob = { token: text, logprob };
  const id = numberField(token, 'id');
  if (id !== undefined) entry.id = id;
  return entry;
}

function isSpecial(token: JsonRecord, generatedText: string | undefined): boolean {
  if (typeof token.special === 'boolean') return token.special;
  // Before `special` existed, the end-of-sequence token's text (`</s>`) was in the last event only,
  // and `generated_text` leaves it out.
  const text = stringField(token, 'text');
  return generatedText !== undefined && text !== undefined && text !== '' && !generatedText.endsWith(text);
}
