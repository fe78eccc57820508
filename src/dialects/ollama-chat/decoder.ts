import { snippet } from '../../errors.ts';
import type { StartEvent } from '../../events/stream-event.ts';
import type { Frame } from '../../wire/frame.ts';
import { type DecoderOptions, type DialectDecoder, DialectError, type Emit } from '../dialect.ts';
import { errorFromPayload } from '../shared/error-payload.ts';
import { isRecord, type JsonRecord, stringField } from '../shared/json-fields.ts';
import { parseOllamaToolCalls } from '../shared/ollama-tool-calls.ts';
import { parseOllamaTrailer } from '../shared/ollama-trailer.ts';
import { parsePayload } from '../shared/parse-payload.ts';

/**
 * Decodes Ollama's native `/api/chat` NDJSON (wire-formats.md §6.1-6.3): one `api.ChatResponse` per
 * line. `message.thinking` is reasoning, `message.content` text, `message.tool_calls` whole calls (each
 * a delta holding all its arguments, then the complete call, at once). The `done: true` line ends the
 * stream: finish, usage, timings. A `{"error":"…"}` line is an error event; Ollama closes after it.
 *
 * There is no terminator line in NDJSON, so `sawTerminator` is always false; `done: true` makes the
 * stream `terminated` (and `complete`, unless an error line came).
 */
export class OllamaChatDecoder implements DialectDecoder {
  readonly #dropReasoning: boolean;
  #started = false;
  #done = false;
  #errored = false;
  #toolCalls = 0;

  constructor(options: DecoderOptions = {}) {
    this.#dropReasoning = options.dropReasoning === true;
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
    const payload = parsePayload('ollama-chat', frame.data);
    const error = errorFromPayload(payload);
    if (error !== undefined) {
      this.#errored = true;
      emit(error);
      return;
    }
    const message = payload.message;
    // `message` and `done` are on every line (neither is omitempty); a `response` means /api/generate.
    if (!isRecord(message) && (typeof payload.done !== 'boolean' || 'response' in payload)) {
      throw new DialectError(
        'ollama-chat',
        `a line is not an /api/chat response: ${snippet(frame.data, 120)}`,
      );
    }
    if (!this.#started) {
      this.#started = true;
      emit(startEvent(payload));
    }
    if (isRecord(message)) {
      // Plain property reads, not stringField: this runs once per line (bench/decode-throughput.ts).
      if (!this.#dropReasoning) {
        const thinking = message.thinking;
        if (typeof thinking === 'string' && thinking !== '') emit({ type: 'reasoning', text: thinking });
      }
      const content = message.content;
      if (typeof content === 'string' && content !== '') emit({ type: 'text', text: content });
      // Tool calls come on an intermediate line, or on the `done` line (llama-server "native chat" path).
      const toolCalls = message.tool_calls;
      if (toolCalls !== undefined) {
        for (const event of parseOllamaToolCalls(toolCalls, this.#toolCalls)) {
          if (event.type === 'tool-call') this.#toolCalls += 1;
          emit(event);
        }
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

function startEvent(payload: JsonRecord): StartEvent {
  const start: StartEvent = { type: 'start' };
  const model = stringField(payload, 'model');
  if (model !== undefined) start.model = model;
  return start;
}
