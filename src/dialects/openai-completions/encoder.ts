import type { FinishEvent, StreamEvent, TokenLogprob } from '../../events/stream-event.ts';
import { goJsonStringify } from '../../wire/go-json.ts';
import type { JsonRecord } from '../common/json-fields.ts';
import { randomAlphanumeric, randomHex } from '../common/random-id.ts';
import { StreamTotals } from '../common/stream-totals.ts';
import { legacyCompletionsLogprobs, tokenLogprobsList } from '../common/token-logprobs-json.ts';
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
  /** The choice and log probabilities of the held piece. */
  #pendingChoice = 0;
  #pendingLogprobs: TokenLogprob[] | undefined;
  /** Per choice, the text written so far (the legacy logprobs' `text_offset`), once logprobs are written. */
  readonly #textOffsets: number[] = [];
  /** Finishes of choices other than 0 (`n` > 1), written at the end with choice 0's, in index order. */
  #otherFinishes: Map<number, FinishEvent> | undefined;
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
          this.#writePending(sink);
          this.#pending = event.text;
          this.#pendingChoice = event.choice ?? 0;
          this.#pendingLogprobs = event.logprobs;
        } else {
          sink(this.#stringify(this.#textChunk(event.text, event.choice ?? 0, event.logprobs)));
        }
        return;
      case 'reasoning':
      case 'tool-call-delta':
      case 'tool-call':
        return; // no place for them in a text_completion chunk
      case 'finish':
        if (event.choice !== undefined && event.choice !== 0) {
          this.#otherFinishes ??= new Map();
          this.#otherFinishes.set(event.choice, event);
          return;
        }
        this.#totals.keep(event);
        return;
      case 'usage':
      case 'timings':
        this.#totals.keep(event);
        return;
      case 'error':
        this.error(event, sink);
        return;
    }
  }

  /**
   * Writes the held text piece (vLLM, TGI) as its own chunk. A no-op for the other flavors, and once the
   * answer's finish came: the last piece then goes out with it, in one chunk, as vLLM writes it.
   */
  flush(sink: FrameSink): void {
    if (this.#totals.finish === undefined) this.#writePending(sink);
  }

  /** Writes the held text piece as its own chunk. */
  #writePending(sink: FrameSink): void {
    const pending = this.#pending;
    if (pending === undefined) return;
    this.#pending = undefined;
    sink(this.#stringify(this.#textChunk(pending, this.#pendingChoice, this.#pendingLogprobs)));
  }

  end(sink: FrameSink): void {
    const finishes = this.#finishes();
    switch (this.#flavor) {
      case 'vllm': {
        if (finishes.length === 0) this.#writePending(sink);
        for (const [index, finish] of finishes) {
          const held = this.#finishText(finish.reason === 'length', sink, index);
          const choice = {
            index,
            text: held.text,
            logprobs: this.#logprobs(held.logprobs, index, held.text),
            finish_reason: openAiFinishWord(finish),
            stop_reason: finish.stopSequence ?? null,
          };
          sink(this.#stringify(this.#envelope([choice])));
        }
        if (this.#includeUsage && this.#totals.usage !== undefined) {
          sink(this.#stringify(this.#envelope([], openAiUsageObject(this.#totals.usage, 'vllm'))));
        }
        break;
      }
      case 'llamacpp':
      case 'llamacpp-legacy':
        // The final chunk always carries usage (not gated by include_usage), then timings: with several
        // choices, the last one's finish chunk does.
        for (const [i, [index, finish]] of finishes.entries()) {
          const choices = [{ text: '', index, logprobs: null, finish_reason: openAiFinishWord(finish) }];
          if (i < finishes.length - 1) {
            sink(this.#stringify(this.#envelope(choices)));
            continue;
          }
          const chunk = this.#envelope(choices, openAiUsageObject(this.#totals.usage ?? {}, 'llamacpp'));
          if (this.#totals.timings !== undefined) chunk.timings = llamacppTimingsObject(this.#totals.timings);
          sink(this.#stringify(chunk));
        }
        break;
      case 'tgi':
        // `CompletionFinal`: model before choices, usage always, TGI's own finish word.
        if (finishes.length === 0) this.#writePending(sink);
        for (const [index, finish] of finishes) {
          const word = tgiFinishWord(finish);
          // TGI keeps stop sequences in the text: the token that completed one has text too.
          const held = this.#finishText(word !== 'eos_token', sink, index);
          const choice = {
            index,
            text: held.text,
            logprobs: this.#logprobs(held.logprobs, index, held.text),
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
        }
        break;
      case 'ollama': {
        // The finish rides on the chunk made from the `done` line (text ""); with include_usage a copy
        // of that chunk with `choices: []` carries the real usage.
        let last: JsonRecord | undefined;
        for (const [index, finish] of finishes) {
          last = this.#envelope([{ text: '', index, finish_reason: openAiFinishWord(finish) }]);
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

  /** Every choice's finish, in index order (choice 0 first). */
  #finishes(): [number, FinishEvent][] {
    const finishes: [number, FinishEvent][] = [];
    if (this.#totals.finish !== undefined) finishes.push([0, this.#totals.finish]);
    if (this.#otherFinishes !== undefined) {
      for (const choice of [...this.#otherFinishes.keys()].sort((a, b) => a - b)) {
        finishes.push([choice, this.#otherFinishes.get(choice) as FinishEvent]);
      }
    }
    return finishes;
  }

  error(error: MidStreamError, sink: FrameSink): void {
    this.#writePending(sink);
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
  #finishText(
    lastTokenHasText: boolean,
    sink: FrameSink,
    choice: number,
  ): { text: string; logprobs: TokenLogprob[] | undefined } {
    // A piece held for another choice is not this finish's.
    if (!lastTokenHasText || this.#pendingChoice !== choice) this.#writePending(sink);
    const text = this.#pending ?? '';
    const logprobs = this.#pending === undefined ? undefined : this.#pendingLogprobs;
    this.#pending = undefined;
    return { text, logprobs };
  }

  /**
   * A text piece's log probabilities as the choice's `logprobs` (`null`: not asked for): OpenAI's legacy
   * object (vLLM, TGI), llama-server's `{content: [...]}`; Ollama's route writes none.
   */
  #logprobs(logprobs: TokenLogprob[] | undefined, choice: number, text: string): JsonRecord | null {
    if (logprobs === undefined) return null;
    const offset = this.#textOffsets[choice] ?? 0;
    this.#textOffsets[choice] = offset + text.length;
    if (this.#flavor === 'llamacpp' || this.#flavor === 'llamacpp-legacy') {
      return { content: tokenLogprobsList(logprobs, 'llamacpp') };
    }
    return legacyCompletionsLogprobs(logprobs, offset);
  }

  #textChunk(text: string, index: number, logprobs: TokenLogprob[] | undefined): JsonRecord {
    switch (this.#flavor) {
      case 'vllm':
        return this.#envelope([
          {
            index,
            text,
            logprobs: this.#logprobs(logprobs, index, text),
            finish_reason: null,
            stop_reason: null,
          },
        ]);
      case 'llamacpp':
      case 'llamacpp-legacy':
        return this.#envelope([
          { text, index, logprobs: this.#logprobs(logprobs, index, text), finish_reason: null },
        ]);
      case 'tgi':
        return this.#envelope([
          { index, text, logprobs: this.#logprobs(logprobs, index, text), finish_reason: '' },
        ]);
      case 'ollama':
        return this.#envelope([{ text, index, finish_reason: null }]);
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
