import type { FinishEvent, StreamEvent, TokenLogprob } from '../../events/stream-event.ts';
import { goJsonStringify } from '../../wire/go-json.ts';
import type { JsonRecord } from '../common/json-fields.ts';
import { randomAlphanumeric, randomHex } from '../common/random-id.ts';
import { StreamTotals } from '../common/stream-totals.ts';
import { tokenLogprobsList } from '../common/token-logprobs-json.ts';
import type { DialectEncoder, EncoderOptions, FrameSink, MidStreamError } from '../dialect.ts';
import { llamacppTimingsObject } from '../llamacpp-family/llamacpp-timings.ts';
import { openAiFinishWord } from '../openai-family/openai-finish.ts';
import { writeOpenAiStreamError } from '../openai-family/openai-stream-error.ts';
import { openAiUsageObject } from '../openai-family/openai-usage.ts';

/**
 * Which server's `chat.completion.chunk` stream to write. Each differs in key order, the role chunk,
 * what a finish chunk holds, where usage and timings go, and the mid-stream error shape
 * (wire-formats.md §3, §4.3, §5.3, §6.4).
 */
export type OpenAiChatFlavor = 'vllm' | 'llamacpp' | 'llamacpp-legacy' | 'tgi' | 'ollama' | 'ollama-legacy';

export const OPENAI_CHAT_FLAVORS: readonly OpenAiChatFlavor[] = [
  'vllm',
  'llamacpp',
  'llamacpp-legacy',
  'tgi',
  'ollama',
  'ollama-legacy',
];

const VLLM_TEXT_SUFFIX = '},"logprobs":null,"finish_reason":null,"token_ids":null}]}';
/** vLLM's first chunk after the envelope's `"choices":[`: the role, and `prompt_token_ids` after the choices. */
const VLLM_ROLE_CHOICE =
  '{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"prompt_token_ids":null}';

export class OpenAiChatEncoder implements DialectEncoder {
  readonly framing = 'sse' as const;
  readonly sseSpace = true;
  readonly #flavor: OpenAiChatFlavor;
  readonly #includeUsage: boolean;
  readonly #now: () => number;
  readonly #stringify: (value: unknown) => string;
  #id: string | undefined;
  #model: string | undefined;
  #created: number | undefined;
  /** `created` given by the caller: pinned even where the server writes the clock per chunk. */
  readonly #pinnedCreated: number | undefined;
  #fingerprint: string | undefined;
  #roleSent = false;
  /** Choices other than 0 whose role chunk is written (`n` > 1). */
  #otherRoles: Set<number> | undefined;
  /** Finishes of choices other than 0, written at the end after choice 0's (`n` > 1). */
  #otherFinishes: Map<number, FinishEvent> | undefined;
  /** vLLM text chunks up to the text (see `event`). */
  #textPrefix: string | undefined;
  /** vLLM: this stream's chunk envelope as JSON, up to the choices' contents (`…,"choices":[`). */
  #head: string | undefined;
  readonly #totals = new StreamTotals();
  readonly #streamedTools = new Set<number>();
  #toolCalls = 0;

  constructor(options: EncoderOptions = {}) {
    this.#flavor = (options.flavor ?? 'vllm') as OpenAiChatFlavor;
    this.#includeUsage = options.includeUsage === true;
    this.#now = options.now ?? Date.now;
    this.#id = options.id;
    this.#model = options.model;
    this.#created = options.created;
    this.#pinnedCreated = options.created;
    this.#stringify = this.#flavor.startsWith('ollama') ? goJsonStringify : JSON.stringify;
  }

  event(event: StreamEvent, sink: FrameSink): void {
    switch (event.type) {
      case 'start':
        this.#textPrefix = undefined;
        this.#head = undefined;
        this.#id ??= event.id;
        this.#model ??= event.model;
        this.#created ??= event.created;
        this.#fingerprint ??= event.systemFingerprint;
        if (this.#flavor === 'vllm' || this.#flavor.startsWith('llamacpp')) this.#role(sink);
        // Built now, while the upstream works on its first token, not when that token is on its way.
        if (this.#flavor === 'vllm') this.#textPrefix = this.#textChunkPrefix();
        return;
      case 'text':
        if (this.#flavor === 'vllm' && event.choice === undefined && event.logprobs === undefined) {
          // The hot path of a relay: the chunk around the text is the same every time, so it is built
          // once and only the text is serialized (the bytes equal JSON.stringify of the whole chunk).
          this.#role(sink);
          this.#textPrefix ??= this.#textChunkPrefix();
          sink(`${this.#textPrefix}${JSON.stringify(event.text)}${VLLM_TEXT_SUFFIX}`);
          return;
        }
        this.#content({ content: event.text }, sink, event.choice ?? 0, event.logprobs);
        return;
      case 'reasoning':
        // TGI's chat stream has no reasoning field; a signature alone (Messages) has no place here.
        if (this.#flavor === 'tgi' || event.text === '') return;
        this.#content(
          this.#flavor.startsWith('llamacpp')
            ? { reasoning_content: event.text }
            : this.#reasoning(event.text),
          sink,
          event.choice ?? 0,
        );
        return;
      case 'tool-call-delta':
        if (this.#flavor.startsWith('ollama')) return; // Ollama sends whole calls only
        this.#streamedTools.add(event.index);
        this.#toolCalls += 1;
        this.#content(
          { tool_calls: [this.#toolFragment(event.index, event.id, event.name, event.argumentsDelta)] },
          sink,
          event.choice ?? 0,
        );
        return;
      case 'tool-call':
        if (this.#streamedTools.has(event.index)) return;
        this.#toolCalls += 1;
        if (this.#flavor.startsWith('ollama')) {
          const call = {
            id: event.id,
            index: event.index,
            type: 'function',
            function: { name: event.name, arguments: event.arguments },
          };
          this.#content({ content: '', tool_calls: [call] }, sink, event.choice ?? 0);
        } else {
          this.#content(
            { tool_calls: [this.#toolFragment(event.index, event.id, event.name, event.arguments)] },
            sink,
            event.choice ?? 0,
          );
        }
        return;
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

  end(sink: FrameSink): void {
    const finish = this.#totals.finish;
    const usage = this.#includeUsage ? this.#totals.usage : undefined;
    const timings = this.#flavor.startsWith('llamacpp') ? this.#totals.timings : undefined;
    if (finish !== undefined) {
      // An answer with no content still opens with the role chunk on these servers.
      if (this.#flavor === 'vllm' || this.#flavor.startsWith('llamacpp')) this.#role(sink);
      const chunk = this.#finishChunk(finish);
      if (chunk !== undefined) {
        if (usage === undefined && timings !== undefined && this.#otherFinishes === undefined) {
          chunk.timings = llamacppTimingsObject(timings);
        }
        sink(this.#stringify(chunk));
      }
    }
    if (this.#otherFinishes !== undefined) {
      // Each further choice ends with its own finish chunk (`n` > 1), in index order.
      const choices = [...this.#otherFinishes.keys()].sort((a, b) => a - b);
      for (const [i, choice] of choices.entries()) {
        const other = this.#otherFinishes.get(choice) as FinishEvent;
        if (this.#flavor === 'vllm' || this.#flavor.startsWith('llamacpp')) this.#role(sink, choice);
        const chunk = this.#finishChunk(other, choice);
        if (chunk === undefined) continue;
        if (i === choices.length - 1 && usage === undefined && timings !== undefined) {
          chunk.timings = llamacppTimingsObject(timings);
        }
        sink(this.#stringify(chunk));
      }
    }
    if (usage !== undefined) {
      const chunk = this.#envelope([]);
      chunk.usage = openAiUsageObject(usage, this.#usageOrder());
      if (timings !== undefined) chunk.timings = llamacppTimingsObject(timings);
      sink(this.#stringify(chunk));
    }
    sink('[DONE]');
  }

  error(error: MidStreamError, sink: FrameSink): void {
    if (writeOpenAiStreamError(this.#flavor, error, sink)) return;
    // Ollama's OpenAI layer has no mid-stream error: the error line becomes an empty chunk with
    // `model: ""`, then the stream ends without a finish or `[DONE]` (wire-formats.md §6.4).
    const chunk = this.#envelope([{ index: 0, delta: { content: '' }, finish_reason: null }]);
    chunk.model = '';
    sink(this.#stringify(chunk));
  }

  #role(sink: FrameSink, choice = 0): void {
    if (choice !== 0) {
      this.#otherRoles ??= new Set();
      if (this.#otherRoles.has(choice)) return;
      this.#otherRoles.add(choice);
      const role: JsonRecord =
        this.#flavor === 'vllm'
          ? { index: choice, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }
          : { finish_reason: null, index: choice, delta: { role: 'assistant', content: null } };
      sink(this.#stringify(this.#envelope([role])));
      return;
    }
    if (this.#roleSent) return;
    this.#roleSent = true;
    if (this.#flavor === 'vllm') {
      sink(`${this.#envelopeHead()}${VLLM_ROLE_CHOICE}`);
    } else {
      sink(
        this.#stringify(
          this.#envelope([{ finish_reason: null, index: 0, delta: { role: 'assistant', content: null } }]),
        ),
      );
    }
  }

  #textChunkPrefix(): string {
    return `${this.#envelopeHead()}{"index":0,"delta":{"content":`;
  }

  /**
   * vLLM chunks are the envelope with the choices after the last key: `…,"choices":[]}` is serialized
   * once per stream and cut to `…,"choices":[`, then each chunk is that and its own choice (the bytes
   * equal JSON.stringify of the whole chunk).
   */
  #envelopeHead(): string {
    this.#head ??= JSON.stringify(this.#envelope([])).slice(0, -2);
    return this.#head;
  }

  #reasoning(text: string): JsonRecord {
    return this.#flavor.startsWith('ollama') ? { content: '', reasoning: text } : { reasoning: text };
  }

  #content(delta: JsonRecord, sink: FrameSink, index = 0, logprobs?: TokenLogprob[]): void {
    switch (this.#flavor) {
      case 'vllm':
        this.#role(sink, index);
        sink(
          this.#stringify(
            this.#envelope([
              { index, delta, logprobs: this.#logprobs(logprobs), finish_reason: null, token_ids: null },
            ]),
          ),
        );
        return;
      case 'llamacpp':
      case 'llamacpp-legacy': {
        this.#role(sink, index);
        const choice: JsonRecord = { finish_reason: null, index, delta };
        // llama-server writes `logprobs` after the delta, and only when asked.
        if (logprobs !== undefined) choice.logprobs = this.#logprobs(logprobs);
        sink(this.#stringify(this.#envelope([choice])));
        return;
      }
      case 'tgi':
        sink(
          this.#stringify(
            this.#envelope([
              {
                index,
                delta: { role: 'assistant', ...delta },
                logprobs: this.#logprobs(logprobs),
                finish_reason: null,
              },
            ]),
          ),
        );
        return;
      case 'ollama': {
        let first: boolean;
        if (index === 0) {
          first = !this.#roleSent;
          this.#roleSent = true;
        } else {
          this.#otherRoles ??= new Set();
          first = !this.#otherRoles.has(index);
          this.#otherRoles.add(index);
        }
        const choice: JsonRecord = {
          index,
          delta: first ? { role: 'assistant', ...delta } : delta,
          finish_reason: null,
        };
        if (logprobs !== undefined) choice.logprobs = this.#logprobs(logprobs);
        sink(this.#stringify(this.#envelope([choice])));
        return;
      }
      case 'ollama-legacy': {
        const choice: JsonRecord = {
          index,
          delta: { role: 'assistant', content: '', ...delta },
          finish_reason: null,
        };
        if (logprobs !== undefined) choice.logprobs = this.#logprobs(logprobs);
        sink(this.#stringify(this.#envelope([choice])));
        return;
      }
    }
  }

  /** A text event's log probabilities as the chunk's `logprobs` (`null`: not asked for). */
  #logprobs(logprobs: TokenLogprob[] | undefined): JsonRecord | null {
    if (logprobs === undefined) return null;
    return {
      content: tokenLogprobsList(logprobs, this.#flavor.startsWith('llamacpp') ? 'llamacpp' : 'openai'),
    };
  }

  #toolFragment(index: number, id: string | undefined, name: string | undefined, args: string): JsonRecord {
    const first = name !== undefined || id !== undefined;
    switch (this.#flavor) {
      case 'vllm': {
        if (!first) return { index, function: { arguments: args } };
        const fn: JsonRecord = { name: name ?? '' };
        if (args !== '') fn.arguments = args;
        return { id: id ?? `chatcmpl-tool-${randomHex(32)}`, type: 'function', index, function: fn };
      }
      case 'tgi':
        return {
          index,
          id: id ?? String(index),
          type: 'function',
          function: { name: name ?? null, arguments: args },
        };
      default:
        if (!first) return { index, function: { arguments: args } };
        return {
          index,
          id: id ?? randomAlphanumeric(32),
          type: 'function',
          function: { name: name ?? '', arguments: args },
        };
    }
  }

  #finishChunk(finish: FinishEvent, index = 0): JsonRecord | undefined {
    let word = openAiFinishWord(finish);
    switch (this.#flavor) {
      case 'vllm': {
        const choice: JsonRecord = {
          index,
          delta: { content: '' },
          logprobs: null,
          finish_reason: word,
          stop_reason: finish.stopSequence ?? null,
          token_ids: null,
        };
        return this.#envelope([choice]);
      }
      case 'llamacpp':
      case 'llamacpp-legacy':
        return this.#envelope([{ finish_reason: word, index, delta: {} }]);
      case 'tgi':
        // TGI passes `stop_sequence` through unmapped, and ends tool-call streams with no finish chunk.
        if (finish.reason === 'tool-calls') return undefined;
        if (finish.raw === 'stop_sequence') word = 'stop_sequence';
        return this.#envelope([
          { index, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: word },
        ]);
      case 'ollama':
        if (word === 'stop' && this.#toolCalls > 0) word = 'tool_calls';
        return this.#envelope([{ index, delta: {}, finish_reason: word }]);
      case 'ollama-legacy':
        if (this.#toolCalls > 0 && word !== 'length') word = 'tool_calls';
        return this.#envelope([{ index, delta: { role: 'assistant', content: '' }, finish_reason: word }]);
    }
  }

  #usageOrder(): 'vllm' | 'llamacpp' | 'standard' {
    if (this.#flavor === 'vllm') return 'vllm';
    if (this.#flavor.startsWith('llamacpp')) return 'llamacpp';
    return 'standard';
  }

  /** The chunk object around `choices`, with each server's key order. */
  #envelope(choices: JsonRecord[]): JsonRecord {
    const created = this.#created ?? Math.floor(this.#now() / 1000);
    this.#created = created;
    const model = this.#model ?? 'unknown';
    switch (this.#flavor) {
      case 'vllm':
        this.#id ??= `chatcmpl-${randomHex(16)}`;
        return { id: this.#id, object: 'chat.completion.chunk', created, model, choices };
      case 'llamacpp':
      case 'llamacpp-legacy':
        this.#id ??= `chatcmpl-${randomAlphanumeric(32)}`;
        return {
          choices,
          created,
          id: this.#id,
          model,
          system_fingerprint: this.#fingerprint ?? 'b7900-tokenwire',
          object: 'chat.completion.chunk',
        };
      case 'tgi':
        return {
          object: 'chat.completion.chunk',
          id: '',
          created,
          model,
          system_fingerprint: this.#fingerprint ?? '3.3.6-native',
          choices,
          usage: null,
        };
      case 'ollama':
      case 'ollama-legacy':
        this.#id ??= `chatcmpl-${Math.floor(Math.random() * 999)}`;
        return {
          id: this.#id,
          object: 'chat.completion.chunk',
          // Ollama before v0.32.6 stamped every chunk with the clock.
          created:
            this.#flavor === 'ollama-legacy'
              ? (this.#pinnedCreated ?? Math.floor(this.#now() / 1000))
              : created,
          model,
          system_fingerprint: 'fp_ollama',
          choices,
        };
    }
  }
}
