import type { FinishEvent, StreamEvent } from '../../events/stream-event.ts';
import { goJsonStringify } from '../../wire/go-json.ts';
import type { JsonRecord } from '../common/json-fields.ts';
import { randomAlphanumeric, randomHex } from '../common/random-id.ts';
import { StreamTotals } from '../common/stream-totals.ts';
import type { DialectEncoder, EncoderOptions, FrameSink, MidStreamError } from '../dialect.ts';
import { llamacppTimingsObject } from '../llamacpp-family/llamacpp-timings.ts';
import { openAiFinishWord } from '../openai-family/openai-finish.ts';
import { writeOpenAiStreamError } from '../openai-family/openai-stream-error.ts';
import { openAiUsageObject } from '../openai-family/openai-usage.ts';

/**
 * Which server's `text_completion` stream to write (wire-formats.md §3.3, §4.4, §5.4, §6.5). They
 * differ in key order, which fields every chunk carries, where the finish, usage and timings go, and
 * the mid-stream error shape. `llamacpp-legacy` is llama-server before Sep 2025 (the b4747 capture's
 * era): the same chunks, but errors as a non-SSE `error:` line followed by `[DONE]`.
 */
export type OpenAiCompletionsFlavor = 'vllm' | 'llamacpp' | 'llamacpp-legacy' | 'tgi' | 'ollama';

export const OPENAI_COMPLETIONS_FLAVORS: readonly OpenAiCompletionsFlavor[] = [
  'vllm',
  'llamacpp',
  'llamacpp-legacy',
  'tgi',
  'ollama',
];

/**
 * Events -> `text_completion` chunks. Completions have no reasoning or tool-call fields: those events
 * are dropped (their finish word still says `tool_calls` where the flavor can).
 *
 * vLLM and TGI put the finish on the chunk of the last generated token. When the cap was hit, that
 * token's text rides on the finish chunk (TGI: also when a stop sequence fired, since TGI keeps it in
 * the text); on a natural end the last token is the end-of-sequence token, which decodes to nothing,
 * and vLLM cuts a matched stop string out, so there the finish chunk's text is `""`.
 *
 * To put that text on the finish chunk, these two flavors hold the latest text piece back until the
 * next event. `flush()` writes it at once: a live relay should call it after each upstream read, or
 * every piece reaches the client one event late (`error()` flushes too; a stream cut with neither
 * `end()` nor `error()` loses the held piece unless `flush()` is called).
 */
export class OpenAiCompletionsEncoder implements DialectEncoder {
  readonly framing = 'sse' as const;
  readonly sseSpace = true;
  readonly #flavor: OpenAiCompletionsFlavor;
  readonly #includeUsage: boolean;
  readonly #now: () => number;
  readonly #stringify: (value: unknown) => string;
  #id: string | undefined;
  #model: string | undefined;
  #created: number | undefined;
  #fingerprint: string | undefined;
  /** vLLM, TGI: the latest text piece, not written yet (it may belong on the finish chunk). */
  #pending: string | undefined;
  readonly #totals = new StreamTotals();

  constructor(options: EncoderOptions = {}) {
    this.#flavor = (options.flavor ?? 'vllm') as OpenAiCompletionsFlavor;
    this.#includeUsage = options.includeUsage === true;
    this.#now = options.now ?? Date.now;
    this.#id = options.id;
    this.#model = options.model;
    this.#created = options.created;
    this.#stringify = this.#flavor === 'ollama' ? goJsonStringify : JSON.stringify;
  }

  event(event: StreamEvent, sink: FrameSink): void {
    switch (event.type) {
      case 'start':
        this.#id ??= event.id;
        this.#model ??= event.model;
        this.#created ??= event.created;
        this.#fingerprint ??= event.systemFingerprint;
        return;
      case 'text':
        if (this.#holdsText()) {
          this.flush(sink);
          this.#pending = event.text;
        } else {
          sink(this.#stringify(this.#textChunk(event.text)));
        }
        return;
      case 'reasoning':
      case 'tool-call-delta':
      case 'tool-call':
        return; // no place for them in a text_completion chunk
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

  /** Writes the held text piece (vLLM, TGI) as its own chunk. A no-op for the other flavors. */
  flush(sink: FrameSink): void {
    const pending = this.#pending;
    if (pending === undefined) return;
    this.#pending = undefined;
    sink(this.#stringify(this.#textChunk(pending)));
  }

  end(sink: FrameSink): void {
    const finish = this.#totals.finish;
    switch (this.#flavor) {
      case 'vllm': {
        if (finish !== undefined) {
          const choice = {
            index: 0,
            text: this.#finishText(finish.reason === 'length', sink),
            logprobs: null,
            finish_reason: openAiFinishWord(finish),
            stop_reason: finish.stopSequence ?? null,
          };
          sink(this.#stringify(this.#envelope([choice])));
        } else {
          this.flush(sink);
        }
        if (this.#includeUsage && this.#totals.usage !== undefined) {
          sink(this.#stringify(this.#envelope([], openAiUsageObject(this.#totals.usage, 'vllm'))));
        }
        break;
      }
      case 'llamacpp':
      case 'llamacpp-legacy':
        // The final chunk always carries usage (not gated by include_usage), then timings.
        if (finish !== undefined) {
          const chunk = this.#envelope(
            [{ text: '', index: 0, logprobs: null, finish_reason: openAiFinishWord(finish) }],
            openAiUsageObject(this.#totals.usage ?? {}, 'llamacpp'),
          );
          if (this.#totals.timings !== undefined) chunk.timings = llamacppTimingsObject(this.#totals.timings);
          sink(this.#stringify(chunk));
        }
        break;
      case 'tgi':
        // `CompletionFinal`: model before choices, usage always, TGI's own finish word.
        if (finish !== undefined) {
          const word = tgiFinishWord(finish);
          const choice = {
            index: 0,
            // TGI keeps stop sequences in the text: the token that completed one has text too.
            text: this.#finishText(word !== 'eos_token', sink),
            logprobs: null,
            finish_reason: word,
          };
          sink(
            this.#stringify({
              object: 'text_completion',
              id: '',
              created: this.#pinnedCreated(),
              model: this.#modelName(),
              system_fingerprint: this.#tgiFingerprint(),
              choices: [choice],
              usage: openAiUsageObject(this.#totals.usage ?? {}, 'standard'),
            }),
          );
        } else {
          this.flush(sink);
        }
        break;
      case 'ollama': {
        // The finish rides on the chunk made from the `done` line (text ""); with include_usage a copy
        // of that chunk with `choices: []` carries the real usage.
        let last: JsonRecord | undefined;
        if (finish !== undefined) {
          last = this.#envelope([{ text: '', index: 0, finish_reason: openAiFinishWord(finish) }]);
          sink(this.#stringify(last));
        }
        if (this.#includeUsage && this.#totals.usage !== undefined) {
          const chunk = last ?? this.#envelope([]);
          chunk.choices = [];
          chunk.usage = openAiUsageObject(this.#totals.usage, 'standard');
          sink(this.#stringify(chunk));
        }
        break;
      }
    }
    sink('[DONE]');
  }

  error(error: MidStreamError, sink: FrameSink): void {
    this.flush(sink);
    if (writeOpenAiStreamError(this.#flavor, error, sink)) return;
    // Ollama: no error representation (wire-formats.md §6.4, §9): the native `{"error": …}` line is read
    // as an empty generate response, so the client gets a chunk with `model: ""`, text "" and no finish
    // (with the zero usage placeholder when include_usage is set), then the stream ends without `[DONE]`.
    // Only the missing finish and `[DONE]` tell the client it failed.
    const chunk = this.#envelope([{ text: '', index: 0, finish_reason: null }]);
    chunk.model = '';
    sink(this.#stringify(chunk));
  }

  #holdsText(): boolean {
    return this.#flavor === 'vllm' || this.#flavor === 'tgi';
  }

  /**
   * The text of the vLLM/TGI finish chunk: the held piece when the last token produced it; otherwise
   * the held piece goes out on its own and the finish chunk has text "" (the end-of-sequence token
   * decodes to nothing; vLLM also cuts a matched stop string out of the text).
   */
  #finishText(lastTokenHasText: boolean, sink: FrameSink): string {
    if (!lastTokenHasText) this.flush(sink);
    const text = this.#pending ?? '';
    this.#pending = undefined;
    return text;
  }

  #textChunk(text: string): JsonRecord {
    switch (this.#flavor) {
      case 'vllm':
        return this.#envelope([{ index: 0, text, logprobs: null, finish_reason: null, stop_reason: null }]);
      case 'llamacpp':
      case 'llamacpp-legacy':
        return this.#envelope([{ text, index: 0, logprobs: null, finish_reason: null }]);
      case 'tgi':
        return this.#envelope([{ index: 0, text, logprobs: null, finish_reason: '' }]);
      case 'ollama':
        return this.#envelope([{ text, index: 0, finish_reason: null }]);
    }
  }

  /**
   * The chunk object around `choices`, with each server's key order. `usage` is only placed where
   * the flavor writes it: vLLM on every chunk (`null` but in the usage chunk), llama-server on the final
   * chunk, Ollama on every chunk when include_usage is set (all zeros but in the usage chunk).
   */
  #envelope(choices: JsonRecord[], usage?: JsonRecord): JsonRecord {
    const model = this.#modelName();
    switch (this.#flavor) {
      case 'vllm':
        this.#id ??= `cmpl-${randomHex(16)}`;
        return {
          id: this.#id,
          object: 'text_completion',
          created: this.#pinnedCreated(),
          model,
          choices,
          usage: usage ?? null,
        };
      case 'llamacpp':
      case 'llamacpp-legacy': {
        this.#id ??= `chatcmpl-${randomAlphanumeric(32)}`;
        const chunk: JsonRecord = {
          choices,
          created: this.#pinnedCreated(),
          model,
          system_fingerprint: this.#fingerprint ?? 'b7900-tokenwire',
          object: 'text_completion',
        };
        if (usage !== undefined) chunk.usage = usage;
        chunk.id = this.#id;
        return chunk;
      }
      case 'tgi':
        return {
          object: 'text_completion',
          id: '',
          created: this.#pinnedCreated(),
          choices,
          model,
          system_fingerprint: this.#tgiFingerprint(),
        };
      case 'ollama': {
        this.#id ??= `cmpl-${Math.floor(Math.random() * 999)}`;
        const chunk: JsonRecord = {
          id: this.#id,
          object: 'text_completion',
          // Ollama stamps each chunk with time.Now(); a known `created` (same-dialect relay) is kept.
          created: this.#created ?? Math.floor(this.#now() / 1000),
          choices,
          model,
          system_fingerprint: 'fp_ollama',
        };
        const placeholder = this.#includeUsage
          ? { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }
          : undefined;
        const written = usage ?? placeholder;
        if (written !== undefined) chunk.usage = written;
        return chunk;
      }
    }
  }

  #pinnedCreated(): number {
    this.#created ??= Math.floor(this.#now() / 1000);
    return this.#created;
  }

  #modelName(): string {
    return this.#model ?? 'unknown';
  }

  #tgiFingerprint(): string {
    return this.#fingerprint ?? '3.3.6-native';
  }
}

/** TGI's own `FinishReason` words, which its completions route passes through unmapped. */
function tgiFinishWord(finish: FinishEvent): string {
  if (finish.raw === 'eos_token' || finish.raw === 'length' || finish.raw === 'stop_sequence')
    return finish.raw;
  if (finish.reason === 'length') return 'length';
  if (finish.stopSequence !== undefined) return 'stop_sequence';
  return 'eos_token';
}
