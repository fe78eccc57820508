import { mergeUsage } from '../../events/result.ts';
import type { FinishEvent, StreamEvent } from '../../events/stream-event.ts';
import type { Timings, Usage } from '../../events/usage.ts';
import { goJsonStringify } from '../../wire/go-json.ts';
import type { DialectEncoder, EncoderOptions, FrameSink, MidStreamError } from '../dialect.ts';
import type { JsonRecord } from '../shared/json-fields.ts';
import { ollamaCreatedAt } from '../shared/ollama-created-at.ts';
import { ollamaToolCallObject } from '../shared/ollama-tool-calls.ts';
import { mergeTimings, ollamaTrailerFields } from '../shared/ollama-trailer.ts';

/** Ollama is the only server that writes `/api/generate`. */
export const OLLAMA_GENERATE_FLAVORS: readonly string[] = ['ollama'];

/**
 * Writes Ollama's native `/api/generate` NDJSON as Go's `encoding/json` does (wire-formats.md §6.1-6.3):
 * `api.GenerateResponse` field order (`model`, `created_at`, `response`, `thinking`, `done`,
 * `done_reason`, `context`, metrics, `tool_calls`), HTML-escaped, a fresh `created_at` per line from the
 * `now` clock. Text, reasoning (`thinking` with `response: ""`) and complete tool calls are a line each,
 * at once; tool-call fragments are ignored. `end()` writes the `done: true` line with `done_reason`,
 * `context` (when the usage came from an Ollama that sent one) and the metrics; `error()` writes
 * `{"error":"…"}` and nothing more follows.
 */
export class OllamaGenerateEncoder implements DialectEncoder {
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
        if (event.text !== '') this.#line({ response: event.text, done: false }, sink);
        return;
      case 'reasoning':
        if (event.text !== '') this.#line({ response: '', thinking: event.text, done: false }, sink);
        return;
      case 'tool-call-delta':
        return;
      case 'tool-call':
        this.#line({ response: '', done: false, tool_calls: [ollamaToolCallObject(event)] }, sink);
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
      { context: true },
    );
    this.#line({ response: '', done: true, ...trailer }, sink);
    this.#closed = true;
  }

  error(error: MidStreamError, sink: FrameSink): void {
    if (this.#closed) return;
    this.#closed = true;
    sink(goJsonStringify({ error: error.message }));
  }

  #line(fields: JsonRecord, sink: FrameSink): void {
    sink(
      goJsonStringify({
        model: this.#model ?? 'unknown',
        created_at: ollamaCreatedAt(this.#now()),
        ...fields,
      }),
    );
  }
}
