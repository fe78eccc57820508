import { mergeUsage } from '../../events/result.ts';
import type { FinishEvent, StreamEvent } from '../../events/stream-event.ts';
import type { Timings, Usage } from '../../events/usage.ts';
import { goJsonStringify } from '../../wire/go-json.ts';
import type { DialectEncoder, EncoderOptions, FrameSink, MidStreamError } from '../dialect.ts';
import type { JsonRecord } from '../shared/json-fields.ts';
import { ollamaCreatedAt } from '../shared/ollama-created-at.ts';
import { ollamaToolCallObject } from '../shared/ollama-tool-calls.ts';
import { mergeTimings, ollamaTrailerFields } from '../shared/ollama-trailer.ts';

/** Ollama is the only server that writes `/api/chat`. */
export const OLLAMA_CHAT_FLAVORS: readonly string[] = ['ollama'];

/**
 * Writes Ollama's native `/api/chat` NDJSON as Go's `encoding/json` does (wire-formats.md §6.1-6.3):
 * `api.ChatResponse` field order, HTML-escaped, a fresh `created_at` per line from the `now` clock.
 * Text, reasoning (`thinking` with `content: ""`) and complete tool calls are a line each, at once;
 * tool-call fragments are ignored (Ollama only sends whole calls). `end()` writes the `done: true` line
 * with `done_reason` and the metrics; `error()` writes `{"error":"…"}` and nothing more follows.
 */
export class OllamaChatEncoder implements DialectEncoder {
  readonly framing = 'ndjson' as const;
  readonly sseSpace = false;
  readonly #now: () => number;
  #model: string | undefined;
  #finish: FinishEvent | undefined;
  #usage: Usage | undefined;
  #timings: Timings | undefined;
  /** After `end()` or `error()` the stream is over: nothing else is written. */
  #closed = false;

  constructor(options: EncoderOptions = {}) {
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
        if (event.text !== '') this.#line({ role: 'assistant', content: event.text }, false, {}, sink);
        return;
      case 'reasoning':
        if (event.text !== '')
          this.#line({ role: 'assistant', content: '', thinking: event.text }, false, {}, sink);
        return;
      case 'tool-call-delta':
        return;
      case 'tool-call':
        this.#line(
          { role: 'assistant', content: '', tool_calls: [ollamaToolCallObject(event)] },
          false,
          {},
          sink,
        );
        return;
      case 'finish':
        this.#finish = event;
        return;
      case 'usage':
        this.#usage = mergeUsage(this.#usage, event.usage);
        return;
      case 'timings':
        this.#timings = mergeTimings(this.#timings, event.timings);
        return;
      case 'error':
        this.error(event, sink);
        return;
    }
  }

  end(sink: FrameSink): void {
    if (this.#closed) return;
    const trailer = ollamaTrailerFields(
      { finish: this.#finish, usage: this.#usage, timings: this.#timings },
      { context: false },
    );
    this.#line({ role: 'assistant', content: '' }, true, trailer, sink);
    this.#closed = true;
  }

  error(error: MidStreamError, sink: FrameSink): void {
    if (this.#closed) return;
    this.#closed = true;
    sink(goJsonStringify({ error: error.message }));
  }

  #line(message: JsonRecord, done: boolean, trailer: JsonRecord, sink: FrameSink): void {
    sink(
      goJsonStringify({
        model: this.#model ?? 'unknown',
        created_at: ollamaCreatedAt(this.#now()),
        message,
        done,
        ...trailer,
      }),
    );
  }
}
