import type { Dialect, DialectId } from '../dialects/dialect.ts';
import { dialectForPath, getDialect } from '../dialects/registry.ts';
import type { ChatRequest } from '../events/chat-request.ts';
import { RequestFailedError } from './client-errors.ts';

/** What to send. Give either `body` (a dialect body, sent as is) or `request` (normalized, mapped by the dialect). */
export interface StreamRequest {
  /** The endpoint URL, e.g. `http://127.0.0.1:11434/api/chat`. */
  url: string | URL;
  /** Force the dialect. Otherwise it comes from the URL path, then from the Content-Type and first bytes. */
  dialect?: DialectId | undefined;
  /** A body in the dialect's own shape. `stream: true` is added when missing. */
  body?: Record<string, unknown> | undefined;
  /** A normalized request, turned into the dialect's body. Needs a known dialect. */
  request?: ChatRequest | undefined;
  headers?: Record<string, string> | undefined;
  /** Default POST. */
  method?: string | undefined;
}

export interface PreparedRequest {
  url: string;
  method: string;
  dialect: Dialect | undefined;
  headers: Record<string, string>;
  body: string | undefined;
  /**
   * The request's output cap (`request.maxTokens`, or a raw body's `max_output_tokens`), for decoders
   * that must read a cut from it (llama-server's Responses `completed` at the cap).
   */
  maxOutputTokens: number | undefined;
}

/**
 * The last URL checked and its path: a gateway (or any client in a loop) sends to the same upstream URL
 * again and again, and the parse is on the way to the request leaving.
 */
let lastUrl: { href: string; pathname: string } | undefined;

function pathnameOf(url: string): string {
  if (lastUrl?.href === url) return lastUrl.pathname;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch (cause) {
    throw new RequestFailedError('invalid-request', `not a URL: ${JSON.stringify(url)}`, { cause });
  }
  lastUrl = { href: url, pathname: parsed.pathname };
  return parsed.pathname;
}

export function prepareRequest(input: StreamRequest, lastEventId: string | undefined): PreparedRequest {
  const url = String(input.url);
  const pathname = pathnameOf(url);
  const dialect = input.dialect !== undefined ? getDialect(input.dialect) : dialectForPath(pathname);
  let body: Record<string, unknown> | undefined;
  if (input.body !== undefined) {
    body = input.body;
    // TGI's /generate_stream streams by route; everyone else needs `stream: true` (Ollama defaults to it).
    if (body.stream === undefined && dialect?.id !== 'tgi') body = { ...body, stream: true };
  } else if (input.request !== undefined) {
    if (dialect === undefined) {
      throw new RequestFailedError(
        'invalid-request',
        `cannot tell the dialect of ${url} from its path; pass \`dialect\` to map a normalized request`,
        { url },
      );
    }
    body = dialect.toRequestBody(input.request);
  }
  const headers: Record<string, string> = {
    accept: dialect?.framing === 'ndjson' ? 'application/x-ndjson' : 'text/event-stream',
  };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (lastEventId !== undefined) headers['last-event-id'] = lastEventId;
  Object.assign(headers, input.headers);
  const cap = input.body === undefined ? input.request?.maxTokens : input.body.max_output_tokens;
  return {
    url,
    method: input.method ?? (body === undefined ? 'GET' : 'POST'),
    dialect,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    maxOutputTokens: typeof cap === 'number' ? cap : undefined,
  };
}
