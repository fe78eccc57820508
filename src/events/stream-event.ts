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

/** A piece of answer text. Never a control token (TGI `special: true`), never empty. */
export interface TextEvent {
  type: 'text';
  text: string;
}

/** A piece of reasoning text (`reasoning_content`, `reasoning`, Ollama `thinking`). Never empty. */
export interface ReasoningEvent {
  type: 'reasoning';
  text: string;
}

/** A tool-call fragment as it arrived. The first fragment of a call carries its id and name. */
export interface ToolCallDeltaEvent {
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
export interface ToolCallEvent {
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
export interface FinishEvent {
  type: 'finish';
  reason: FinishReason;
  raw: string | null;
  /** The stop string that ended it, when the server said which. */
  stopSequence?: string | undefined;
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
