import { type Dialect, RequestError } from '../../dialects/dialect.ts';
import { modelNotFound } from '../../dialects/model-not-found.ts';
import { ollamaChatLoadAnswer } from '../../dialects/ollama-chat/request.ts';
import { ollamaCreatedAt } from '../../dialects/ollama-family/ollama-created-at.ts';
import { ollamaGenerateLoadAnswer } from '../../dialects/ollama-generate/request.ts';
import { getDialect } from '../../dialects/registry.ts';
import { droppedHints, untranslatableFields } from '../../dialects/request-field-table.ts';
import type { ChatRequest } from '../../events/chat-request.ts';
import type { GatewayContext, Scope } from '../gateway-context.ts';
import type { IncomingRequest } from '../http/incoming-request.ts';
import { BodyError, readJsonBody } from '../http/read-body.ts';
import type { FlushPolicy } from '../relay/coalescer.ts';
import { pickUpstreamDialect, type Upstream } from '../upstream/upstream.ts';
import { upstreamForModel } from '../upstream/upstream-for-model.ts';
import { endRequest, rejectRequest } from './end-request.ts';
import { readStreamExtensions } from './read-stream-extensions.ts';

/** A generation request's body, read and mapped, with the upstream that will answer it. */
export interface ReadRequest {
  /** The client's body as it came (less the gateway's own extensions). */
  body: Record<string, unknown>;
  /** The body as the normalized request. */
  chat: ChatRequest;
  /** `stream_options.include_prompt`: the prompt goes back as the stream's first content. */
  includePrompt: boolean;
  flush: FlushPolicy | undefined;
  upstream: Upstream;
  upstreamDialect: Dialect;
}

/**
 * Reads a generation request's body and maps it: the normalized request, the gateway's own fields taken
 * out (`stream_options` extensions, `drop_params`), the upstream and its dialect chosen, and what that
 * dialect cannot carry refused (a 400 naming the fields) or dropped when allowed (named in
 * `scope.dropped`). Returns the answer instead when there is one already: a refusal, or Ollama's
 * load-only answer.
 */
export async function readRequest(
  ctx: GatewayContext,
  dialect: Dialect,
  request: IncomingRequest,
  scope: Scope,
): Promise<ReadRequest | Response> {
  let body: Record<string, unknown>;
  let chat: ChatRequest;
  let includePrompt: boolean;
  let flush: FlushPolicy | undefined;
  let dropAllowed = ctx.options.dropParams === true;
  try {
    const extensions = readStreamExtensions(await readJsonBody(request, ctx.maxBodyBytes));
    const asked = takeDropParams(extensions.body);
    if (asked !== undefined) dropAllowed = asked;
    chat = dialect.fromRequestBody(extensions.body);
    body = extensions.body as Record<string, unknown>;
    includePrompt = extensions.includePrompt;
    flush = extensions.flush ?? ctx.options.flush;
  } catch (error) {
    if (error instanceof BodyError) return rejectRequest(ctx, dialect, scope, error.status, error.message);
    if (error instanceof RequestError) return rejectRequest(ctx, dialect, scope, error.status, error.message);
    throw error;
  }
  const upstream = upstreamForModel(ctx.options.upstreams, chat.model, dialect.id);
  if (upstream === undefined) {
    // Every upstream lists its models and none has this one: the client's server would say so.
    const missing = modelNotFound(dialect, chat.model ?? '');
    return rejectRequest(ctx, dialect, scope, missing.status, missing.message, missing.errorType);
  }
  // TGI and llama-server requests name no model: they mean the one the server runs.
  if (chat.model === undefined && upstream.models?.[0] !== undefined) chat.model = upstream.models[0];
  const upstreamDialect = getDialect(pickUpstreamDialect(upstream, dialect.id, chat));
  // Ollama's load-only request (a generate with no prompt, a chat with no messages) has no counterpart
  // elsewhere: answered as Ollama answers it, without calling an upstream of another dialect.
  if (chat.loadOnly === true && !upstreamDialect.id.startsWith('ollama') && dialect.id.startsWith('ollama')) {
    endRequest(ctx, scope, { route: dialect.id, status: 200, outcome: 'non-stream' });
    const model = chat.model ?? 'unknown';
    const answer =
      dialect.id === 'ollama-chat'
        ? ollamaChatLoadAnswer(model, ollamaCreatedAt(Date.now()))
        : ollamaGenerateLoadAnswer(model, ollamaCreatedAt(Date.now()));
    return new Response(JSON.stringify(answer), {
      status: 200,
      headers: { 'content-type': 'application/json; charset=utf-8' },
    });
  }
  // Lossless, or loud: what the upstream's dialect cannot carry is refused, or dropped when allowed
  // (then named in a response header).
  const lost = untranslatableFields(chat, dialect.id, upstreamDialect.id);
  if (lost.length > 0 && !dropAllowed) {
    return rejectRequest(
      ctx,
      dialect,
      scope,
      400,
      `${lost.join(', ')}: no counterpart in the ${upstreamDialect.id} dialect of the upstream; send "drop_params": true to drop ${lost.length === 1 ? 'it' : 'them'}`,
      'invalid_request_error',
    );
  }
  // Hints (Ollama `keep_alive`, earlier reasoning sent back) are dropped whatever `drop_params` says,
  // and named all the same.
  const dropped = droppedHints(chat, dialect.id, upstreamDialect.id).concat(lost);
  if (dropped.length > 0) scope.dropped = droppedParamsHeader(dropped);
  return { body, chat, includePrompt, flush, upstream, upstreamDialect };
}

/** Field-name characters a header value carries as they are (RFC 3986 unreserved). */
const HEADER_SAFE_NAME = /^[A-Za-z0-9._~-]*$/;
const utf8 = new TextEncoder();

/**
 * The `x-tokenwire-dropped-params` value: the dropped fields' names joined with ", ", each
 * percent-encoded as RFC 3986 encodes a URI component (every UTF-8 byte outside `A-Z a-z 0-9 - . _ ~`
 * as `%XX`), so that a name with CR/LF, a comma or non-Latin-1 characters (`ключ`) can neither break
 * the header (node:http throws on it: a 500 with the upstream call running on) nor forge one.
 * Names of the gateway's tables (`logit_bias`, `options.num_ctx`) read as they are; a client splits on
 * ", " and decodes each with `decodeURIComponent`. A lone surrogate (possible in JSON) goes as U+FFFD's bytes.
 */
export function droppedParamsHeader(names: readonly string[]): string {
  let value = '';
  for (const name of names) {
    if (value !== '') value += ', ';
    if (HEADER_SAFE_NAME.test(name)) {
      value += name;
      continue;
    }
    for (const byte of utf8.encode(name)) {
      const char = String.fromCharCode(byte);
      value +=
        byte < 0x80 && HEADER_SAFE_NAME.test(char)
          ? char
          : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
    }
  }
  return value;
}

/** Takes the request's own `drop_params` (LiteLLM's convention) out of the body: it is the gateway's. */
function takeDropParams(body: unknown): boolean | undefined {
  if (typeof body !== 'object' || body === null || !('drop_params' in body)) return undefined;
  const record = body as Record<string, unknown>;
  const value = record.drop_params;
  delete record.drop_params;
  if (typeof value !== 'boolean')
    throw new RequestError('drop_params must be true or false', { field: 'drop_params' });
  return value;
}
