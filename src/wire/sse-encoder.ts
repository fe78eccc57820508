import { snippet } from '../errors.ts';
import { WireError } from './wire-error.ts';

export interface SseEventInit {
  data: string;
  event?: string | undefined;
  id?: string | undefined;
  /** Reconnection time in ms for the client (`retry:`). */
  retry?: number | undefined;
}

export interface SseEncodeOptions {
  /** Write `data: x` (the default, and every current server) or `data:x` (TGI up to 2.0.x, axum 0.6). */
  space?: boolean | undefined;
}

const LINE_BREAK = /\r\n|\r|\n/;

/**
 * Writes one SSE event. `data` may span lines: each line becomes its own `data:` field, so a CR or LF
 * inside it can never end the event early. `event` and `id` must be single lines: a CR or LF there
 * would let the value inject fields, so it is refused (as is NUL in `id`, which readers ignore).
 */
export function encodeSseEvent(event: SseEventInit, options: SseEncodeOptions = {}): string {
  const prefix = options.space === false ? 'data:' : 'data: ';
  let out = '';
  if (event.event !== undefined) {
    assertSingleLine('event', event.event);
    out += `event: ${event.event}\n`;
  }
  if (event.id !== undefined) {
    assertSingleLine('id', event.id);
    if (event.id.includes('\u0000')) throw new WireError('invalid-sse-field', 'an SSE id cannot hold NUL');
    out += `id: ${event.id}\n`;
  }
  if (event.retry !== undefined) {
    if (!Number.isInteger(event.retry) || event.retry < 0) {
      throw new WireError('invalid-sse-field', `retry must be a non-negative integer, got ${event.retry}`);
    }
    out += `retry: ${event.retry}\n`;
  }
  const data = event.data;
  if (data.indexOf('\n') === -1 && data.indexOf('\r') === -1) return `${out}${prefix}${data}\n\n`;
  for (const line of data.split(LINE_BREAK)) out += `${prefix}${line}\n`;
  return `${out}\n`;
}

/** A comment, such as a keepalive (`:\n\n` with no text, as TGI and llama-server write it). */
export function encodeSseComment(text = ''): string {
  if (text === '') return ':\n\n';
  return `${text
    .split(LINE_BREAK)
    .map((line) => `:${line}`)
    .join('\n')}\n\n`;
}

function assertSingleLine(field: string, value: string): void {
  if (value.includes('\n') || value.includes('\r')) {
    throw new WireError('invalid-sse-field', `an SSE ${field} cannot hold CR or LF: ${snippet(value, 60)}`);
  }
}
