import type { MidStreamError } from '../../dialects/dialect.ts';
import type { Result } from '../../events/result.ts';
import type { StreamEvent } from '../../events/stream-event.ts';
import { type DirectBody, ResponseOutput } from '../http/response-output.ts';

/**
 * A client-facing stream of plain UTF-8 text (`Accept: text/plain` or `?format=text`): the answer's
 * text as it arrives, then one last line that says how it ended — `[tokenwire: finished (stop), 42
 * tokens]`, `[tokenwire: truncated (length), …]`, `[tokenwire: incomplete: <reason>: <message>, …]` —
 * so `curl -N` shows truncation and failures too. Reasoning is not written; a tool call is written as
 * a `[tokenwire: tool call name(arguments)]` line. It has the shape of StreamRelay the gateway uses.
 *
 * The ending line cannot be forged by the model: a line of the answer that starts with `[tokenwire:`
 * (after any backslashes) is written with one more backslash in front (`\[tokenwire: finished …`), so
 * only our own lines start with the marker; and our lines never hold a line break (one inside an error
 * message or tool arguments is written as `\n`). To read the text back, drop one backslash from each
 * line that matches `^\\+\[tokenwire:`.
 */
export class PlainTextRelay {
  readonly sse = false;
  lastWriteAt: number;
  #ended = false;
  /** The last character written, so the ending line starts on a line of its own. */
  #last = '\n';
  /** The answer's text is at the start of a line (where the marker could begin). */
  #atLineStart = true;
  /** The start of an answer line held until it shows whether it is the marker. */
  #held = '';
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
    if (event.type === 'text') this.#text(event.text);
    else if (event.type === 'tool-call')
      this.#line(`[tokenwire: tool call ${event.name}(${event.arguments})]`);
  }

  flushEncoder(): void {}

  backpressure(): Promise<void> | undefined {
    return this.#output.backpressure();
  }

  /** Plain text has no comment syntax: nothing can keep a silent stream visibly alive. */
  keepalive(): void {}

  /** Plain text has no comments: nothing extra is written. */
  note(_text: string): void {}

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
    // What was held is not the marker (it was never completed): it goes out as it is.
    const held = this.#held;
    this.#held = '';
    this.#atLineStart = true;
    if (held !== '') this.#write(held);
    this.#write(`${this.#last === '\n' ? '' : '\n'}${text.replace(/\r\n|\r|\n/g, '\\n')}\n`);
  }

  /** The answer's text, with a backslash before any line that would start with the marker. */
  #text(text: string): void {
    let out = '';
    let i = 0;
    while (i < text.length) {
      if (this.#atLineStart) {
        const held = this.#held + (text[i] as string);
        i += 1;
        const kind = lineStart(held);
        if (kind === 'undecided') {
          this.#held = held;
          continue;
        }
        this.#held = '';
        if (kind === 'marker') out += '\\';
        out += held;
        const last = held[held.length - 1];
        this.#atLineStart = last === '\n' || last === '\r';
        continue;
      }
      let end = i;
      while (end < text.length && text[end] !== '\n' && text[end] !== '\r') end += 1;
      if (end === text.length) {
        out += text.slice(i);
        break;
      }
      out += text.slice(i, end + 1);
      i = end + 1;
      this.#atLineStart = true;
    }
    this.#write(out);
  }

  #write(text: string): void {
    if (text === '') return;
    this.lastWriteAt = this.#now();
    this.#last = text[text.length - 1]!;
    this.#output.write(text);
  }
}

const MARKER = '[tokenwire:';
/** Backslashes beyond this many at a line's start: not worth holding the line for. */
const MAX_HELD_BACKSLASHES = 64;

/** Is the start of an answer line the marker (after any backslashes), not it, or too short to tell? */
function lineStart(held: string): 'marker' | 'plain' | 'undecided' {
  let slashes = 0;
  while (slashes < held.length && held[slashes] === '\\') slashes += 1;
  if (slashes > MAX_HELD_BACKSLASHES) return 'plain';
  const rest = held.slice(slashes);
  if (!MARKER.startsWith(rest)) return 'plain';
  return rest.length === MARKER.length ? 'marker' : 'undecided';
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
