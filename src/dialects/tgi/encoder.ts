import type { FinishEvent, StreamEvent, TextEvent, TopLogprob } from '../../events/stream-event.ts';
import { StreamTotals } from '../common/stream-totals.ts';
import type { DialectEncoder, EncoderOptions, FrameSink, MidStreamError } from '../dialect.ts';

/**
 * Which TGI to imitate on `/generate_stream` (wire-formats.md §5.1, §5.2):
 * - `modern` (default): TGI ≥ 2.1 (axum 0.7): `data: {...}`; `details` with `input_length`.
 * - `legacy`: TGI ≤ 2.0.x (axum 0.6): `data:{...}` without the space; `details` without `input_length`.
 */
export type TgiFlavor = 'modern' | 'legacy';

export const TGI_FLAVORS: readonly TgiFlavor[] = ['modern', 'legacy'];

/** A token of the model's vocabulary as TGI writes it (`id` and `text`). */
export interface TgiSpecialToken {
  id: number;
  text: string;
}

/** The TGI encoder's options: the common ones, and the model's own end-of-sequence token when known. */
export interface TgiEncoderOptions extends EncoderOptions {
  /**
   * The end-of-sequence token of the model that answered (`<|eot_id|>` 128009 for Llama 3, `</s>` 2 for
   * Llama 2), for a writer that knows it (a simulator of one model). Given, an end-of-sequence finish
   * ends with it as its own special token, as TGI does; not given, no such token is invented.
   */
  endOfSequence?: TgiSpecialToken | undefined;
}

/** One token event's token, before it is written: `null` where the upstream did not say. */
interface HeldToken {
  id: number | null;
  text: string;
  logprob: number | null;
  top: readonly TopLogprob[] | undefined;
}

/**
 * Writes TGI's native stream from normalized events: one token event per generated token, the last of
 * them carrying `generated_text` and `details`, as TGI does. So that the last token can carry them, the
 * latest token is held until the next one, the end, or `flush()` — which relays call after each upstream
 * read, so no token waits for a later read (holding it for the next token would delay every token, the
 * first included, by one inter-token gap). When the upstream's finish came in the same read as its last
 * token, or the token is the request's last (`max_new_tokens`), the details go on that token; when it
 * came in a later read (the last token already written), they go on one more event with an empty,
 * id-less token (`special: true` after an end-of-sequence finish, where TGI too writes the end token
 * as its own event; after a stop string, the one extra event left), not counted in `generated_tokens`
 * unless the upstream's count does. An error writes the held token first.
 *
 * What the events may not carry is written as follows (where the bytes can differ from a real TGI's):
 * - a token's `id` and `logprob` are the upstream's (its token ids and log probabilities, asked for
 *   with TGI's `top_n_tokens`, OpenAI `logprobs`, llama.cpp `n_probs`); when it sent none they are
 *   `null`, never a made-up number. `null` is what serde writes for a non-finite log probability, and
 *   what huggingface_hub (permissive dataclasses) and @huggingface/inference (no validation) read; the
 *   deprecated `text_generation` Python client's pydantic model refuses it.
 * - a text event holding several tokens (its log probabilities name them and spell its text) is written
 *   as one event per token; otherwise the text event is one token;
 * - `top_tokens` (TGI's `top_n_tokens` alternatives) is written when the event's log probabilities have
 *   alternatives, each `special: false` (whether an alternative is a control token is not known);
 * - no end-of-sequence token is invented: after an end-of-sequence finish the last text token carries
 *   the details, unless `endOfSequence` names the model's own;
 * - a stream with no text at all ends with one event whose token is `{"id":null,"text":"","logprob":null}`
 *   (`special: true` after an end-of-sequence finish: it stands for the unnamed end token), so a client
 *   still gets `generated_text` and `details`;
 * - `details` is always written (the client may not have asked for it, but it is the only place the
 *   finish reason and the counts can go): `finish_reason` is the raw word (`eos_token`, `length`,
 *   `stop_sequence` — the latter whenever the upstream said a stop string ended it: vLLM `stop_reason`,
 *   llama.cpp `stop_type: "word"`, Anthropic `stop_sequence`; Ollama and llama-server's OpenAI routes
 *   do not say, so their stop strings read as `eos_token`), `generated_tokens` the upstream's output count
 *   (else the token events written), `seed` the request's (null when it gave none), `input_length` the
 *   prompt count (null when unknown);
 * - `generated_text` is the text written; a stop sequence that other servers strip is not added back.
 * Reasoning, tool calls and timings are not written: the native stream has no fields for them.
 */
export class TgiEncoder implements DialectEncoder {
  readonly framing = 'sse' as const;
  readonly sseSpace: boolean;
  readonly #flavor: TgiFlavor;
  readonly #endOfSequence: TgiSpecialToken | undefined;
  #index = 0;
  #text = '';
  #held: HeldToken | undefined;
  readonly #totals = new StreamTotals();
  readonly #seed: number | undefined;
  readonly #maxTokens: number | undefined;

  constructor(options: TgiEncoderOptions = {}) {
    this.#flavor = options.flavor === 'legacy' ? 'legacy' : 'modern';
    this.sseSpace = this.#flavor === 'modern';
    this.#seed = options.sampling?.seed;
    this.#maxTokens = options.sampling?.maxTokens;
    this.#endOfSequence = options.endOfSequence;
  }

  event(event: StreamEvent, sink: FrameSink): void {
    switch (event.type) {
      case 'text':
        if (event.text === '') return;
        this.#text += event.text;
        if (event.logprobs === undefined && event.tokenIds === undefined) {
          // The common case, without a list per event.
          this.#writeHeld(sink);
          this.#held = { id: null, text: event.text, logprob: null, top: undefined };
          return;
        }
        for (const token of tokensOf(event)) {
          this.#writeHeld(sink);
          this.#held = token;
        }
        return;
      case 'finish':
      case 'usage':
      case 'timings':
        this.#totals.keep(event);
        return;
      case 'error':
        this.error(event, sink);
        return;
      default:
        return;
    }
  }

  end(sink: FrameSink): void {
    const reason = finishWord(this.#totals.finish);
    const eos = reason === 'eos_token' ? this.#endOfSequence : undefined;
    if (eos !== undefined) this.#writeHeld(sink);
    const held = this.#held;
    this.#held = undefined;
    // The count of token events, this last one included (a placeholder for "no text" is not a token).
    const written = this.#index + (held !== undefined || eos !== undefined ? 1 : 0);
    const generatedTokens = this.#totals.usage?.outputTokens ?? written;
    const inputLength = this.#totals.usage?.inputTokens ?? null;
    const details =
      this.#flavor === 'modern'
        ? `{"finish_reason":${JSON.stringify(reason)},"generated_tokens":${generatedTokens},"seed":${this.#seed ?? null},"input_length":${inputLength}}`
        : `{"finish_reason":${JSON.stringify(reason)},"generated_tokens":${generatedTokens},"seed":${this.#seed ?? null}}`;
    const generated = JSON.stringify(this.#text);
    if (eos !== undefined) {
      sink(this.#tokenEvent({ ...eos, logprob: null, top: undefined }, true, generated, details));
    } else if (held !== undefined) {
      sink(this.#tokenEvent(held, false, generated, details));
    } else {
      const placeholder: HeldToken = { id: null, text: '', logprob: null, top: undefined };
      sink(this.#tokenEvent(placeholder, reason === 'eos_token', generated, details));
    }
  }

  /**
   * Writes the held token: the upstream read that carried it is over (see the class comment) — unless
   * it is known to be the last (the finish came with it, or `max_new_tokens` is reached): nothing can
   * follow it, so it waits for the end.
   */
  flush(sink: FrameSink): void {
    if (this.#held === undefined || this.#totals.finish !== undefined) return;
    if (this.#maxTokens !== undefined && this.#index + 1 >= this.#maxTokens) return;
    this.#writeHeld(sink);
  }

  /**
   * The held token (it was generated before the failure), then `{"error": "...", "error_type": "..."}`;
   * TGI then closes the stream (wire-formats.md §5.5). Another server's error type (`server_error`,
   * `InternalServerError`) is not one TGI's clients know (they map `error_type` to their exception
   * classes): it becomes TGI's word for the status.
   */
  error(error: MidStreamError, sink: FrameSink): void {
    this.#writeHeld(sink);
    sink(JSON.stringify({ error: error.message, error_type: tgiErrorType(error) }));
  }

  #writeHeld(sink: FrameSink): void {
    const held = this.#held;
    if (held === undefined) return;
    this.#held = undefined;
    sink(this.#tokenEvent(held, false, 'null', 'null'));
  }

  /**
   * serde's struct order: index, token {id, text, logprob, special}, top_tokens (left out when empty),
   * generated_text, details.
   */
  #tokenEvent(token: HeldToken, special: boolean, generated: string, details: string): string {
    this.#index += 1;
    let top = '';
    if (token.top !== undefined && token.top.length > 0) {
      top = `,"top_tokens":[${token.top
        .map((alternative) =>
          tokenJson(alternative.id ?? null, alternative.token, alternative.logprob, false),
        )
        .join(',')}]`;
    }
    return `{"index":${this.#index},"token":${tokenJson(token.id, token.text, token.logprob, special)}${top},"generated_text":${generated},"details":${details}}`;
  }
}

/** TGI's `InferError::error_type` words (router/src/infer/mod.rs). */
const TGI_ERROR_TYPES = new Set([
  'generation',
  'overloaded',
  'validation',
  'incomplete_generation',
  'incomplete_generation_stream',
  'template_error',
  'missing_template_variable',
  'tool_error',
  'stream_serialization_error',
]);

function tgiErrorType(error: MidStreamError): string {
  if (error.errorType !== undefined && TGI_ERROR_TYPES.has(error.errorType)) return error.errorType;
  if (error.status === 429) return 'overloaded';
  if (error.status !== undefined && error.status >= 400 && error.status < 500) return 'validation';
  return 'generation';
}

function tokenJson(id: number | null, text: string, logprob: number | null, special: boolean): string {
  return `{"id":${id ?? null},"text":${JSON.stringify(text)},"logprob":${f32Json(logprob)},"special":${special}}`;
}

/**
 * A log probability as serde_json writes an f32: always with a fraction or an exponent (`-1.0`, not
 * `-1`), and `null` for a non-finite one (or an unknown one).
 */
function f32Json(value: number | null): string {
  if (value === null || !Number.isFinite(value)) return 'null';
  if (Number.isInteger(value)) return Object.is(value, -0) ? '-0.0' : `${value}.0`;
  return JSON.stringify(value);
}

/**
 * The tokens a text event is made of: one per log-probability entry when the entries spell the text
 * (a chunk that carries several tokens), with their ids when the event has one per entry; else the
 * whole text as one token, with its id and log probability only when the event has exactly one.
 */
function tokensOf(event: TextEvent): HeldToken[] {
  const logprobs = event.logprobs;
  const ids = event.tokenIds;
  if (
    logprobs !== undefined &&
    logprobs.length > 1 &&
    logprobs.map((entry) => entry.token).join('') === event.text
  ) {
    const idPerToken = ids !== undefined && ids.length === logprobs.length;
    return logprobs.map((entry, i) => ({
      id: idPerToken ? ids[i]! : (entry.id ?? null),
      text: entry.token,
      logprob: entry.logprob,
      top: entry.top,
    }));
  }
  const only = logprobs?.length === 1 ? logprobs[0] : undefined;
  return [
    {
      id: ids?.length === 1 ? ids[0]! : (only?.id ?? null),
      text: event.text,
      logprob: only?.logprob ?? null,
      top: only?.top,
    },
  ];
}

/** TGI's `finish_reason` word for a normalized finish. */
function finishWord(finish: FinishEvent | undefined): 'eos_token' | 'length' | 'stop_sequence' {
  if (finish === undefined) return 'eos_token';
  switch (finish.raw) {
    case 'eos_token':
    case 'length':
    case 'stop_sequence':
      return finish.raw;
    case 'word':
    case 'stopped_word':
      return 'stop_sequence';
  }
  if (finish.reason === 'length') return 'length';
  if (finish.stopSequence !== undefined && finish.stopSequence !== '') return 'stop_sequence';
  return 'eos_token';
}
