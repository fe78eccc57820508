import type { MidStreamError } from '../dialects/dialect.ts';
import type { Result } from '../events/result.ts';
import type { StreamEvent } from '../events/stream-event.ts';
import { type DirectBody, ResponseOutput } from './response-output.ts';

/** The headers of a plain-text stream. `nosniff` keeps browsers from holding the first bytes to sniff them. */
export const PLAIN_TEXT_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/plain; charset=utf-8',
  'x-content-type-options': 'nosniff',
};

/**
 * A client-facing stream of plain UTF-8 text (`Accept: text/plain` or `?format=text`): the answer's
 * text as it arrives, then one last line that says how it ended — `[tokenwire: finished (stop), 42
 * tokens]`, `[tokenwire: truncated (length), …]`, `[tokenwire: incomplete: <reason>: <message>, …]` —
 * so `curl -N` shows truncation and failures too. Reasoning is not written; a tool call is written as
 * a `[tokenwire: tool call name(arguments)]` line. It has the shape of StreamRelay the gateway uses.
 */
export class PlainTextRelay {
  readonly sse = false;
  lastWriteAt: number;
  #ended = false;
  /** The last character written, so the ending line starts on a line of its own. */
  #last = '\n';
  readonly #output: ResponseOutput;
  readonly #now: () => number;

  constructor(options: { now: () => number; onCancel: () => void }) {
    this.#now = options.now;
    this.lastWriteAt = options.now();
    this.#output = new ResponseOutput(options.onCancel);
  }

  get body(): ReadableStream<Uint8Array> {
    return this.#output.body;
  }

  get direct(): DirectBody {
    return this.#output.direct;
  }

  clientLeft(): void {
    this.#output.leave();
  }

  event(event: StreamEvent): void {
    if (this.#ended) return;
    if (event.type === 'text') this.#write(event.text);
    else if (event.type === 'tool-call')
      this.#line(`[tokenwire: tool call ${event.name}(${event.arguments})]`);
  }

  flushEncoder(): void {}

  backpressure(): Promise<void> | undefined {
    return this.#output.backpressure();
  }

  /** Plain text has no comment syntax: nothing can keep a silent stream visibly alive. */
  keepalive(): void {}

  end(result?: Result): void {
    if (this.#ended) return;
    this.#line(result === undefined ? '[tokenwire: finished]' : plainTextEnding(result));
    this.#ended = true;
    this.#output.end();
  }

  fail(error: MidStreamError, result?: Result): void {
    if (this.#ended) return;
    let line = `[tokenwire: error: ${error.message}]`;
    if (result !== undefined) {
      const word =
        result.incomplete === 'server-error' || result.incomplete === undefined ? 'error' : 'incomplete';
      const reason =
        result.incomplete === undefined || result.incomplete === 'server-error'
          ? ''
          : `${result.incomplete}: `;
      line = `[tokenwire: ${word}: ${reason}${error.message}, ${tokenCount(result)}]`;
    }
    this.#line(line);
    this.#ended = true;
    this.#output.end();
  }

  abort(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#output.destroy();
  }

  #line(text: string): void {
    this.#write(`${this.#last === '\n' ? '' : '\n'}${text}\n`);
  }

  #write(text: string): void {
    if (text === '') return;
    this.lastWriteAt = this.#now();
    this.#last = text[text.length - 1]!;
    this.#output.write(text);
  }
}

/** The last line of a plain-text stream that reached its end. */
export function plainTextEnding(result: Result): string {
  if (!result.complete) {
    const word = result.incomplete === 'server-error' ? 'error' : 'incomplete';
    return `[tokenwire: ${word}: ${result.incomplete}: ${result.error?.message ?? 'the stream did not finish'}, ${tokenCount(result)}]`;
  }
  const reason = result.finishReason ?? 'stop';
  return `[tokenwire: ${result.truncated ? 'truncated' : 'finished'} (${reason}), ${tokenCount(result)}]`;
}

function tokenCount(result: Result): string {
  const server = result.usage?.outputTokens;
  if (server !== undefined) return `${server} tokens`;
  return `~${result.metrics.outputTokens ?? 0} tokens (estimated)`;
}
