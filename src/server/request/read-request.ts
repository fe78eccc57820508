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
import { conversationKey } from '../pool/prefix-key.ts';
import type { Lease, Replica } from '../pool/upstream-pool.ts';
import type { FlushPolicy } from '../relay/coalescer.ts';
import { pickUpstreamDialect, type Upstream } from '../upstream/upstream.ts';
import { endRequest, rejectRequest } from './end-request.ts';
import { readStreamExtensions } from './read-stream-extensions.ts';
import type { Routing } from './routing.ts';

export type { Routing } from './routing.ts';

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
  /** The request's hold on its replica (released when the request ends, or when it goes to another). */
  lease: Lease;
  /** What the request needs to be routed again (another replica, before the first byte). */
  routing: Routing;
  /** The upstream body built already (a continuation's: continue-answer.ts), sent as it is. */
  sentBody?: Record<string, unknown> | undefined;
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
  const routing: Routing = {
    model: chat.model,
    key: ctx.pool.balance === 'prefix' ? conversationKey(chat) : undefined,
    dropAllowed,
    body,
    chat,
    includePrompt,
    flush,
    tried: new Set(),
  };
  return routeRequest(ctx, dialect, scope, routing);
}

/**
 * The replica that answers a read request, and what its dialect makes of the request: a lease from the
 * pool (the policy's choice among the replicas that serve the model and may take a request now, less
 * those it tried; or the one taken for it when an attempt failed), the model under the replica's own name, the upstream dialect, and what that
 * dialect cannot carry refused (a 400 naming the fields) or dropped when allowed (named in
 * `scope.dropped`). Returns the answer instead when there is one: the client's server's "model not
 * found" when no replica serves the model, a 503 when none can take it now, Ollama's load-only answer.
 */
export function routeRequest(
  ctx: GatewayContext,
  dialect: Dialect,
  scope: Scope,
  routing: Routing,
): ReadRequest | Response {
  const { model, dropAllowed, includePrompt, flush } = routing;
  const serving = ctx.pool.serving(model, dialect.id);
  if (serving.length === 0) {
    // Every upstream lists its models and none has this one: the client's server would say so, and in
    // front of several servers the gateway adds which models there are (no one server's list says it).
    const missing = modelNotFound(dialect, model ?? '');
    return rejectRequest(
      ctx,
      dialect,
      scope,
      missing.status,
      ctx.pool.replicas.length > 1
        ? `${missing.message}${/[.!?]$/.test(missing.message) ? '' : '.'} ${modelsHere(ctx.pool.models())}`
        : missing.message,
      missing.errorType,
    );
  }
  const lease = routing.next ?? ctx.pool.acquireAmong(serving, routing.key, routing.tried);
  routing.next = undefined;
  if (lease === undefined) return noReplicaFree(ctx, dialect, scope, model, serving);
  const upstream = lease.replica.upstream;
  let body = routing.body;
  let chat = routing.chat;
  const serverModel = model === undefined ? undefined : upstream.aliases?.[model];
  if (serverModel !== undefined) {
    // A public name (an alias): the server gets its own name. Spread, not Object.assign: client JSON.
    body = { ...body, model: serverModel };
    chat = Object.assign({}, chat, { model: serverModel });
  } else if (model === undefined && upstream.models?.[0] !== undefined) {
    // TGI and llama-server requests name no model: they mean the one the server runs.
    chat = Object.assign({}, chat, { model: upstream.models[0] });
  }
  const upstreamDialect = getDialect(pickUpstreamDialect(upstream, dialect.id, chat));
  // Ollama's load-only request (a generate with no prompt, a chat with no messages) has no counterpart
  // elsewhere: answered as Ollama answers it, without calling an upstream of another dialect.
  if (chat.loadOnly === true && !upstreamDialect.id.startsWith('ollama') && dialect.id.startsWith('ollama')) {
    lease.release('ok');
    endRequest(ctx, scope, { route: dialect.id, status: 200, outcome: 'non-stream' });
    const loaded = chat.model ?? 'unknown';
    const answer =
      dialect.id === 'ollama-chat'
        ? ollamaChatLoadAnswer(loaded, ollamaCreatedAt(Date.now()))
        : ollamaGenerateLoadAnswer(loaded, ollamaCreatedAt(Date.now()));
    return new Response(JSON.stringify(answer), {
      status: 200,
      headers: { 'content-type': 'application/json; charset=utf-8' },
    });
  }
  // Lossless, or loud: what the upstream's dialect cannot carry is refused, or dropped when allowed
  // (then named in a response header).
  const lost = untranslatableFields(chat, dialect.id, upstreamDialect.id);
  if (lost.length > 0 && !dropAllowed) {
    lease.release('ok');
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
  scope.dropped = dropped.length > 0 ? droppedParamsHeader(dropped) : undefined;
  scope.lease = lease;
  scope.upstream = upstream.name;
  return { body, chat, includePrompt, flush, upstream, upstreamDialect, lease, routing };
}

/**
 * Every replica that serves the model is cooling down after failures, loading its model, or at its
 * stream cap: a 503 in the dialect's shape naming each (by name, never address), with `Retry-After`
 * until the first cooldown ends.
 */
function noReplicaFree(
  ctx: GatewayContext,
  dialect: Dialect,
  scope: Scope,
  model: string | undefined,
  serving: readonly Replica[],
): Response {
  const now = Date.now();
  const why = serving.map((replica) => `${replica.name} (${replicaState(replica, now)})`).join(', ');
  const ends = serving.map((replica) => replica.health.coolUntil).filter((at) => at > now);
  const retryAfter = ends.length === 0 ? 1 : Math.max(1, Math.ceil((Math.min(...ends) - now) / 1000));
  const response = rejectRequest(
    ctx,
    dialect,
    scope,
    503,
    `no upstream can take a request${model === undefined ? '' : ` for ${model}`} now: ${why}`,
    'server_error',
  );
  response.headers.set('retry-after', String(retryAfter));
  return response;
}

function replicaState(replica: Replica, now: number): string {
  const state = replica.health.state(now);
  if (state === 'cooling')
    return `cooling down after ${replica.health.lastFailure ?? 'failures'}, ${Math.ceil((replica.health.coolUntil - now) / 1000)} s left`;
  if (state === 'loading') return 'loading its model';
  if (state === 'trial') return 'on trial after a cooldown';
  return `at its limit of ${replica.upstream.maxStreams} streams`;
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

/** The models a pool serves, for its "model not found": at most 20 named. */
function modelsHere(models: readonly string[]): string {
  const named = models.slice(0, 20).join(', ');
  return `The models served here: ${named}${models.length > 20 ? `, and ${models.length - 20} more` : ''}.`;
}
