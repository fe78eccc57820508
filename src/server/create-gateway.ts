import type { Dialect, DialectId } from '../dialects/dialect.ts';
import { DIALECTS, getDialect } from '../dialects/registry.ts';
import { GatewayContext, type Scope } from './gateway-context.ts';
import type { GatewayOptions } from './gateway-options.ts';
import { abandonResponse } from './http/abandon-response.ts';
import { fallbackRequest } from './http/fallback-request.ts';
import { errorMessage } from './http/gateway-errors.ts';
import {
  type IncomingRequest,
  markTakesIncomingRequest,
  type RequestTarget,
  requestTarget,
} from './http/incoming-request.ts';
import { requestIdFor } from './http/request-id.ts';
import { randomStreamId } from './http/stream-id.ts';
import type { GatewayMetrics } from './observability/gateway-metrics.ts';
import type { RequestTelemetry } from './observability/gateway-telemetry.ts';
import { poolHealth, recordPoolMetrics } from './observability/pool-metrics.ts';
import { redactUrls } from './observability/request-log.ts';
import { PoolMonitor } from './pool/pool-monitor.ts';
import { admitRequest } from './request/admit-request.ts';
import { answerWhole, answerWholeAsIs } from './request/answer-whole.ts';
import { endRequest, TRY_ANOTHER_REPLICA } from './request/end-request.ts';
import { type ReadRequest, readRequest, routeRequest } from './request/read-request.ts';
import { relayStream } from './request/relay-stream.ts';
import { upstreamCall } from './request/upstream-call.ts';
import { ollamaTags, openAiModelList } from './routes/model-lists.ts';
import { type ResponsesCursorContext, responsesCursorRoute } from './routes/responses-cursor.ts';
import { type SideRouteContext, sideRoute } from './routes/side-routes.ts';
import { tokenCountRoute } from './routes/token-count-route.ts';

export type { GatewayOptions } from './gateway-options.ts';
export type { GatewayTelemetryOptions } from './observability/gateway-telemetry.ts';
export type { EndState, LogLevel, RequestLog } from './observability/request-log.ts';

export interface Gateway {
  /** Takes a standard Request, or the lighter IncomingRequest a server adapter may build (node/serve.ts). */
  fetch(request: IncomingRequest): Promise<Response>;
  readonly metrics: GatewayMetrics;
  /** Streams being relayed now. */
  activeStreams(): number;
  /**
   * Graceful shutdown: new requests get 503; in-flight streams end with their dialect's error event
   * (not a silent close) and their upstreams are aborted.
   */
  close(): Promise<void>;
}

/** The dialects that stream unless told otherwise (`stream` absent). */
const STREAMS_BY_DEFAULT = new Set<DialectId>(['ollama-chat', 'ollama-generate', 'tgi']);

export function createGateway(options: GatewayOptions): Gateway {
  if (options.upstreams.length === 0) throw new TypeError('createGateway needs at least one upstream');
  const ctx = new GatewayContext(options);
  const { metrics, labelSets, now, store, keepaliveMs, retryMs, maxBodyBytes, telemetry, active } = ctx;

  // Each upstream's health route (and its load, for `balance: 'load'`), asked on an interval when there
  // are replicas to choose among.
  const healthIntervalMs = options.healthIntervalMs ?? (options.upstreams.length > 1 ? 5000 : 0);
  const monitor =
    healthIntervalMs > 0 ? new PoolMonitor(ctx.pool, { scrapeLoad: ctx.pool.balance === 'load' }) : undefined;
  monitor?.start(healthIntervalMs);

  let ticker: ReturnType<typeof setInterval> | undefined;
  if (keepaliveMs > 0) {
    ticker = setInterval(
      () => {
        const at = now();
        for (const stream of active) {
          const relay = stream.relay;
          if (relay !== undefined && at - relay.lastWriteAt >= keepaliveMs) relay.keepalive();
        }
      },
      Math.min(1000, Math.max(10, keepaliveMs / 4)),
    );
    (ticker as { unref?: () => void }).unref?.();
  }

  const routes = new Map<string, Dialect>();
  for (const dialect of Object.values(DIALECTS)) for (const path of dialect.paths) routes.set(path, dialect);

  /**
   * Every dialect route: the request's `Scope` (its id, start, span: the state every stage reads), then
   * its stages — admitted (admit-request.ts), read and mapped (read-request.ts), its upstream call set
   * up (upstream-call.ts), then answered: streamed (relay-stream.ts) or whole (answer-whole.ts). Each
   * answer ends the request once (end-request.ts: metrics, log line, span).
   */
  async function handleRoute(
    dialect: Dialect,
    request: IncomingRequest,
    target: RequestTarget,
    tgiRoot: boolean,
  ) {
    const requestId = requestIdFor(request.headers);
    let trace: RequestTelemetry | undefined;
    if (telemetry !== undefined) {
      await telemetry.ready();
      trace = telemetry.start(request, target.path, requestId);
    }
    const scope: Scope = { requestId, startedAt: now(), format: 'dialect', trace, dropped: undefined };
    let response: Response;
    try {
      response = await handleGeneration(dialect, request, target, scope, tgiRoot);
    } catch (error) {
      endRequest(ctx, scope, { route: dialect.id, status: 500, outcome: 'error', error });
      response = internalError(error);
    }
    try {
      response.headers.set('x-request-id', requestId);
      // Which replica answered, and which failed before it (names, never addresses).
      if (scope.upstream !== undefined) response.headers.set('x-tokenwire-upstream', scope.upstream);
      if (scope.attempts !== undefined)
        response.headers.set('x-tokenwire-attempts', [...scope.attempts, scope.upstream ?? ''].join(', '));
      if (scope.dropped !== undefined) response.headers.set('x-tokenwire-dropped-params', scope.dropped);
    } catch (error) {
      // A response that cannot go out as it is: given up (its stream ends, its upstream is aborted,
      // a guard's slot freed), and a 500 in its place. The values above are safe (request-id.ts,
      // read-request.ts `droppedParamsHeader`): this is the net under them.
      abandonResponse(response, error);
      return internalError(error);
    }
    return response;
  }

  /** A generation route's stages, in order; the answer's stage chosen last. */
  async function handleGeneration(
    dialect: Dialect,
    request: IncomingRequest,
    target: RequestTarget,
    scope: Scope,
    tgiRoot: boolean,
  ): Promise<Response> {
    const refused = admitRequest(ctx, dialect, request, target, scope);
    if (refused !== undefined) return refused;
    let read = await readRequest(ctx, dialect, request, scope);
    if (read instanceof Response) return read;
    // TGI's `POST /` streams only with `stream: true`; its /generate_stream always streams. Plain text
    // always streams: that is what it is for.
    const wantsStream =
      scope.format === 'text' || (read.chat.stream ?? (tgiRoot ? false : STREAMS_BY_DEFAULT.has(dialect.id)));
    for (;;) {
      const answer = await answerGeneration(dialect, request, scope, tgiRoot, read, wantsStream);
      if (answer !== TRY_ANOTHER_REPLICA) return answer;
      // The attempt failed before the first byte and another replica takes the request (end-request.ts).
      const next = routeRequest(ctx, dialect, scope, read.routing);
      if (next instanceof Response) return next;
      read = next;
    }
  }

  /** One attempt: the upstream call set up on the read request's replica, and answered. */
  async function answerGeneration(
    dialect: Dialect,
    request: IncomingRequest,
    scope: Scope,
    tgiRoot: boolean,
    read: ReadRequest,
    wantsStream: boolean,
  ): Promise<Response> {
    const labels = labelSets.of(dialect.id, read.upstream.name);
    metrics.requests.inc(labels);
    const streamId = wantsStream ? randomStreamId() : undefined;
    const setUp = upstreamCall(ctx, dialect, request, scope, read, labels, streamId);
    // Set up at once unless the server's chat template had to be read first (upstream-call.ts).
    // Shape kept for speed: bench/README.md "Why the code is shaped as it is" (the upstream call's set-up).
    const call = setUp instanceof Promise ? await setUp : setUp;
    try {
      // A non-stream request goes upstream as one where the upstream speaks the client's dialect (its
      // answer comes back as it is); otherwise the upstream streams and the gateway folds the answer.
      if (streamId === undefined) {
        if (dialect.id === read.upstreamDialect.id && dialect.id !== 'tgi' && scope.format === 'dialect')
          return await answerWholeAsIs(ctx, call);
        return await answerWhole(ctx, call, tgiRoot);
      }
      return await relayStream(ctx, call, streamId, read.includePrompt, read.flush);
    } catch (error) {
      // Any failure once the upstream call is set up aborts it: no generation runs on for a request
      // answered with a 500.
      call.upstreamAbort.abort();
      throw error;
    }
  }

  /** The models the pool's replicas list now, and their aliases, each once. */
  function listModels(): string[] {
    return ctx.pool.models();
  }

  /** The servers' informational routes (side-routes.ts). */
  const sideRoutes: SideRouteContext = {
    upstreams: options.upstreams,
    pick: (model) => ctx.pool.pickFor(model),
    models: listModels,
    closing: () => ctx.closing,
    maxBodyBytes,
    generate: (request) => handleRoute(getDialect('tgi'), request, requestTarget(request), true),
  };

  /** `GET /v1/responses/{id}` on the resume store (responses-cursor.ts). */
  const responsesCursor: ResponsesCursorContext = {
    store,
    retryMs,
    keepaliveMs,
    counted: (result) => metrics.resumes.inc({ result }),
    ended: (requestId, streamId) => {
      const scope: Scope = {
        requestId,
        startedAt: now(),
        format: 'dialect',
        trace: undefined,
        dropped: undefined,
      };
      endRequest(ctx, scope, { route: 'openai-responses', status: 200, outcome: 'resumed', streamId });
    },
  };

  async function handle(request: IncomingRequest): Promise<Response> {
    const target = requestTarget(request);
    const path = target.path;
    const dialect = routes.get(path);
    if (dialect !== undefined) return handleRoute(dialect, request, target, false);
    // TGI serves generation on `POST /` too (what @huggingface/inference calls with an endpoint URL).
    if (path === '/' && request.method === 'POST')
      return handleRoute(getDialect('tgi'), request, target, true);
    if (request.method === 'GET' || request.method === 'HEAD') {
      switch (path) {
        case '/healthz':
          return Response.json(
            {
              status: ctx.closing ? 'shutting-down' : 'ok',
              activeStreams: active.size,
              upstreams: poolHealth(ctx.pool, Date.now()),
            },
            { status: ctx.closing ? 503 : 200 },
          );
        case '/metrics':
          recordPoolMetrics(metrics, ctx.pool, Date.now());
          return new Response(metrics.render(), {
            headers: { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' },
          });
        case '/v1/models':
          return Response.json(openAiModelList(listModels()));
        case '/api/tags':
          return Response.json(ollamaTags(listModels()));
      }
    }
    // The Messages and Responses token-counting routes (token-count-route.ts), and the
    // retrieval of a Responses stream by its id (responses-cursor.ts).
    const counted = tokenCountRoute(request, target, sideRoutes);
    if (counted !== undefined) return counted;
    const retrieved = responsesCursorRoute(request, target, responsesCursor);
    if (retrieved !== undefined) return retrieved;
    const side = sideRoute(request, target, sideRoutes);
    if (side !== undefined) return side;
    if (options.fallback !== undefined) {
      // Its body read under the generation routes' limits first (the raw simulator's `/sim/` routes).
      const passed = await fallbackRequest(request, path, maxBodyBytes);
      if (passed instanceof Response) {
        metrics.rejected.inc({ route: 'other', status: String(passed.status) });
        return passed;
      }
      const fallback = await options.fallback(passed);
      if (fallback !== undefined) return fallback;
    }
    return Response.json(
      { error: { message: `no route for ${request.method} ${path}`, type: 'not_found_error' } },
      { status: 404 },
    );
  }

  return {
    metrics,
    activeStreams: () => active.size,
    fetch: markTakesIncomingRequest(async (request: IncomingRequest) => {
      try {
        return await handle(request);
      } catch (error) {
        // A URL the parser refuses (an adapter that passed one on: serve() answers these itself).
        if ((error as { code?: unknown } | null)?.code === 'ERR_INVALID_URL')
          return Response.json(
            { error: { message: 'invalid request URL (its Host or target)', type: 'invalid_request_error' } },
            { status: 400 },
          );
        return Response.json(
          { error: { message: `internal error: ${errorMessage(error)}`, type: 'server_error' } },
          { status: 500 },
        );
      }
    }),
    close: async () => {
      ctx.closing = true;
      monitor?.stop();
      if (ticker !== undefined) clearInterval(ticker);
      for (const stream of active) {
        stream.coalescer?.flush();
        stream.relay?.fail({
          message: 'the gateway is shutting down',
          status: 503,
          errorType: 'unavailable_error',
        });
        stream.upstreamAbort.abort();
      }
      const deadline = Date.now() + 5000;
      while (active.size > 0 && Date.now() < deadline) await delay(10);
      await store.shutdown();
    },
  };
}

/** The gateway's own 500 (URLs in the message redacted). */
function internalError(error: unknown): Response {
  return Response.json(
    { error: { message: `internal error: ${redactUrls(errorMessage(error))}`, type: 'server_error' } },
    { status: 500 },
  );
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    (timer as { unref?: () => void }).unref?.();
  });
}
