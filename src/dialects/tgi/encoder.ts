import type { FinishEvent, StreamEvent } from '../../events/stream-event.ts';
import { StreamTotals } from '../common/stream-totals.ts';
import type { DialectEncoder, EncoderOptions, FrameSink, MidStreamError } from '../dialect.ts';

/**
 * Which TGI to imitate on `/generate_stream` (wire-formats.md §5.1, §5.2):
 * - `modern` (default): TGI ≥ 2.1 (axum 0.7): `data: {...}`; `details` with `input_length`; a Llama 3
 *   end-of-sequence token (`<|eot_id|>`, id 128009).
 * - `legacy`: TGI ≤ 2.0.x (axum 0.6): `data:{...}` without the space; `details` without `input_length`;
 *   the `</s>` end-of-sequence token (id 2) of that era's models.
 */
export type TgiFlavor = 'modern' | 'legacy';

export const TGI_FLAVORS: readonly TgiFlavor[] = ['modern', 'legacy'];

interface SpecialToken {
  id: number;
  text: string;
}

const EOS: Record<TgiFlavor, SpecialToken> = {
  modern: { id: 128009, text: '<|eot_id|>' },
  legacy: { id: 2, text: '</s>' },
};

/**
 * Writes TGI's native stream from normalized events, one token event per text event. What the events
 * cannot carry is written as follows (and is where the bytes differ from a real server's):
 * - a text token's `id` and `logprob` are the event's own when the upstream sent them (token ids, logprobs),
 *   else `"id":0` and `"logprob":0.0` (serde's f32 form), the schema's required numbers;
 * - the last event carries the end-of-sequence special token after an end-of-sequence finish, otherwise
 *   (length, stop sequence) a non-special token with text `""` (a real server puts the last generated
 *   token there, but that text was already written when it arrived);
 * - `details` is always written (the client may not have asked for it, but it is the only place the
 *   finish reason and the counts can go): `finish_reason` is the raw word (`eos_token`, `length`,
 *   `stop_sequence` — the latter whenever a stop string ended it), `generated_tokens` the output count
 *   (or the events written), `seed` the request's (null when it gave none), `input_length` the prompt
 *   count (0 when unknown).
 * - `generated_text` is the text written; a stop sequence that other servers strip is not added back.
 * Reasoning, tool calls and timings are not written: the native stream has no fields for them.
 */
export class TgiEncoder implements DialectEncoder {
  readonly framing = 'sse' as const;
  readonly sseSpace: boolean;
  readonly #flavor: TgiFlavor;
  #index = 0;
  #text = '';
  readonly #totals = new StreamTotals();
  readonly #seed: number | undefined;

  constructor(options: EncoderOptions = {}) {
    this.#flavor = options.flavor === 'legacy' ? 'legacy' : 'modern';
    this.sseSpace = this.#flavor === 'modern';
    this.#seed = options.sampling?.seed;
  }

  event(event: StreamEvent, sink: FrameSink): void {
    switch (event.type) {
      case 'text':
        if (event.text === '') return;
        this.#text += event.text;
        sink(
          this.#tokenEvent(
            { id: event.tokenIds?.length === 1 ? event.tokenIds[0]! : 0, text: event.text },
            false,
            null,
            null,
            event.logprobs?.length === 1 ? event.logprobs[0]!.logprob : undefined,
          ),
        );
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
    const eos = reason === 'eos_token';
    const token = eos ? EOS[this.#flavor] : { id: 0, text: '' };
    const generatedTokens = this.#totals.usage?.outputTokens ?? this.#index + 1;
    const details =
      this.#flavor === 'modern'
        ? `{"finish_reason":${JSON.stringify(reason)},"generated_tokens":${generatedTokens},"seed":${this.#seed ?? null},"input_length":${this.#totals.usage?.inputTokens ?? 0}}`
        : `{"finish_reason":${JSON.stringify(reason)},"generated_tokens":${generatedTokens},"seed":${this.#seed ?? null}}`;
    sink(this.#tokenEvent(token, eos, JSON.stringify(this.#text), details));
  }

  /** `{"error": "...", "error_type": "..."}`, then TGI closes the stream (wire-formats.md §5.5). */
  error(error: MidStreamError, sink: FrameSink): void {
    sink(JSON.stringify({ error: error.message, error_type: error.errorType ?? 'generation' }));
  }

  /** serde's struct order: index, token {id, text, logprob, special}, generated_text, details. */
  #tokenEvent(
    token: SpecialToken,
    special: boolean,
    generated: string | null,
    details: string | null,
    logprob?: number,
  ): string {
    this.#index += 1;
    const written = logprob === undefined || !Number.isFinite(logprob) ? '0.0' : JSON.stringify(logprob);
    return `{"index":${this.#index},"token":{"id":${token.id},"text":${JSON.stringify(token.text)},"logprob":${written},"special":${special}},"generated_text":${generated ?? 'null'},"details":${details ?? 'null'}}`;
  }
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
