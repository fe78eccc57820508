import { TokenwireError } from '../errors.ts';
import type { ChatRequest } from '../events/chat-request.ts';
import type { StreamEvent } from '../events/stream-event.ts';
import type { Frame } from '../wire/frame.ts';

/** The six wire dialects. Each id equals the file/folder that implements it. */
export type DialectId =
  | 'openai-chat'
  | 'openai-completions'
  | 'ollama-chat'
  | 'ollama-generate'
  | 'llamacpp'
  | 'tgi'
  | 'openai-responses'
  | 'anthropic-messages';

export const DIALECT_IDS: readonly DialectId[] = [
  'openai-chat',
  'openai-completions',
  'ollama-chat',
  'ollama-generate',
  'llamacpp',
  'tgi',
  'openai-responses',
  'anthropic-messages',
];

export type Framing = 'sse' | 'ndjson';

export type Emit = (event: StreamEvent) => void;

/**
 * Frames -> normalized events, for one stream. Stateful (tool-call fragments, the role chunk, the
 * terminal marker), so one decoder per stream.
 */
export interface DialectDecoder {
  /**
   * Decodes one frame. Throws a `DialectError` with code `malformed-payload` when the payload is not
   * JSON or not a shape this dialect sends.
   */
  frame(frame: Frame, emit: Emit): void;
  /** The stream ended (EOF). Emits anything held back, such as tool calls still being assembled. */
  end(emit: Emit): void;
  /**
   * By this dialect's own rule, the answer is whole: its terminal marker arrived (`finish_reason`,
   * `[DONE]` where there is no finish, `done: true`, `stop: true`, a non-null `generated_text`).
   * An error event does not make a stream complete; the client checks that separately.
   */
  readonly complete: boolean;
  /** Nothing more will come: the last frame of this dialect arrived (`[DONE]`, `done: true`…). */
  readonly terminated: boolean;
  /** The `[DONE]` sentinel (or the dialect's explicit terminator) was seen, where it has one. */
  readonly sawTerminator: boolean;
}

/**
 * Where encoded payloads go: the caller frames them (SSE with ids, NDJSON lines). A payload is one line,
 * JSON or a sentinel (`[DONE]`), never holding CR or LF: callers frame it as it is, without searching it
 * (every dialect's conformance suite checks this, with line breaks in the text).
 */
export type FrameSink = (data: string, kind?: FrameKind) => void;

/**
 * How a payload is framed beyond its `data:` line: `'legacy-error-field'` is llama-server's old
 * `error: {...}` line; any other value is the SSE event name, written as an `event:` line before the data
 * (the Anthropic Messages and OpenAI Responses dialects name every event). Encoders pass constants, so a
 * name never holds CR or LF.
 */
export type FrameKind = 'legacy-error-field' | (string & {});

export interface MidStreamError {
  message: string;
  errorType?: string | undefined;
  status?: number | undefined;
}

/**
 * Normalized events -> payloads, writing what the real server writes. Content events are written at
 * once; the trailer (finish, usage, timings) is held and written by `end()`, because several servers
 * put them in one object (Ollama's `done` line, llama.cpp's final event, TGI's `generated_text` event).
 */
export interface DialectEncoder {
  readonly framing: Framing;
  /** SSE only: `data: x` (true) or `data:x` (TGI up to 2.0.x). */
  readonly sseSpace: boolean;
  event(event: StreamEvent, sink: FrameSink): void;
  /**
   * Writes any content held back to merge it with what follows (a server that puts the last text on its
   * finish chunk). Relays call it after each upstream read, so holding never delays a token beyond the
   * read that carried it. Optional: most encoders hold nothing.
   */
  flush?(sink: FrameSink): void;
  /** The clean end of a stream: the held trailer, then the terminator where the dialect has one. */
  end(sink: FrameSink): void;
  /** A mid-stream failure in this dialect's own error shape, then what the server writes after it. */
  error(error: MidStreamError, sink: FrameSink): void;
}

export interface EncoderOptions {
  /** Which server to imitate, where one dialect is written by several (see each dialect's flavors). */
  flavor?: string | undefined;
  /** Defaults for metadata the events may not carry (translation from another dialect). */
  id?: string | undefined;
  model?: string | undefined;
  /** Unix seconds. */
  created?: number | undefined;
  /** Write the usage chunk (`stream_options.include_usage`), in dialects where it is optional. */
  includeUsage?: boolean | undefined;
  /**
   * The request's own sampling, for dialects whose answers echo it (llama.cpp `generation_settings`):
   * what is not given is left out of the answer, never filled with a server default.
   */
  sampling?:
    | { seed?: number | undefined; temperature?: number | undefined; maxTokens?: number | undefined }
    | undefined;
  /** Clock for timestamps the dialect writes (Ollama `created_at`). Default `Date.now`. */
  now?: (() => number) | undefined;
  /**
   * The last payload of a stream begun elsewhere, for an encoder that writes only its rest (a resumed
   * stream's ending): once its opening is written (and discarded by the caller), numbering goes on from
   * that payload's (the Responses `sequence_number`).
   */
  continuesAfter?: string | undefined;
}

export interface DecoderOptions {
  /** Drop reasoning instead of emitting it. */
  dropReasoning?: boolean | undefined;
  /**
   * The request's output cap, when the reader knows it. A dialect whose server says it finished when the
   * cap cut the answer (llama-server's Responses `status: "completed"` at `max_output_tokens`) reads that
   * case as `length` from the output count.
   */
  maxOutputTokens?: number | undefined;
  /**
   * Read a text frame shaped like an earlier one without `JSON.parse` (TextFrameTemplate: same events,
   * several times faster). Default true; false parses every frame (for measuring, or to rule it out).
   */
  frameTemplates?: boolean | undefined;
}

/** What a detector looks at. Any field may be missing. */
export interface DetectProbe {
  path?: string | undefined;
  contentType?: string | undefined;
  /** The first payload, parsed (an SSE event's data or an NDJSON line). */
  payload?: unknown;
}

export interface ErrorResponse {
  status: number;
  contentType: string;
  body: string;
}

export interface Dialect {
  readonly id: DialectId;
  readonly framing: Framing;
  /** How this dialect says a stream is over, in words, for messages (`a line with "done": true`). */
  readonly terminalEvent: string;
  /** The endpoint paths that speak this dialect; the first is canonical. */
  readonly paths: readonly string[];
  /** Encoder flavors this dialect can imitate; the first is the default. */
  readonly flavors: readonly string[];
  /** Response headers the real server sends for a stream (per flavor); a fresh object each call. */
  responseHeaders(flavor?: string): Record<string, string>;
  createDecoder(options?: DecoderOptions): DialectDecoder;
  createEncoder(options?: EncoderOptions): DialectEncoder;
  /** Normalized request -> this dialect's request body (always a streaming request). */
  toRequestBody(request: ChatRequest): Record<string, unknown>;
  /** This dialect's request body -> normalized request. Throws a `RequestError` naming the bad field. */
  fromRequestBody(body: unknown): ChatRequest;
  /** 0 (not this dialect) to 1 (certainly this dialect). */
  detect(probe: DetectProbe): number;
  /** An error before any streaming, in the body shape this dialect's server uses. */
  errorResponse(error: { status: number; message: string; errorType?: string | undefined }): ErrorResponse;
}

export type DialectErrorCode = 'malformed-payload';

/** A payload that is not what the dialect sends. The stream is marked incomplete (`malformed`). */
export class DialectError extends TokenwireError {
  declare readonly code: DialectErrorCode;
  readonly dialect: DialectId;

  constructor(dialect: DialectId, message: string, options: { cause?: unknown } = {}) {
    super('malformed-payload', `${dialect}: ${message}`, options);
    this.name = 'DialectError';
    this.dialect = dialect;
  }
}

/** A request body a dialect cannot accept. Becomes a 400 naming the field, before any streaming. */
export class RequestError extends TokenwireError {
  readonly field: string | undefined;
  readonly status: number;

  constructor(message: string, options: { field?: string; status?: number; cause?: unknown } = {}) {
    super('invalid-request', message, options.cause === undefined ? {} : { cause: options.cause });
    this.name = 'RequestError';
    this.field = options.field;
    this.status = options.status ?? 400;
  }
}
