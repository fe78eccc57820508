import { dialectForPath, getDialect } from '../../dialects/registry.ts';
import { abortSignalOf } from './client-signal.ts';
import { errorResponse } from './gateway-errors.ts';
import { type IncomingRequest, toRequest } from './incoming-request.ts';
import { BodyError, jsonNestingDepth, MAX_JSON_NESTING, readBodyBytes } from './read-body.ts';

/**
 * The standard Request a fallback handler gets (the playground's pages, the raw simulator under
 * `/sim/`), its body read first under the limits every generation route has (a 191 MiB body
 * reached the raw simulator whole, and a deep one overflowed its stack): more than `maxBodyBytes` is a
 * 413 (from `Content-Length`, or cut while it arrives), a late body the adapter's 408, and a body that
 * reads as JSON (its first byte past white space `{` or `[`) nesting deeper than `MAX_JSON_NESTING` a
 * 400 — in the error shape of the dialect whose path the target ends with (OpenAI's otherwise).
 * Returns that refusal instead of the Request. GET and HEAD carry no body: passed on as they are.
 */
export async function fallbackRequest(
  request: IncomingRequest,
  path: string,
  maxBodyBytes: number,
): Promise<Request | Response> {
  if (request.method === 'GET' || request.method === 'HEAD') return toRequest(request);
  let bytes: Uint8Array;
  try {
    bytes = (await readBodyBytes(request, maxBodyBytes)) ?? new Uint8Array(0);
  } catch (error) {
    if (!(error instanceof BodyError)) throw error;
    return refusal(path, error.status, error.message);
  }
  if (looksLikeJson(bytes) && jsonNestingDepth(bytes, MAX_JSON_NESTING + 1) > MAX_JSON_NESTING) {
    return refusal(
      path,
      400,
      `the request body nests deeper than ${MAX_JSON_NESTING} levels (the limit for arrays and objects)`,
    );
  }
  const init: RequestInit = {
    method: request.method,
    headers: headerPairs(request),
    signal: abortSignalOf(request.signal),
  };
  if (bytes.length > 0) init.body = bytes;
  return new Request(request.url, init);
}

function refusal(path: string, status: number, message: string): Response {
  return errorResponse(dialectForPath(path) ?? getDialect('openai-chat'), 'dialect', status, message);
}

function headerPairs(request: IncomingRequest): [string, string][] {
  const pairs: [string, string][] = [];
  for (const name of request.headers.keys())
    if (name !== 'content-length' && name !== 'transfer-encoding')
      pairs.push([name, request.headers.get(name) ?? '']);
  return pairs;
}

function looksLikeJson(bytes: Uint8Array): boolean {
  for (const byte of bytes) {
    // JSON's white space: space, tab, LF, CR.
    if (byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d) continue;
    return byte === 0x7b || byte === 0x5b;
  }
  return false;
}
