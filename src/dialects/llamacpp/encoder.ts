import type { FinishEvent, StreamEvent, TokenLogprob } from '../../events/stream-event.ts';
import type { Timings } from '../../events/usage.ts';
import { isRecord, type JsonRecord } from '../common/json-fields.ts';
import { StreamTotals } from '../common/stream-totals.ts';
import { tokenLogprobsList } from '../common/token-logprobs-json.ts';
import type { DialectEncoder, EncoderOptions, FrameSink, MidStreamError } from '../dialect.ts';
import { llamacppJson } from '../llamacpp-family/llamacpp-json.ts';
import { llamacppTimingsObject } from '../llamacpp-family/llamacpp-timings.ts';

/**
 * Which llama-server to imitate on the native `/completion` stream (wire-formats.md §4.2):
 * - `modern` (default): builds from Dec 2024 on, as in 2025–2026: partial events
 *   `{"index","content","tokens","stop","id_slot","tokens_predicted","tokens_evaluated"}`, a final event
 *   with `stop_type`, errors as `data: {"error":{...}}`.
 * - `legacy`: builds up to Dec 2024 (and forks such as ik_llama.cpp): partial events
 *   `{"content","stop","id_slot","multimodal","index"}`, a final event with the `stopped_eos` /
 *   `stopped_word` / `stopped_limit` flags, errors as the non-SSE `error: {...}` line.
 */
export type LlamacppFlavor = 'modern' | 'legacy';

export const LLAMACPP_FLAVORS: readonly LlamacppFlavor[] = ['modern', 'legacy'];

type StopType = 'eos' | 'word' | 'limit' | 'none';

/**
 * Writes llama-server's native stream from normalized events. What the events cannot carry is written
 * as follows (and is where the bytes differ from a real server's):
 * - `tokens` (token ids) on a partial event are the text event's own (a llama.cpp upstream's), else left
 *   out: an invented id list could be misread as real;
 * - `completion_probabilities` on a partial event is the text event's log probabilities (any upstream's,
 *   `n_probs`), in the server's key order, and left out when it has none;
 * - `tokens_evaluated` (on partial events and the final one) is the prompt size when the upstream
 *   reported it (before the text, on partial events: a llama.cpp upstream does), else left out; the
 *   final event's `id_slot` (the server's slot number) is left out, as are `tokens_cached` and
 *   `truncated` when the upstream did not report them (a made-up 0 or false would read as a fact);
 *   `id_slot: -1` on partial events is the server's constant there (modern flavor);
 * - `prompt` is left out (the server's rendered prompt is not known), and `generation_settings` holds
 *   only what the request said (`seed`, `temperature`, `n_predict`) and `stream` — never a server
 *   default standing in for a value nobody knows;
 * - the end-of-sequence (or stop-word) token gets its own partial event with `content: ""` before the
 *   final event, carrying the timings in the modern flavor, as the server does; after a limit the real
 *   server puts the timings on the last text token's event, which was already written;
 * - `timings` is left out of the final event when no timings event came (zeros would be read as real
 *   measurements);
 * - `tokens_cached` (the KV cache fill) is the upstream's own value when it was a llama-server, else
 *   prompt + generated - 1, which is what the server reports.
 * Reasoning and tool calls are not written: the native endpoint has no fields for them.
 */
export class LlamacppEncoder implements DialectEncoder {
  readonly framing = 'sse' as const;
  readonly sseSpace = true;
  readonly #flavor: LlamacppFlavor;
  #model: string | undefined;
  /** Partial events written: the server's `tokens_predicted` counter. */
  #predicted = 0;
  #hasNewLine = false;
  readonly #totals = new StreamTotals();
  readonly #sampling: EncoderOptions['sampling'];

  constructor(options: EncoderOptions = {}) {
    this.#flavor = options.flavor === 'legacy' ? 'legacy' : 'modern';
    this.#model = options.model;
    this.#sampling = options.sampling;
  }

  event(event: StreamEvent, sink: FrameSink): void {
    switch (event.type) {
      case 'start':
        this.#model ??= event.model;
        return;
      case 'text':
        if (event.text === '') return;
        if (event.text.includes('\n')) this.#hasNewLine = true;
        this.#partial(event.text, undefined, sink, event.tokenIds, event.logprobs);
        return;
      case 'reasoning':
      case 'tool-call-delta':
      case 'tool-call':
        return;
      case 'finish':
      case 'usage':
      case 'timings':
        this.#totals.keep(event);
        return;
      case 'error':
        this.error(event, sink);
        return;
    }
  }

  end(sink: FrameSink): void {
    const stopType = stopTypeOf(this.#totals.finish);
    const timings =
      this.#totals.timings === undefined ? undefined : this.#timingsObject(this.#totals.timings);
    // The end-of-sequence token, or the token that completed the stop word (never sent itself).
    if (stopType === 'eos' || stopType === 'word') {
      this.#partial('', this.#flavor === 'modern' ? timings : undefined, sink);
    }
    sink(llamacppJson(this.#finalEvent(stopType, timings)));
  }

  error(error: MidStreamError, sink: FrameSink): void {
    const status = error.status ?? 500;
    const body = { code: status, message: error.message, type: error.errorType ?? llamacppErrorType(status) };
    // Then the server closes the stream: no `[DONE]` on the native endpoint in either era.
    if (this.#flavor === 'legacy') sink(JSON.stringify(body), 'legacy-error-field');
    else sink(JSON.stringify({ error: body }));
  }

  #partial(
    content: string,
    timings: JsonRecord | undefined,
    sink: FrameSink,
    tokenIds?: number[],
    logprobs?: TokenLogprob[],
  ): void {
    this.#predicted += 1;
    if (this.#flavor === 'legacy') {
      const legacy: JsonRecord = { content, stop: false, multimodal: false, index: 0 };
      if (logprobs !== undefined) legacy.completion_probabilities = tokenLogprobsList(logprobs, 'llamacpp');
      sink(JSON.stringify(legacy));
      return;
    }
    const event: JsonRecord = { index: 0, content };
    if (tokenIds !== undefined) event.tokens = tokenIds;
    event.stop = false;
    event.id_slot = -1;
    event.tokens_predicted = this.#predicted;
    const evaluated = this.#totals.usage?.inputTokens;
    if (evaluated !== undefined) event.tokens_evaluated = evaluated;
    if (logprobs !== undefined) event.completion_probabilities = tokenLogprobsList(logprobs, 'llamacpp');
    if (timings !== undefined) event.timings = timings;
    sink(llamacppJson(event));
  }

  /** What is known of the request's sampling, in the server's key order (legacy: with the model). */
  #settings(legacy: boolean, model: string): JsonRecord {
    const sampling = this.#sampling;
    const settings: JsonRecord = {};
    if (legacy && sampling?.maxTokens !== undefined) settings.n_predict = sampling.maxTokens;
    if (legacy) settings.model = model;
    if (sampling?.seed !== undefined) settings.seed = sampling.seed;
    if (sampling?.temperature !== undefined) settings.temperature = sampling.temperature;
    if (!legacy && sampling?.maxTokens !== undefined) settings.n_predict = sampling.maxTokens;
    settings.stream = true;
    return settings;
  }

  #finalEvent(stopType: StopType, timings: JsonRecord | undefined): JsonRecord {
    const model = this.#model ?? 'unknown';
    const usage = this.#totals.usage;
    const output = usage?.outputTokens ?? this.#predicted;
    const input = usage?.inputTokens;
    const raw = isRecord(usage?.raw) ? usage.raw : {};
    const tokensCached =
      typeof raw.tokens_cached === 'number'
        ? raw.tokens_cached
        : input === undefined
          ? undefined
          : Math.max(0, input + output - 1);
    const truncated = typeof raw.truncated === 'boolean' ? raw.truncated : undefined;
    const stoppingWord = stopType === 'word' ? (this.#totals.finish?.stopSequence ?? '') : '';
    if (this.#flavor === 'legacy') {
      const event: JsonRecord = { content: '', stop: true, model, tokens_predicted: output };
      if (input !== undefined) event.tokens_evaluated = input;
      event.generation_settings = this.#settings(true, model);
      event.has_new_line = this.#hasNewLine;
      if (truncated !== undefined) event.truncated = truncated;
      event.stopped_eos = stopType === 'eos';
      event.stopped_word = stopType === 'word';
      event.stopped_limit = stopType === 'limit';
      event.stopping_word = stoppingWord;
      if (tokensCached !== undefined) event.tokens_cached = tokensCached;
      if (timings !== undefined) event.timings = timings;
      event.index = 0;
      return event;
    }
    const event: JsonRecord = {
      index: 0,
      content: '',
      tokens: [],
      stop: true,
      model,
      tokens_predicted: output,
    };
    if (input !== undefined) event.tokens_evaluated = input;
    event.generation_settings = this.#settings(false, model);
    // Not invented: the server sets it the same way, when the text it sent held a line break.
    event.has_new_line = this.#hasNewLine;
    if (truncated !== undefined) event.truncated = truncated;
    event.stop_type = stopType;
    event.stopping_word = stoppingWord;
    if (tokensCached !== undefined) event.tokens_cached = tokensCached;
    if (timings !== undefined) event.timings = timings;
    return event;
  }

  /** A llama-server's own object unchanged; otherwise built, without `cache_n` before 2025. */
  #timingsObject(timings: Timings): JsonRecord {
    const object = llamacppTimingsObject(timings);
    if (object === timings.raw || this.#flavor === 'modern') return object;
    const { cache_n: _cacheN, ...legacy } = object;
    return legacy;
  }
}

/** The server's stop type for a normalized finish (its own word when it came from a llama-server). */
function stopTypeOf(finish: FinishEvent | undefined): StopType {
  if (finish === undefined) return 'eos';
  switch (finish.raw) {
    case 'eos':
    case 'stopped_eos':
      return 'eos';
    case 'word':
    case 'stopped_word':
      return 'word';
    case 'limit':
    case 'stopped_limit':
      return 'limit';
    case 'none':
      return 'none';
  }
  switch (finish.reason) {
    case 'stop':
      return finish.stopSequence !== undefined && finish.stopSequence !== '' ? 'word' : 'eos';
    case 'length':
      return 'limit';
    case 'error':
      return 'none';
    default:
      return 'eos';
  }
}

/** The error `type` llama-server pairs with a status (`format_error_response`, wire-formats.md §4.8). */
export function llamacppErrorType(status: number): string {
  switch (status) {
    case 400:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 501:
      return 'not_supported_error';
    case 503:
      return 'unavailable_error';
    default:
      return status < 500 ? 'invalid_request_error' : 'server_error';
  }
}
