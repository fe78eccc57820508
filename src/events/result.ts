import type { FinishReason } from './finish-reason.ts';
import type { ErrorEvent, StartEvent, StreamEvent, TokenLogprob, ToolCallEvent } from './stream-event.ts';
import { TextAccumulator } from './text-accumulator.ts';
import type { Timings, Usage } from './usage.ts';

/**
 * Why a stream is not a finished answer. A stream that ends without its dialect's terminal event,
 * times out, is aborted, carries a server error or a malformed payload is incomplete, with its partial
 * text kept.
 */
export type IncompleteReason =
  | 'connection-closed'
  | 'first-byte-timeout'
  | 'idle-timeout'
  | 'total-timeout'
  | 'aborted'
  | 'server-error'
  | 'malformed';

/** Timing and volume of one stream, measured by the client when bytes arrived. */
export interface StreamMetrics {
  /** From the request being sent to the response headers. */
  headersMs?: number | undefined;
  /** Time to first byte of the body. */
  ttfbMs?: number | undefined;
  /** Time to first text (or reasoning, or tool call): what a reader waits for. */
  ttftMs?: number | undefined;
  /** Whole stream, from the request being sent to the end. */
  totalMs?: number | undefined;
  /** Frames that carried events (SSE events, NDJSON lines). A chunk is not a token. */
  chunkCount: number;
  /** Gaps between consecutive content-carrying frames, in ms. */
  interChunkMs: number[];
  /** Output tokens: the server's count when it reported one, else an estimate. */
  outputTokens?: number | undefined;
  /** True when `outputTokens` is an estimate (no usage from the server). */
  outputTokensEstimated: boolean;
  inputTokens?: number | undefined;
  /** Output tokens per second after the first token: (outputTokens - 1) / (total - ttft). */
  outputTokensPerSecond?: number | undefined;
  /** Keepalive comments seen. */
  keepaliveCount: number;
  /** Bytes of body received. */
  bytes: number;
}

export interface ToolCall {
  index: number;
  id: string;
  name: string;
  arguments: string;
  input: unknown;
  inputError?: string | undefined;
}

export interface ResultError {
  code: string;
  message: string;
  status?: number | undefined;
  errorType?: string | undefined;
}

/** One answer of several (`n > 1`, a multi-prompt llama.cpp request), by the server's choice index. */
export interface Choice {
  index: number;
  text: string;
  reasoning: string;
  toolCalls: ToolCall[];
  logprobs?: TokenLogprob[] | undefined;
  finishReason?: FinishReason | undefined;
  rawFinishReason?: string | null | undefined;
  stopSequence?: string | undefined;
  truncated: boolean;
}

/** The final outcome of a stream. */
export interface Result {
  /** Choice 0's answer (the only one, unless the request asked for several: see `choices`). */
  text: string;
  reasoning: string;
  toolCalls: ToolCall[];
  /** Choice 0's token log probabilities, when the request asked for them. */
  logprobs?: TokenLogprob[] | undefined;
  /** Every answer, by index, when the server sent more than one (choice 0 is also the top level). */
  choices?: Choice[] | undefined;
  usage?: Usage | undefined;
  timings?: Timings | undefined;
  finishReason?: FinishReason | undefined;
  /** The server's own finish word (`eos_token`, `limit`, `length`…). */
  rawFinishReason?: string | null | undefined;
  stopSequence?: string | undefined;
  /** True only when the dialect's terminal event arrived and no error came with it. */
  complete: boolean;
  incomplete?: IncompleteReason | undefined;
  /** The output cap cut the answer off (`finishReason === 'length'`). */
  truncated: boolean;
  /** The server cut the prompt to fit its context: the answer is to a prompt it did not read whole. */
  inputTruncated?: boolean | undefined;
  error?: ResultError | undefined;
  id?: string | undefined;
  model?: string | undefined;
  dialect?: string | undefined;
  metrics: StreamMetrics;
}

export function emptyMetrics(): StreamMetrics {
  return { chunkCount: 0, interChunkMs: [], outputTokensEstimated: true, keepaliveCount: 0, bytes: 0 };
}

/** What is folded per choice beyond choice 0 (whose fields are the builder's own). */
class ChoiceBuilder {
  text = '';
  reasoning = '';
  readonly toolCalls: ToolCall[] = [];
  logprobs: TokenLogprob[] | undefined;
  finishReason: FinishReason | undefined;
  rawFinishReason: string | null | undefined;
  stopSequence: string | undefined;
}

/** Folds normalized events into a Result. Pure: the client, the gateway and the tests share it. */
export class ResultBuilder {
  /** Text of choice 0. */
  readonly #text = new TextAccumulator();
  #reasoning = '';
  #logprobs: TokenLogprob[] | undefined;
  /** Choices other than 0, by index; undefined until one arrives. */
  #others: Map<number, ChoiceBuilder> | undefined;
  readonly toolCalls: ToolCall[] = [];
  usage: Usage | undefined;
  timings: Timings | undefined;
  start: StartEvent | undefined;
  finishReason: FinishReason | undefined;
  rawFinishReason: string | null | undefined;
  stopSequence: string | undefined;
  inputTruncated = false;
  serverError: ErrorEvent | undefined;
  /** Output text and reasoning characters, for estimating tokens when the server gives no count. */
  contentChars = 0;

  get text(): string {
    return this.#text.text;
  }

  add(event: StreamEvent): void {
    if ('choice' in event && event.choice !== undefined && event.choice !== 0) {
      this.#addToChoice(event.choice, event);
      return;
    }
    switch (event.type) {
      case 'text':
        this.#text.add(event.text);
        this.contentChars += event.text.length;
        if (event.logprobs !== undefined) this.#logprobs = appended(this.#logprobs, event.logprobs);
        return;
      case 'reasoning':
        this.#reasoning += event.text;
        this.contentChars += event.text.length;
        return;
      case 'tool-call':
        this.toolCalls.push(toToolCall(event));
        return;
      case 'tool-call-delta':
        this.contentChars += event.argumentsDelta.length;
        return;
      case 'usage':
        this.usage = mergeUsage(this.usage, event.usage);
        return;
      case 'timings':
        this.timings = { ...this.timings, ...event.timings };
        return;
      case 'start':
        this.start = this.start === undefined ? event : { ...this.start, ...definedOnly(event) };
        return;
      case 'finish':
        this.finishReason = event.reason;
        this.rawFinishReason = event.raw;
        if (event.stopSequence !== undefined) this.stopSequence = event.stopSequence;
        if (event.inputTruncated === true) this.inputTruncated = true;
        return;
      case 'error':
        this.serverError ??= event;
        return;
    }
  }

  #addToChoice(index: number, event: StreamEvent): void {
    this.#others ??= new Map();
    let choice = this.#others.get(index);
    if (choice === undefined) {
      choice = new ChoiceBuilder();
      this.#others.set(index, choice);
    }
    switch (event.type) {
      case 'text':
        choice.text += event.text;
        this.contentChars += event.text.length;
        if (event.logprobs !== undefined) choice.logprobs = appended(choice.logprobs, event.logprobs);
        return;
      case 'reasoning':
        choice.reasoning += event.text;
        this.contentChars += event.text.length;
        return;
      case 'tool-call':
        choice.toolCalls.push(toToolCall(event));
        return;
      case 'tool-call-delta':
        this.contentChars += event.argumentsDelta.length;
        return;
      case 'finish':
        choice.finishReason = event.reason;
        choice.rawFinishReason = event.raw;
        if (event.stopSequence !== undefined) choice.stopSequence = event.stopSequence;
        return;
      default:
        return;
    }
  }

  #choices(): Choice[] | undefined {
    if (this.#others === undefined) return undefined;
    const zero = new ChoiceBuilder();
    zero.text = this.text;
    zero.reasoning = this.#reasoning;
    zero.toolCalls.push(...this.toolCalls);
    zero.logprobs = this.#logprobs;
    zero.finishReason = this.finishReason;
    zero.rawFinishReason = this.rawFinishReason;
    zero.stopSequence = this.stopSequence;
    const all: [number, ChoiceBuilder][] = [[0, zero], ...this.#others];
    all.sort((a, b) => a[0] - b[0]);
    return all.map(([index, built]) => {
      const choice: Choice = {
        index,
        text: built.text,
        reasoning: built.reasoning,
        toolCalls: built.toolCalls,
        truncated: built.finishReason === 'length',
      };
      if (built.logprobs !== undefined) choice.logprobs = built.logprobs;
      if (built.finishReason !== undefined) choice.finishReason = built.finishReason;
      if (built.rawFinishReason !== undefined) choice.rawFinishReason = built.rawFinishReason;
      if (built.stopSequence !== undefined) choice.stopSequence = built.stopSequence;
      return choice;
    });
  }

  /** The Result as it stands, with the completeness decided by the caller (who saw the transport). */
  build(outcome: {
    complete: boolean;
    incomplete?: IncompleteReason | undefined;
    error?: ResultError | undefined;
    dialect?: string | undefined;
    metrics: StreamMetrics;
  }): Result {
    const result: Result = {
      text: this.text,
      reasoning: this.#reasoning,
      toolCalls: this.toolCalls,
      complete: outcome.complete,
      truncated: this.finishReason === 'length',
      metrics: outcome.metrics,
    };
    if (this.#logprobs !== undefined) result.logprobs = this.#logprobs;
    const choices = this.#choices();
    if (choices !== undefined) result.choices = choices;
    if (this.usage !== undefined) result.usage = this.usage;
    if (this.timings !== undefined) result.timings = this.timings;
    if (this.finishReason !== undefined) result.finishReason = this.finishReason;
    if (this.rawFinishReason !== undefined) result.rawFinishReason = this.rawFinishReason;
    if (this.stopSequence !== undefined) result.stopSequence = this.stopSequence;
    if (this.inputTruncated) result.inputTruncated = true;
    if (outcome.incomplete !== undefined) result.incomplete = outcome.incomplete;
    if (outcome.error !== undefined) result.error = outcome.error;
    if (this.start?.id !== undefined) result.id = this.start.id;
    if (this.start?.model !== undefined) result.model = this.start.model;
    if (outcome.dialect !== undefined) result.dialect = outcome.dialect;
    return result;
  }
}

function appended(list: TokenLogprob[] | undefined, more: TokenLogprob[]): TokenLogprob[] {
  if (list === undefined) return more.slice();
  for (const entry of more) list.push(entry);
  return list;
}

function toToolCall(event: ToolCallEvent): ToolCall {
  const call: ToolCall = {
    index: event.index,
    id: event.id,
    name: event.name,
    arguments: event.arguments,
    input: event.input,
  };
  if (event.inputError !== undefined) call.inputError = event.inputError;
  return call;
}

/** Later usage reports refine earlier ones field by field (Ollama-compat sends zeros, then the real counts). */
export function mergeUsage(previous: Usage | undefined, next: Usage): Usage {
  if (previous === undefined) return next;
  return { ...previous, ...definedOnly(next) };
}

function definedOnly<T extends object>(value: T): Partial<T> {
  const out: Partial<T> = {};
  for (const key of Object.keys(value) as (keyof T)[]) {
    if (value[key] !== undefined) out[key] = value[key];
  }
  return out;
}
