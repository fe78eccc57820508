import { snippet } from '../../errors.ts';
import type { StartEvent } from '../../events/stream-event.ts';
import type { Frame } from '../../wire/frame.ts';
import { errorFromPayload } from '../common/error-payload.ts';
import type { JsonRecord } from '../common/json-fields.ts';
import { parsePayload } from '../common/parse-payload.ts';
import { TextFrameTemplate } from '../common/text-frame-template.ts';
import { parseTokenLogprobs } from '../common/token-logprobs.ts';
import {
  type DecoderOptions,
  type DialectDecoder,
  DialectError,
  type DialectId,
  type Emit,
} from '../dialect.ts';
import { parseOllamaToolCalls } from './ollama-tool-calls.ts';
import { parseOllamaTrailer } from './ollama-trailer.ts';

/** Where one endpoint's line keeps its parts: `/api/chat` under `message`, `/api/generate` at the top. */
export interface OllamaLineShape {
  dialect: DialectId;
  /** The endpoint, for the error on a line of the other one. */
  endpoint: string;
  /** The record holding content, thinking and tool calls; undefined when the line is not this endpoint's. */
  parts(payload: JsonRecord): JsonRecord | undefined;
  /** The field of the text (`content` or `response`). */
  textField: string;
}

/**
 * Decodes Ollama's native NDJSON (wire-formats.md §6.1-6.3), one response object per line: thinking is
 * reasoning, the text field is text (with the line's `logprobs`, when asked; a thinking line's have no
 * place and are not kept), tool calls are whole (each a delta holding all its arguments, then
 * the complete call, at once). The `done: true` line ends the stream: finish, usage, timings. A
 * `{"error":"…"}` line is an error event; Ollama closes after it. There is no terminator line in NDJSON,
 * so `sawTerminator` is always false; `done: true` makes the stream `terminated` (and `complete`, unless
 * an error line came).
 */
export class OllamaLineDecoder implements DialectDecoder {
  readonly #shape: OllamaLineShape;
  readonly #dropReasoning: boolean;
  #started = false;
  #done = false;
  #errored = false;
  #toolCalls = 0;
  readonly #template: TextFrameTemplate | undefined;
  readonly #decodeFully = (frame: Frame, emit: Emit): void => this.#decode(frame, emit);

  constructor(shape: OllamaLineShape, options: DecoderOptions = {}) {
    this.#shape = shape;
    this.#dropReasoning = options.dropReasoning === true;
    // Every line carries a new `created_at`; only the `done` line's fields are read besides the text.
    this.#template = options.frameTemplates === false ? undefined : new TextFrameTemplate(['"created_at":']);
  }

  get complete(): boolean {
    return this.#done && !this.#errored;
  }

  get terminated(): boolean {
    return this.#done;
  }

  get sawTerminator(): boolean {
    return false;
  }

  frame(frame: Frame, emit: Emit): void {
    if (this.#template === undefined) this.#decode(frame, emit);
    else this.#template.frame(frame, emit, this.#decodeFully);
  }

  #decode(frame: Frame, emit: Emit): void {
    const shape = this.#shape;
    const payload = parsePayload(shape.dialect, frame.data);
    const error = errorFromPayload(payload);
    if (error !== undefined) {
      this.#errored = true;
      emit(error);
      return;
    }
    const parts = shape.parts(payload);
    if (parts === undefined) {
      throw new DialectError(
        shape.dialect,
        `a line is not an ${shape.endpoint} response: ${snippet(frame.data, 120)}`,
      );
    }
    if (!this.#started) {
      this.#started = true;
      const start: StartEvent = { type: 'start' };
      if (typeof payload.model === 'string') start.model = payload.model;
      emit(start);
    }
    // Plain property reads: this runs once per line (bench/decode-throughput.ts).
    if (!this.#dropReasoning) {
      const thinking = parts.thinking;
      if (typeof thinking === 'string' && thinking !== '') emit({ type: 'reasoning', text: thinking });
    }
    const text = parts[shape.textField];
    if (typeof text === 'string' && text !== '') {
      // `logprobs` sits at the top of both endpoints' lines (beside `message` on /api/chat), one entry per
      // token of this line, when the request asked (`logprobs: true`).
      const logprobs = payload.logprobs;
      const parsed =
        Array.isArray(logprobs) && logprobs.length > 0 ? parseTokenLogprobs(logprobs) : undefined;
      emit(
        parsed === undefined || parsed.length === 0
          ? { type: 'text', text }
          : { type: 'text', text, logprobs: parsed },
      );
    }
    // Tool calls come on an intermediate line, or on the `done` line (llama-server "native chat" path).
    const toolCalls = parts.tool_calls;
    if (toolCalls !== undefined) {
      for (const event of parseOllamaToolCalls(toolCalls, this.#toolCalls)) {
        if (event.type === 'tool-call') this.#toolCalls += 1;
        emit(event);
      }
    }
    if (payload.done === true && !this.#done) {
      this.#done = true;
      for (const event of parseOllamaTrailer(payload, this.#toolCalls > 0)) emit(event);
    }
  }

  end(_emit: Emit): void {
    // Nothing is held back: Ollama sends whole tool calls.
  }
}
