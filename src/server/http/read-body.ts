import { TokenwireError } from '../../errors.ts';
import { concatBytes } from '../../wire/concat-bytes.ts';
import { type BodyReader, READ_BODY, WHOLE_BODY } from './body-symbols.ts';
import type { IncomingRequest } from './incoming-request.ts';

export class BodyError extends TokenwireError {
  readonly status: number;
  constructor(status: number, code: string, message: string) {
    super(code, message);
    this.name = 'BodyError';
    this.status = status;
  }
}

/** Reads a JSON request body, refusing more than `limit` bytes (413) and anything but JSON (400). */
export async function readJsonBody(request: IncomingRequest, limit: number): Promise<unknown> {
  const bytes = await readBodyBytes(request, limit);
  if (bytes === undefined) throw new BodyError(400, 'invalid-json', 'the request needs a JSON body');
  return parseJsonBytes(bytes);
}

/**
 * The whole body, at most `limit` bytes (413 when `Content-Length` says more, or once more arrived), or
 * undefined when there is none. A server adapter that reads the body only when asked (node/serve.ts)
 * reads it with this limit and its body timeout, so a request refused from its headers (a missing key)
 * never has a byte of its body buffered; one that already holds the whole body passes its bytes along;
 * else the Request's stream is read, cut at the limit.
 */
export async function readBodyBytes(
  request: IncomingRequest,
  limit: number,
): Promise<Uint8Array | undefined> {
  const declared = Number(request.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > limit) throw tooLarge(limit);
  const holder = request as unknown as Record<symbol, unknown>;
  const whole = holder[WHOLE_BODY];
  if (whole instanceof Uint8Array) {
    if (whole.length > limit) throw tooLarge(limit);
    return whole;
  }
  const readBody = holder[READ_BODY];
  if (typeof readBody === 'function') {
    const bytes = await (readBody as BodyReader)(limit);
    holder[WHOLE_BODY] = bytes;
    return bytes;
  }
  if (request.body === null) return undefined;
  const reader = request.body.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const next = await reader.read();
    if (next.done) break;
    size += next.value.length;
    if (size > limit) {
      reader.cancel().catch(() => {});
      throw tooLarge(limit);
    }
    parts.push(next.value);
  }
  return concatBytes(...parts);
}

function tooLarge(limit: number): BodyError {
  return new BodyError(413, 'body-too-large', `the request body is larger than the limit of ${limit} bytes`);
}

/**
 * The deepest nesting of arrays and objects a request body may have. Real requests nest a few levels
 * (messages, content parts, tool schemas: tens at most); deeper ones only serve to exhaust the stack of
 * code that walks the value recursively (5000 levels gave a 502 "Maximum call stack size
 * exceeded").
 */
export const MAX_JSON_NESTING = 512;

/**
 * How deep arrays and objects nest in JSON text, counted on the bytes without recursion: brackets
 * outside strings. Stops counting once `stopAt` is reached. Invalid JSON gets some number; JSON.parse
 * reports the error after. Hand-written: no npm parser checks depth without building the value.
 */
export function jsonNestingDepth(bytes: Uint8Array, stopAt = Number.POSITIVE_INFINITY): number {
  let depth = 0;
  let deepest = 0;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i]!;
    if (byte === 0x22) {
      // A string: jump to its closing quote with indexOf (memchr: most of a prompt's bytes are in
      // strings), a quote being escaped when an odd number of backslashes precede it.
      for (let from = i + 1; ; ) {
        const quote = bytes.indexOf(0x22, from);
        if (quote === -1) return deepest;
        let backslash = quote - 1;
        while (backslash > i && bytes[backslash] === 0x5c) backslash--;
        if ((quote - 1 - backslash) % 2 === 0) {
          i = quote;
          break;
        }
        from = quote + 1;
      }
    } else if (byte === 0x5b || byte === 0x7b) {
      depth++;
      if (depth > deepest) {
        deepest = depth;
        if (deepest >= stopAt) return deepest;
      }
    } else if (byte === 0x5d || byte === 0x7d) depth--;
  }
  return deepest;
}

/** One for every request: `decode` without `stream` keeps no state between calls. */
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

function parseJsonBytes(bytes: Uint8Array): unknown {
  let text: string;
  try {
    text = strictUtf8.decode(bytes);
  } catch {
    throw new BodyError(400, 'invalid-json', 'the request body is not valid UTF-8');
  }
  // Deeper than the limit takes more brackets than a short body has bytes: those need no scan.
  if (bytes.length > MAX_JSON_NESTING && jsonNestingDepth(bytes, MAX_JSON_NESTING + 1) > MAX_JSON_NESTING) {
    throw new BodyError(
      400,
      'json-too-deep',
      `the request body nests deeper than ${MAX_JSON_NESTING} levels (the limit for arrays and objects)`,
    );
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new BodyError(
      400,
      'invalid-json',
      `the request body is not valid JSON: ${(error as Error).message}`,
    );
  }
}
