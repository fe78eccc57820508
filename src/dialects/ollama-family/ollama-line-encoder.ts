import type { StreamEvent } from '../../events/stream-event.ts';
import { goJsonStringify } from '../../wire/go-json.ts';
import type { JsonRecord } from '../common/json-fields.ts';
import { StreamTotals } from '../common/stream-totals.ts';
import { tokenLogprobsList } from '../common/token-logprobs-json.ts';
import type { DialectEncoder, EncoderOptions, FrameSink, MidStreamError } from '../dialect.ts';
import { ollamaCreatedAt } from './ollama-created-at.ts';
import { ollamaToolCallObject } from './ollama-tool-calls.ts';
import { ollamaTrailerFields } from './ollama-trailer.ts';

/** What one line carries: text (may be empty, with its tokens' `logprobs`), reasoning, or one tool call. */
export interface OllamaLinePart {
  text: string;
  thinking?: string;
  toolCall?: JsonRecord;
  /** The text's token log probabilities as Ollama writes them (`api.Logprob`), when the events have them. */
  logprobs?: JsonRecord[];
}

/** Where one endpoint's line puts its parts: `/api/chat` under `message`, `/api/generate` at the top. */
export interface OllamaWriteShape {
  /** Whether the `done` line carries `context` (only `/api/generate` has it). */
  context: boolean;
  /** The fields after `model` and `created_at`, in the Go struct's order; `trailer` is empty until `done`. */
  fields(part: OllamaLinePart, done: boolean, trailer: JsonRecord): JsonRecord;
}

/**
 * Writes Ollama's native NDJSON as Go's `encoding/json` does (wire-formats.md §6.1-6.3): the
 * endpoint's field order, HTML-escaped, a fresh `created_at` per line from the `now` clock. Text (with
 * its `logprobs` when the event has them), reasoning (`thinking` with empty text) and complete tool
 * calls are a line each, at once; tool-call
 * fragments are ignored (Ollama only sends whole calls). `end()` writes the `done: true` line with
 * `done_reason`, `context` where the endpoint has one and the usage came from an Ollama that sent it,
 * and the metrics; `error()` writes `{"error":"…"}` and nothing more follows.
 */
export class OllamaLineEncoder implements DialectEncoder {
  readonly framing = 'ndjson' as const;
  readonly sseSpace = false;
  readonly #shape: OllamaWriteShape;
  readonly #now: () => number;
  #model: string | undefined;
  readonly #totals = new StreamTotals();
  /** After `end()` or `error()` the stream is over: nothing else is written. */
  #closed = false;

  constructor(shape: OllamaWriteShape, options: EncoderOptions = {}) {
    this.#shape = shape;
    this.#now = options.now ?? (() => Date.now());
    this.#model = options.model;
  }

  event(event: StreamEvent, sink: FrameSink): void {
    if (this.#closed) return;
    switch (event.type) {
      case 'start':
        this.#model ??= event.model;
        return;
      case 'text':
        if (event.text === '') return;
        this.#line(
          event.logprobs === undefined
            ? { text: event.text }
            : { text: event.text, logprobs: tokenLogprobsList(event.logprobs, 'ollama') },
          false,
          {},
          sink,
        );
        return;
      case 'reasoning':
        if (event.text !== '') this.#line({ text: '', thinking: event.text }, false, {}, sink);
        return;
      case 'tool-call-delta':
        return;
      case 'tool-call':
        this.#line({ text: '', toolCall: ollamaToolCallObject(event) }, false, {}, sink);
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
    if (this.#closed) return;
    const trailer = ollamaTrailerFields(
      { finish: this.#totals.finish, usage: this.#totals.usage, timings: this.#totals.timings },
      { context: this.#shape.context },
    );
    this.#line({ text: '' }, true, trailer, sink);
    this.#closed = true;
  }

  error(error: MidStreamError, sink: FrameSink): void {
    if (this.#closed) return;
    this.#closed = true;
    sink(goJsonStringify({ error: error.message }));
  }

  #line(part: OllamaLinePart, done: boolean, trailer: JsonRecord, sink: FrameSink): void {
    sink(
      goJsonStringify({
        model: this.#model ?? 'unknown',
        created_at: ollamaCreatedAt(this.#now()),
        ...this.#shape.fields(part, done, trailer),
      }),
    );
  }
}
