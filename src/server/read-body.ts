import { TokenwireError } from '../errors.ts';
import { concatBytes } from '../wire/concat-bytes.ts';
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
  const declared = Number(request.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > limit) {
    throw new BodyError(413, 'body-too-large', `the request body is larger than the limit of ${limit} bytes`);
  }
  // A server adapter that already holds the whole body passes its bytes along (node/serve.ts): no need
  // to read them back through the Request's stream.
  const whole = (request as unknown as Record<symbol, unknown>)[WHOLE_BODY];
  if (whole instanceof Uint8Array) {
    if (whole.length > limit) {
      throw new BodyError(
        413,
        'body-too-large',
        `the request body is larger than the limit of ${limit} bytes`,
      );
    }
    return parseJsonBytes(whole);
  }
  if (request.body === null) throw new BodyError(400, 'invalid-json', 'the request needs a JSON body');
  const reader = request.body.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const next = await reader.read();
    if (next.done) break;
    size += next.value.length;
    if (size > limit) {
      reader.cancel().catch(() => {});
      throw new BodyError(
        413,
        'body-too-large',
        `the request body is larger than the limit of ${limit} bytes`,
      );
    }
    parts.push(next.value);
  }
  const bytes = concatBytes(...parts);
  return parseJsonBytes(bytes);
}

/** Set by a server adapter on the Request it builds: the body's bytes, already read in full. */
export const WHOLE_BODY: unique symbol = Symbol.for('tokenwire.whole-body') as never;

/** One for every request: `decode` without `stream` keeps no state between calls. */
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

function parseJsonBytes(bytes: Uint8Array): unknown {
  let text: string;
  try {
    text = strictUtf8.decode(bytes);
  } catch {
    throw new BodyError(400, 'invalid-json', 'the request body is not valid UTF-8');
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
