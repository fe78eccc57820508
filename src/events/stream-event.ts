import type { FinishReason } from './finish-reason.ts';
import type { Timings, Usage } from './usage.ts';

/**
 * The normalized stream: one discriminated union that every dialect decoder produces and every
 * encoder consumes. A chunk is not a token and an event is not a read: decoders emit one event per
 * meaningful piece of a frame, whatever the network did.
 */
export type StreamEvent =
  | StartEvent
  | TextEvent
  | ReasoningEvent
  | ToolCallDeltaEvent
  | ToolCallEvent
  | UsageEvent
  | TimingsEvent
  | FinishEvent
  | ErrorEvent;

export type StreamEventType = StreamEvent['type'];

/** The stream began (the role chunk; Ollama's first line). Metadata the server sent, when it did. */
export interface StartEvent {
  type: 'start';
  id?: string | undefined;
  model?: string | undefined;
  /** Unix seconds, as OpenAI-style servers write `created`. */
  created?: number | undefined;
  systemFingerprint?: string | undefined;
}

/**
 * Which answer an event belongs to when a request asked for several (OpenAI `n`, a llama.cpp
 * multi-prompt `/completion`): the server's choice `index`. Absent means 0, the only answer of nearly
 * every stream; the Result's top-level fields are choice 0's.
 */
export interface ChoiceScoped {
  choice?: number | undefined;
}

/** One token's log probability, with its most likely alternatives when the request asked for them. */
export interface TokenLogprob {
  token: string;
  logprob: number;
  /** The token's UTF-8 bytes, where the server sends them (a token may be part of a character). */
  bytes?: number[] | undefined;
  /** The token's id in the model's vocabulary (llama-server writes it). */
  id?: number | undefined;
  top?: TopLogprob[] | undefined;
}

export interface TopLogprob {
  token: string;
  logprob: number;
  bytes?: number[] | undefined;
  id?: number | undefined;
}

/** A piece of answer text. Never a control token (TGI `special: true`), never empty. */
export interface TextEvent extends ChoiceScoped {
  type: 'text';
  text: string;
  /** Log probabilities of the tokens this text is made of (`logprobs`, llama.cpp `n_probs`), when asked. */
  logprobs?: TokenLogprob[] | undefined;
  /** Token ids of this text, where the server sends them (llama.cpp `tokens`). */
  tokenIds?: number[] | undefined;
  /** The output item this text opens, where the dialect names items (Responses `msg_…`): first piece only. */
  itemId?: string | undefined;
}

/**
 * A piece of reasoning text (`reasoning_content`, `reasoning`, Ollama `thinking`). Never empty, except
 * on an event that carries only a `signature`.
 */
export interface ReasoningEvent extends ChoiceScoped {
  type: 'reasoning';
  text: string;
  /**
   * The reasoning block's signature (Anthropic `signature_delta`): opaque, sent back with the thinking in
   * later turns. Such an event has `text: ""`; dialects without signatures ignore it.
   */
  signature?: string | undefined;
  /** The output item this reasoning opens, where the dialect names items (Responses `rs_…`): first piece only. */
  itemId?: string | undefined;
}

/** A tool-call fragment as it arrived. The first fragment of a call carries its id and name. */
export interface ToolCallDeltaEvent extends ChoiceScoped {
  type: 'tool-call-delta';
  index: number;
  id?: string | undefined;
  name?: string | undefined;
  argumentsDelta: string;
}

/**
 * A complete tool call, emitted once its last fragment is in. `input` is the arguments parsed as JSON,
 * exactly once; when they do not parse, `input` is undefined and `inputError` says why.
 */
export interface ToolCallEvent extends ChoiceScoped {
  type: 'tool-call';
  index: number;
  id: string;
  name: string;
  arguments: string;
  input: unknown;
  inputError?: string | undefined;
}

export interface UsageEvent {
  type: 'usage';
  usage: Usage;
}

export interface TimingsEvent {
  type: 'timings';
  timings: Timings;
}

/** The generation ended. `reason` is unified; `raw` is the server's own word. */
export interface FinishEvent extends ChoiceScoped {
  type: 'finish';
  reason: FinishReason;
  raw: string | null;
  /** The stop string that ended it, when the server said which. */
  stopSequence?: string | undefined;
  /** The server cut the prompt to fit its context before answering (llama.cpp `truncated: true`). */
  inputTruncated?: boolean | undefined;
}

/** The server reported a failure inside the stream (an error inside a 200). */
export interface ErrorEvent {
  type: 'error';
  message: string;
  /** The error's type word (`server_error`, `InternalServerError`, TGI `error_type`). */
  errorType?: string | undefined;
  /** The HTTP-like status the server attached (`code`, `http_status_code`). */
  status?: number | undefined;
  raw?: unknown;
}
