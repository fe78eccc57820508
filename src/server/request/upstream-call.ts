import type { Dialect } from '../../dialects/dialect.ts';
import type { ChatRequest } from '../../events/chat-request.ts';
import type { GatewayContext, Scope } from '../gateway-context.ts';
import type { IncomingRequest } from '../http/incoming-request.ts';
import { withServerTemplate } from '../upstream/apply-template.ts';
import { forwardedHeaders, upstreamBody } from '../upstream/upstream-request.ts';
import { upstreamUrl } from '../upstream/upstream-side-call.ts';
import type { Call } from './call.ts';
import type { ReadRequest } from './read-request.ts';

/**
 * Sets up the upstream call of a read request: the body in the upstream's dialect, the forwarded
 * headers with the upstream's own credentials, the upstream span (the trace continues upstream), the
 * abort that belongs to this request alone. The call itself (`runStream`, or a whole answer's fetch) is
 * made by the stage that answers. Chat turns for llama.cpp's `/completion` are rendered by the server's
 * own chat template first when it has one: only then is the set-up asynchronous.
 */
export function upstreamCall(
  ctx: GatewayContext,
  dialect: Dialect,
  request: IncomingRequest,
  scope: Scope,
  read: ReadRequest,
  labels: Readonly<Record<string, string>>,
  streamId: string | undefined,
): Call | Promise<Call> {
  const { upstream, upstreamDialect, chat } = read;
  const upstreamAbort = new AbortController();
  if (upstreamDialect.id === 'llamacpp' && dialect.id !== 'llamacpp' && read.sentBody === undefined) {
    return withServerTemplate(upstream, chat, Object.assign({}, upstream.headers), upstreamAbort.signal).then(
      (mapped) => setUp(ctx, dialect, request, scope, read, labels, streamId, upstreamAbort, mapped),
    );
  }
  return setUp(ctx, dialect, request, scope, read, labels, streamId, upstreamAbort, chat);
}

function setUp(
  ctx: GatewayContext,
  dialect: Dialect,
  request: IncomingRequest,
  scope: Scope,
  read: ReadRequest,
  labels: Readonly<Record<string, string>>,
  streamId: string | undefined,
  upstreamAbort: AbortController,
  mapped: ChatRequest,
): Call {
  const { body, chat, upstream, upstreamDialect } = read;
  const sent = read.sentBody ?? upstreamBody(dialect, upstreamDialect, body, mapped);
  const forwarded = forwardedHeaders(request, scope.requestId);
  const url = upstreamUrl(upstream, upstreamDialect.paths[0]!);
  const trace = scope.trace;
  trace?.describe({
    route: dialect.id,
    chat,
    upstream,
    upstreamDialect: upstreamDialect.id,
    upstreamUrl: url,
    stream: streamId !== undefined,
    format: scope.format,
    streamId: scope.format === 'dialect' && dialect.framing === 'sse' ? streamId : undefined,
  });
  const target = {
    url,
    dialect: upstreamDialect.id,
    body: sent,
    // With tracing on, the upstream continues the trace from the gateway's upstream span. The
    // upstream's own credentials win over anything a client sent.
    headers: Object.assign(forwarded, trace?.startUpstream(), upstream.headers),
  };
  // The upstream call's abort is passed as the run's own consumer controller (RunHooks), not as a
  // caller's signal: it belongs to this request alone, so a timed run's timeouts abort it too.
  const runOptions = { fetch: upstream.fetch, timeouts: upstream.timeouts };
  // The end record needs the request's model, and its prompt only when content is logged: an open
  // stream keeps `base` to its end, so it does not keep the parsed messages otherwise.
  const base = {
    route: dialect.id,
    upstream,
    upstreamDialect: upstreamDialect.id,
    chat: ctx.options.logContent === true ? chat : { model: chat.model },
  };
  return {
    dialect,
    request,
    scope,
    chat,
    upstream,
    labels,
    target,
    runOptions,
    base,
    upstreamAbort,
    clientBody: body,
    routing: read.routing,
  };
}
