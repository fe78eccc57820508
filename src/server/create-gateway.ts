import type { StreamRequest } from '../client/build-request.ts';
import { HttpError } from '../client/client-errors.ts';
import { runStream, type StreamOptions } from '../client/run-stream.ts';
import type { MidStreamError } from '../dialects/dialect.ts';
import { type Dialect, type DialectId, RequestError } from '../dialects/dialect.ts';
import { nonStreamBody } from '../dialects/non-stream-body.ts';
import { ollamaChatLoadAnswer } from '../dialects/ollama-chat/request.ts';
import { ollamaCreatedAt } from '../dialects/ollama-family/ollama-created-at.ts';
import { ollamaGenerateLoadAnswer } from '../dialects/ollama-generate/request.ts';
import { DIALECTS, getDialect } from '../dialects/registry.ts';
import { untranslatableFields } from '../dialects/request-field-table.ts';
import type { ChatRequest } from '../events/chat-request.ts';
import type { Result } from '../events/result.ts';
import type { StreamEvent } from '../events/stream-event.ts';
import type { Frame } from '../wire/frame.ts';
import { withServerTemplate } from './apply-template.ts';
import { clientBucket, clientIdentityOf } from './client-identity.ts';
import { abortSignalOf } from './client-signal.ts';
import { type FlushPolicy, isCoalescing, TextCoalescer } from './coalescer.ts';
import {
  clientStatusFor,
  describeUpstreamFailure,
  errorMessage,
  errorResponse,
  upstreamFailureResponse,
  withoutAddresses,
} from './gateway-errors.ts';
import { GatewayMetrics, type StreamOutcome } from './gateway-metrics.ts';
import {
  GatewayTelemetry,
  type GatewayTelemetryOptions,
  type RequestTelemetry,
} from './gateway-telemetry.ts';
import {
  type IncomingRequest,
  markTakesIncomingRequest,
  type RequestTarget,
  requestTarget,
  toRequest,
} from './incoming-request.ts';
import { MemoryResumeStore } from './memory-resume-store.ts';
import { ollamaTags, openAiModelList } from './model-lists.ts';
import { type OutputFormat, outputFormat } from './output-format.ts';
import { PLAIN_TEXT_HEADERS, PlainTextRelay } from './plain-text-relay.ts';
import { BodyError, readJsonBody } from './read-body.ts';
import { readStreamExtensions } from './read-stream-extensions.ts';
import { endFigures, type RequestEnd, requestLogRecord } from './request-end.ts';
import { requestIdFor } from './request-id.ts';
import { type EndState, type LogLevel, type RequestLog, redactUrls } from './request-log.ts';
import { type DirectBody, directOnlyResponse, takesDirectResponse } from './response-output.ts';
import { type ResponsesCursorContext, responseIdFor, responsesCursorRoute } from './responses-cursor.ts';
import { NoSuchEventError, parseEventId, ResumeGapError, type ResumeStore } from './resume-store.ts';
import { resumedBody } from './resumed-body.ts';
import { RouteLabelSets } from './route-label-sets.ts';
import { type SideRouteContext, sideRoute } from './side-routes.ts';
import { randomStreamId } from './stream-id.ts';
import { StreamRelay } from './stream-relay.ts';
import { tokenCountRoute } from './token-count-route.ts';
import { pickUpstreamDialect, type Upstream } from './upstream.ts';
import { forwardedHeaders, pickUpstream, upstreamBody } from './upstream-request.ts';
import { VerbatimFrames } from './verbatim-frames.ts';

export type { GatewayTelemetryOptions } from './gateway-telemetry.ts';
export type { EndState, LogLevel, RequestLog } from './request-log.ts';

export interface GatewayOptions {
  /** The servers behind the gateway; requests go to the first that serves the model (else the first). */
  upstreams: readonly Upstream[];
  /** Keepalive comment after this much silence on an SSE stream, before the first token too. Default 15000; 0 turns them off. */
  keepaliveMs?: number | undefined;
  /** `retry:` advice written at the start of every SSE stream. Default 3000. */
  retryMs?: number | undefined;
  /** Where written events are kept for `Last-Event-ID` resume. Default: bounded in-memory store. */
  resumeStore?: ResumeStore | undefined;
  /**
   * Keep generating after the client disconnects, so a reconnect can resume. Off by default: a
   * disconnect aborts the upstream at once (no GPU time spent on an answer nobody reads). On, the
   * upstream runs until it finishes or `detachedTimeoutMs` passes (default 60000), costing that time.
   */
  keepStreamOnDisconnect?: boolean | undefined;
  detachedTimeoutMs?: number | undefined;
  /** Default flush policy: per event. Coalescing only when asked. */
  flush?: FlushPolicy | undefined;
  /**
   * Drop request fields the upstream's dialect cannot carry instead of refusing the request (LiteLLM's
   * `drop_params`); a request's own `"drop_params"` wins. The response names them in
   * `x-tokenwire-dropped-params`. Off by default: such a request is a 400 naming the fields.
   */
  dropParams?: boolean | undefined;
  /**
   * How a stream is relayed when the client and the upstream speak the same dialect: `verbatim` writes
   * each upstream payload as it came — decoded all the same, for completeness, errors, usage and
   * metrics — so every field the server sent arrives; `re-encode` writes the normalized events in the
   * dialect's default flavor. By default the six older dialects are verbatim, and Messages and Responses
   * are re-encoded: their servers' own shapes differ from the providers' (llama-server's Responses
   * stream breaks the `openai` SDK), and the default flavor is the one the SDKs read. Plain text,
   * coalescing, an echoed prompt and a configured flavor always re-encode.
   */
  sameDialectRelay?: 'verbatim' | 're-encode' | undefined;
  /** Largest request body. Default 4 MiB. */
  maxBodyBytes?: number | undefined;
  /** How long to wait for the upstream's headers so its HTTP errors can be passed on as such. Default 1000. */
  upstreamHeadersWaitMs?: number | undefined;
  /** Encoder flavor per dialect for what the gateway writes (default: each dialect's first). */
  flavors?: Partial<Record<DialectId, string>> | undefined;
  /** Serves anything that is not an API route (the playground). */
  fallback?: ((request: Request) => Promise<Response | undefined> | Response | undefined) | undefined;
  /** One record per request, at its end (a stream's, when the stream ends). No credentials, ever. */
  onLog?: ((record: RequestLog) => void) | undefined;
  /** The least severe record passed to `onLog`: `error`, `warn`, `info` (default) or `debug`. */
  logLevel?: LogLevel | undefined;
  /** Put the prompt and the answer in log records. Off by default: they may be personal data. */
  logContent?: boolean | undefined;
  /**
   * OpenTelemetry spans and GenAI metrics. Off unless given; `@opentelemetry/api` (an optional peer
   * dependency) is loaded only then.
   */
  telemetry?: GatewayTelemetryOptions | undefined;
  /** Monotonic clock in ms (metrics). Default performance.now. */
  now?: (() => number) | undefined;
}

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

/** Same-dialect streams re-encoded unless `sameDialectRelay: 'verbatim'` (see GatewayOptions). */
const RE_ENCODED_BY_DEFAULT = new Set<DialectId>(['openai-responses', 'anthropic-messages']);

/** The dialects that stream unless told otherwise (`stream` absent). */
const STREAMS_BY_DEFAULT = new Set<DialectId>(['ollama-chat', 'ollama-generate', 'tgi']);

/** What the gateway writes a stream through: its dialect's SSE/NDJSON, or plain text. */
interface Relay {
  readonly body: ReadableStream<Uint8Array>;
  readonly direct: DirectBody;
  readonly sse: boolean;
  readonly lastWriteAt: number;
  event(event: StreamEvent): void;
  flushEncoder(): void;
  backpressure(): Promise<void> | undefined;
  keepalive(): void;
  end(result?: Result): void;
  fail(error: MidStreamError, result?: Result): void;
  abort(): void;
  clientLeft(): void;
}

interface ActiveStream {
  /** Undefined until the upstream answered. */
  relay: Relay | undefined;
  /** A same-dialect stream's payloads, written as the upstream wrote them; undefined when re-encoded. */
  verbatim: { frames: VerbatimFrames; relay: StreamRelay } | undefined;
  /** Text held by a coalescing flush policy, written before the stream's ending. */
  coalescer: TextCoalescer | undefined;
  upstreamAbort: AbortController;
}

/** A generation request, parsed and routed: what answering it reads. */
interface Call {
  dialect: Dialect;
  request: IncomingRequest;
  scope: Scope;
  chat: ChatRequest;
  upstream: Upstream;
  labels: Readonly<Record<string, string>>;
  /** The upstream request, as runStream takes it. */
  target: StreamRequest;
  runOptions: StreamOptions;
  /** What every log line of this request carries. */
  base: Pick<RequestEnd, 'route' | 'upstream' | 'upstreamDialect' | 'chat'>;
  upstreamAbort: AbortController;
  /** The client's body as it came (less the gateway's own extensions): what a same-dialect upstream gets. */
  clientBody: Record<string, unknown>;
}

/** One request, from its arrival to its log line. */
interface Scope {
  requestId: string;
  startedAt: number;
  format: OutputFormat;
  trace: RequestTelemetry | undefined;
  /** Request fields dropped because the upstream's dialect has no counterpart (`drop_params`). */
  dropped?: string | undefined;
}

export function createGateway(options: GatewayOptions): Gateway {
  if (options.upstreams.length === 0) throw new TypeError('createGateway needs at least one upstream');
  const metrics = new GatewayMetrics();
  const labelSets = new RouteLabelSets();
  const now = options.now ?? (() => performance.now());
  const store = options.resumeStore ?? new MemoryResumeStore();
  const keepaliveMs = options.keepaliveMs ?? 15000;
  const retryMs = options.retryMs ?? 3000;
  const maxBodyBytes = options.maxBodyBytes ?? 4 * 1024 * 1024;
  const headersWaitMs = options.upstreamHeadersWaitMs ?? 1000;
  const logLevel = options.logLevel ?? 'info';
  const telemetry = options.telemetry === undefined ? undefined : new GatewayTelemetry(options.telemetry);
  const active = new Set<ActiveStream>();
  let closing = false;

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

  /** The request's log line (when its level is wanted) and the end of its span. */
  function done(scope: Scope, end: RequestEnd): void {
    const figures = endFigures(end, scope.startedAt, now());
    scope.trace?.end({
      status: end.status,
      endState: end.endState,
      result: end.result,
      error: end.error,
      durationMs: figures.durationMs,
      ttftMs: end.ttftMs,
      tpotMs: figures.tpotMs,
      outputTokens: figures.outputTokens,
      outputTokensEstimated: figures.estimated,
    });
    const onLog = options.onLog;
    if (onLog === undefined) return;
    const record = requestLogRecord(end, figures, {
      requestId: scope.requestId,
      traceId: scope.trace?.traceId,
      format: scope.format,
      logLevel,
      content: options.logContent === true,
    });
    if (record !== undefined) onLog(record);
  }

  function reject(
    dialect: Dialect,
    scope: Scope,
    status: number,
    message: string,
    errorType?: string,
  ): Response {
    metrics.rejected.inc({ route: dialect.id, status: String(status) });
    done(scope, { route: dialect.id, status, outcome: 'rejected', error: message });
    return errorResponse(dialect, scope.format, status, message, errorType);
  }

  /** Every dialect route: the request id, the span, then the request itself. */
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
      done(scope, { route: dialect.id, status: 500, outcome: 'error', error });
      response = Response.json(
        { error: { message: `internal error: ${redactUrls(errorMessage(error))}`, type: 'server_error' } },
        { status: 500 },
      );
    }
    response.headers.set('x-request-id', requestId);
    if (scope.dropped !== undefined) response.headers.set('x-tokenwire-dropped-params', scope.dropped);
    return response;
  }

  /** A generation route: checks, the body read and mapped, the upstream chosen; then the answer. */
  async function handleGeneration(
    dialect: Dialect,
    request: IncomingRequest,
    routeTarget: RequestTarget,
    scope: Scope,
    tgiRoot: boolean,
  ): Promise<Response> {
    try {
      scope.format = outputFormat(routeTarget.query('format'), request.headers.get('accept'));
    } catch (error) {
      if (error instanceof RequestError) return reject(dialect, scope, error.status, error.message);
      throw error;
    }
    if (closing) return reject(dialect, scope, 503, 'the gateway is shutting down', 'unavailable_error');
    const lastEventId = request.headers.get('last-event-id');
    if (lastEventId !== null && lastEventId !== '') return resume(dialect, lastEventId, request, scope);
    if (request.method !== 'POST') return reject(dialect, scope, 405, `use POST for ${dialect.paths[0]}`);

    let body: Record<string, unknown>;
    let chat: ChatRequest;
    let includePrompt: boolean;
    let flush: FlushPolicy | undefined;
    let dropAllowed = options.dropParams === true;
    try {
      const extensions = readStreamExtensions(await readJsonBody(request, maxBodyBytes));
      const asked = takeDropParams(extensions.body);
      if (asked !== undefined) dropAllowed = asked;
      chat = dialect.fromRequestBody(extensions.body);
      body = extensions.body as Record<string, unknown>;
      includePrompt = extensions.includePrompt;
      flush = extensions.flush ?? options.flush;
    } catch (error) {
      if (error instanceof BodyError) return reject(dialect, scope, error.status, error.message);
      if (error instanceof RequestError) return reject(dialect, scope, error.status, error.message);
      throw error;
    }
    const upstream = pickUpstream(options.upstreams, chat.model);
    // TGI and llama-server requests name no model: they mean the one the server runs.
    if (chat.model === undefined && upstream.models?.[0] !== undefined) chat.model = upstream.models[0];
    const upstreamDialect = getDialect(pickUpstreamDialect(upstream, dialect.id, chat));
    // Ollama's load-only request (a generate with no prompt, a chat with no messages) has no counterpart
    // elsewhere: answered as Ollama answers it, without calling an upstream of another dialect.
    if (
      chat.loadOnly === true &&
      !upstreamDialect.id.startsWith('ollama') &&
      dialect.id.startsWith('ollama')
    ) {
      done(scope, { route: dialect.id, status: 200, outcome: 'non-stream' });
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
      return reject(
        dialect,
        scope,
        400,
        `${lost.join(', ')}: no counterpart in the ${upstreamDialect.id} dialect of the upstream; send "drop_params": true to drop ${lost.length === 1 ? 'it' : 'them'}`,
        'invalid_request_error',
      );
    }
    if (lost.length > 0) scope.dropped = lost.join(', ');
    const labels = labelSets.of(dialect.id, upstream.name);
    metrics.requests.inc(labels);
    // TGI's `POST /` streams only with `stream: true`; its /generate_stream always streams. Plain text
    // always streams: that is what it is for.
    const wantsStream =
      scope.format === 'text' || (chat.stream ?? (tgiRoot ? false : STREAMS_BY_DEFAULT.has(dialect.id)));
    const upstreamAbort = new AbortController();
    // Chat turns for llama.cpp's /completion: rendered by the server's own chat template when it has one.
    const mapped =
      upstreamDialect.id === 'llamacpp' && dialect.id !== 'llamacpp'
        ? await withServerTemplate(upstream, chat, Object.assign({}, upstream.headers), upstreamAbort.signal)
        : chat;
    const sent = upstreamBody(dialect, upstreamDialect, body, mapped);
    const forwarded = forwardedHeaders(request, scope.requestId);
    const upstreamUrl = `${upstream.url.replace(/\/+$/, '')}${upstreamDialect.paths[0]}`;
    const streamId = wantsStream ? randomStreamId() : undefined;
    const trace = scope.trace;
    trace?.describe({
      route: dialect.id,
      chat,
      upstream,
      upstreamDialect: upstreamDialect.id,
      upstreamUrl,
      stream: wantsStream,
      format: scope.format,
      streamId: scope.format === 'dialect' && dialect.framing === 'sse' ? streamId : undefined,
    });
    const target = {
      url: upstreamUrl,
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
      chat: options.logContent === true ? chat : { model: chat.model },
    };

    const call: Call = {
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
    };
    // A non-stream request goes upstream as one where the upstream speaks the client's dialect (its
    // answer comes back as it is); otherwise the upstream streams and the gateway folds the answer.
    if (
      !wantsStream &&
      dialect.id === upstreamDialect.id &&
      dialect.id !== 'tgi' &&
      scope.format === 'dialect'
    )
      return answerWholeAsIs(call);
    if (!wantsStream) return answerWhole(call, tgiRoot);
    return relayStream(call, streamId!, includePrompt, flush);
  }

  /** A client that asked for no stream: the upstream still streams, and the whole answer goes back. */
  async function answerWhole(call: Call, tgiRoot: boolean): Promise<Response> {
    const { dialect, request, scope, chat, labels, target, runOptions, base, upstreamAbort } = call;
    const trace = scope.trace;
    const onClientGone = () => upstreamAbort.abort();
    request.signal.addEventListener('abort', onClientGone, { once: true });
    try {
      const result = await runStream(target, runOptions, { consumer: upstreamAbort });
      trace?.upstreamEnded(result, undefined, result.metrics.totalMs ?? now() - scope.startedAt);
      countTokens(labels, result);
      const ttftMs = result.metrics.ttftMs;
      if (!result.complete) {
        const outcome: StreamOutcome = result.incomplete === 'server-error' ? 'error' : 'incomplete';
        metrics.streams.inc(labelSets.with(labels, 'outcome', outcome));
        const message = `the upstream stream was incomplete: ${withoutAddresses(result.error?.message ?? result.incomplete ?? '')} (request id ${scope.requestId})`;
        // The status the upstream's error event carried (llama-server's context-full 400/500), else 502.
        const status = clientStatusFor(result.error?.status ?? 502);
        done(scope, Object.assign({}, base, { status, outcome, result, endState: outcome, ttftMs }));
        return errorResponse(dialect, scope.format, status, message, 'upstream_error');
      }
      metrics.streams.inc(labelSets.with(labels, 'outcome', 'completed'));
      if (result.truncated) metrics.truncated.inc(labels);
      done(scope, {
        ...base,
        status: 200,
        outcome: 'non-stream',
        result,
        endState: result.truncated ? 'truncated' : 'completed',
        ttftMs,
      });
      const answer = nonStreamBody(dialect.id, result, chat.model ?? result.model ?? 'unknown', Date.now());
      // TGI's `POST /` answers with a list (the HF Inference API shape).
      return Response.json(tgiRoot ? [answer] : answer);
    } catch (error) {
      return upstreamFailure(call, error);
    } finally {
      request.signal.removeEventListener('abort', onClientGone);
    }
  }

  /**
   * A non-stream request to an upstream of the client's own dialect: sent as the client sent it, and the
   * upstream's answer — every choice, logprob and field — returned as it is, with its status (an upstream
   * refusing the gateway's own credentials is the gateway's 502, as for streams).
   */
  async function answerWholeAsIs(call: Call): Promise<Response> {
    const { request, scope, labels, target, upstream, base, upstreamAbort } = call;
    const onClientGone = () => upstreamAbort.abort();
    request.signal.addEventListener('abort', onClientGone, { once: true });
    const limitMs = upstream.timeouts?.totalMs ?? upstream.timeouts?.idleMs;
    const timer = limitMs === undefined ? undefined : setTimeout(() => upstreamAbort.abort(), limitMs);
    try {
      const upstreamRequest = new Request(target.url, {
        method: 'POST',
        headers: Object.assign({ 'content-type': 'application/json' }, target.headers),
        // `stream: false` said outright: where a dialect's default is to stream (Ollama), the client said it.
        body: JSON.stringify(Object.assign({}, call.clientBody, { stream: false })),
        signal: upstreamAbort.signal,
      });
      const answer = await (upstream.fetch ?? fetch)(upstreamRequest);
      const text = await answer.text();
      if (!answer.ok && clientStatusFor(answer.status) !== answer.status) {
        const headers: Record<string, string> = {};
        answer.headers.forEach((value, key) => {
          headers[key] = value;
        });
        const refused = new HttpError({
          method: 'POST',
          url: String(target.url),
          status: answer.status,
          statusText: answer.statusText,
          body: text,
          headers,
        });
        return upstreamFailure(call, refused);
      }
      const usage = answer.ok ? wholeAnswerUsage(text) : undefined;
      if (usage?.inputTokens !== undefined) metrics.inputTokens.inc(labels, usage.inputTokens);
      if (usage?.outputTokens !== undefined && usage.outputTokens > 0) {
        metrics.outputTokens.inc(labelSets.with(labels, 'source', 'server'), usage.outputTokens);
      }
      const outcome = answer.ok ? 'completed' : 'error';
      metrics.streams.inc(labelSets.with(labels, 'outcome', outcome));
      done(
        scope,
        Object.assign({}, base, {
          status: answer.status,
          outcome: answer.ok ? ('non-stream' as const) : ('error' as const),
          endState: answer.ok ? ('completed' as const) : ('error' as const),
        }),
      );
      const contentType = answer.headers.get('content-type') ?? 'application/json';
      return new Response(text, { status: answer.status, headers: { 'content-type': contentType } });
    } catch (error) {
      return upstreamFailure(call, error);
    } finally {
      if (timer !== undefined) clearTimeout(timer);
      request.signal.removeEventListener('abort', onClientGone);
    }
  }

  /** A streamed answer: relayed event by event in the client's dialect, from the upstream's first bytes. */
  async function relayStream(
    call: Call,
    streamId: string,
    includePrompt: boolean,
    flush: FlushPolicy | undefined,
  ): Promise<Response> {
    const { dialect, request, scope, chat, labels, target, runOptions, base, upstreamAbort } = call;
    const trace = scope.trace;
    const startedAt = scope.startedAt;
    const flavor = options.flavors?.[dialect.id];
    // What the relay needs of the request, taken now: the closures below live as long as the stream, and
    // the parsed request (its messages: the whole prompt) is not kept with them.
    const model = chat.model;
    const includeUsage = chat.includeUsage === true;
    // What an answer may echo of the request's sampling (llama.cpp `generation_settings`).
    const sampling = { seed: chat.seed, temperature: chat.temperature, maxTokens: chat.maxTokens };
    const echoed = includePrompt ? (chat.prompt ?? chat.messages?.at(-1)?.content ?? '') : '';
    let firstContentAt: number | undefined;
    let upstreamStopped = false;
    const sse = scope.format !== 'text' && dialect.framing === 'sse';
    // The relay is built once the upstream has answered (see below), before any of its events: until
    // then no relay's set-up stands between the client's request and the upstream's. Undefined before.
    const entry: ActiveStream = {
      relay: undefined,
      verbatim: undefined,
      coalescer: undefined,
      upstreamAbort,
    };
    // A same-dialect stream goes to the client as the upstream wrote it (every choice, logprob and extra
    // field), unless the gateway must rewrite it: plain text, coalescing, an echoed prompt, or a flavor
    // the operator chose for this dialect.
    const verbatim =
      scope.format === 'dialect' &&
      target.dialect === dialect.id &&
      flavor === undefined &&
      !isCoalescing(flush) &&
      echoed === '' &&
      (options.sameDialectRelay === 'verbatim' ||
        (options.sameDialectRelay === undefined && !RE_ENCODED_BY_DEFAULT.has(dialect.id)));
    // The gateway asks an OpenAI upstream for usage itself; a client that did not ask does not get it.
    const dropUsageOnly =
      !includeUsage && (dialect.id === 'openai-chat' || dialect.id === 'openai-completions');
    let detachTimer: ReturnType<typeof setTimeout> | undefined;
    let left = false;
    const clientGone = () => {
      if (left) return;
      left = true;
      entry.relay?.clientLeft();
      trace?.clientLeft();
      if (options.keepStreamOnDisconnect === true) {
        detachTimer ??= setTimeout(() => upstreamAbort.abort(), options.detachedTimeoutMs ?? 60000);
        return;
      }
      upstreamStopped = true;
      upstreamAbort.abort();
    };
    // Only the signal is kept: the Request (headers, URL, spent body) can go once the response is out.
    const clientSignal = request.signal;
    clientSignal.addEventListener('abort', clientGone, { once: true });
    const responseHeaders = (): Record<string, string> =>
      scope.format === 'text'
        ? Object.assign({}, PLAIN_TEXT_HEADERS, { 'cache-control': 'no-cache', 'x-accel-buffering': 'no' })
        : Object.assign(dialect.responseHeaders(flavor), {
            'cache-control': 'no-cache',
            'x-accel-buffering': 'no',
            'x-tokenwire-stream-id': streamId,
          });
    // Who opened the stream (issue 21): only the same key resumes it; its bucket bounds its share.
    const identity = clientIdentityOf(request);
    const owner = identity.owner;
    // Issue 20: a Responses stream's id names its stream (responses-cursor.ts); `store: false` is kept
    // for resume only (NO_STORE_RETAIN_MS).
    const responseId = dialect.id === 'openai-responses' ? responseIdFor(streamId) : undefined;
    const noStore = chat.store === false ? true : undefined;
    const client = clientBucket(identity);
    const openInStore = (headers: Record<string, string>) =>
      store.open(streamId, {
        dialect: dialect.id,
        flavor,
        headers,
        model,
        createdAt: Date.now(),
        owner,
        client,
        noStore,
      });
    // The stream is registered before its first frame. The in-memory store registers it as it is
    // called, so it is opened once the upstream has answered, with the relay: everything done before the
    // upstream request's socket write delays the TTFT at one stream. Another store
    // may answer later than the upstream, so it is opened, and awaited, first.
    const openLate = sse && store instanceof MemoryResumeStore;
    let headers: Record<string, string> | undefined;
    if (sse && !openLate) {
      headers = responseHeaders();
      await openInStore(headers);
    }
    const streamRelay = (): StreamRelay => {
      const relay = new StreamRelay({
        streamId,
        dialect,
        encoder: dialect.createEncoder({ flavor, includeUsage, model, id: responseId, sampling }),
        store,
        retryMs,
        now,
        onCancel: () => clientGone(),
      });
      if (verbatim) {
        entry.verbatim = {
          frames: new VerbatimFrames((data, kind) => relay.payload(data, kind), dropUsageOnly),
          relay,
        };
      }
      return relay;
    };
    const startRelay = (): Relay => {
      const started: Relay =
        scope.format === 'text' ? new PlainTextRelay({ now, onCancel: () => clientGone() }) : streamRelay();
      // The gateway coalesces itself (not the relay), so the echoed prompt is never merged into the answer.
      entry.coalescer = isCoalescing(flush)
        ? new TextCoalescer(flush, (event) => started.event(event))
        : undefined;
      entry.relay = started;
      if (left) started.clientLeft();
      // `stream_options.include_prompt`: the prompt as the stream's first content, in the route's own
      // text shape (vLLM's `echo`: the last message's content, right after the role chunk). Written past
      // the event accounting, so it counts in no TTFT, token count or log line.
      if (echoed !== '') started.event({ type: 'text', text: echoed });
      return started;
    };

    active.add(entry);
    metrics.active.add(labels, 1);
    // One handler on the run for the whole stream (every extra then/race/finally stays attached to each
    // open stream). Until the response is returned (and the relay built), a failure is early: it goes
    // back as an HTTP error.
    let early: unknown;
    let wake: (() => void) | undefined;
    const run = runStream(
      target,
      // An error status is not "ready": the run rejects with it right after, and it is passed on as such.
      Object.assign({}, runOptions, {
        onResponse: (response: Response) => (response.ok ? wake?.() : undefined),
        onFrame: verbatim ? (frame: Frame) => entry.verbatim?.frames.frame(frame) : undefined,
      }),
      {
        onEvent: (event) => {
          if (
            firstContentAt === undefined &&
            (event.type === 'text' ||
              (event.type === 'reasoning' && event.text !== '') ||
              event.type === 'tool-call-delta')
          ) {
            firstContentAt = now();
            trace?.firstToken(firstContentAt - startedAt);
          }
          if (entry.verbatim !== undefined) entry.verbatim.frames.event(event);
          else if (event.type === 'error')
            return; // written once, as the stream's ending
          else if (entry.coalescer !== undefined) entry.coalescer.push(event);
          else entry.relay!.event(event);
        },
        afterChunk: () => {
          entry.verbatim?.frames.flush();
          entry.relay!.flushEncoder();
        },
        backpressure: () => entry.relay!.backpressure(),
        consumer: upstreamAbort,
      },
    );
    const streamLog = sse ? streamId : undefined;
    const ended = () => {
      if (detachTimer !== undefined) clearTimeout(detachTimer);
      clientSignal.removeEventListener('abort', clientGone);
      finish(entry, labels);
    };
    run.then(
      (result) => {
        // The upstream answered, so the relay was built (after the wait below, or its timeout).
        const relay = entry.relay!;
        try {
          trace?.upstreamEnded(result, undefined, result.metrics.totalMs ?? now() - startedAt);
          entry.coalescer?.flush();
          relay.flushEncoder();
          let outcome: StreamOutcome;
          let endState: EndState;
          let closing: 'complete' | 'failed' | 'cancelled';
          const relayed = entry.verbatim;
          if (result.complete) {
            // A verbatim stream's ending (its `[DONE]`, `done: true` line…) was the upstream's own.
            if (relayed !== undefined) {
              relayed.frames.flush();
              relayed.relay.endAsRelayed();
            } else relay.end(result);
            outcome = 'completed';
            endState = result.truncated ? 'truncated' : 'completed';
            closing = 'complete';
            if (result.truncated) metrics.truncated.inc(labels);
          } else if (result.incomplete === 'aborted' && upstreamStopped) {
            relay.abort();
            outcome = 'cancelled';
            endState = 'cancelled';
            closing = 'cancelled';
          } else if (
            relayed !== undefined &&
            result.incomplete === 'server-error' &&
            relayed.frames.sawError
          ) {
            // The upstream wrote its own error event, which went on as it was: nothing to add.
            relayed.frames.flush();
            relayed.relay.endAsRelayed();
            outcome = 'error';
            endState = outcome;
            closing = 'failed';
          } else {
            // A refused payload is not passed on; anything else the upstream wrote before the failure is.
            if (result.incomplete === 'malformed') relayed?.frames.discard();
            else relayed?.frames.flush();
            relay.fail(
              {
                message: `the upstream failed: ${withoutAddresses(result.error?.message ?? result.incomplete ?? 'the stream failed')} (request id ${scope.requestId})`,
                status: result.error?.status ?? 502,
                errorType: result.error?.errorType,
              },
              result,
            );
            outcome = result.incomplete === 'server-error' ? 'error' : 'incomplete';
            endState = outcome;
            closing = 'failed';
          }
          if (sse) store.close(streamId, closing).catch(() => {});
          metrics.streams.inc(labelSets.with(labels, 'outcome', outcome));
          countTokens(labels, result);
          const ttftMs = firstContentAt === undefined ? undefined : firstContentAt - startedAt;
          if (ttftMs !== undefined) metrics.ttft.observe(labels, ttftMs / 1000);
          metrics.interChunk.observeEach(labels, result.metrics.interChunkMs, 1 / 1000);
          metrics.duration.observe(labels, (now() - startedAt) / 1000);
          done(
            scope,
            Object.assign({}, base, {
              status: 200,
              outcome,
              result,
              endState,
              ttftMs,
              firstContentAt,
              streamId: streamLog,
            }),
          );
        } finally {
          ended();
        }
      },
      (error: unknown) => {
        if (entry.relay === undefined) {
          early = error ?? new Error('upstream failed');
          wake?.();
          return;
        }
        const relay = entry.relay;
        try {
          entry.coalescer?.flush();
          entry.verbatim?.frames.flush();
          relay.fail({
            message: `${describeUpstreamFailure(error).message} (request id ${scope.requestId})`,
            status: 502,
          });
          if (sse) store.close(streamId, 'failed').catch(() => {});
          metrics.streams.inc(labelSets.with(labels, 'outcome', 'error'));
          done(
            scope,
            Object.assign({}, base, {
              status: 200,
              outcome: 'error' as const,
              error,
              endState: 'error' as const,
              streamId: streamLog,
            }),
          );
        } finally {
          ended();
        }
      },
    );

    // Pass the upstream's own HTTP errors on as such when they come quickly; never wait for a token.
    if (early === undefined) {
      let waitTimer: ReturnType<typeof setTimeout> | undefined;
      await new Promise<void>((resolve) => {
        wake = resolve;
        waitTimer = setTimeout(resolve, headersWaitMs);
      });
      clearTimeout(waitTimer);
      wake = undefined;
    }
    if (early !== undefined) {
      finish(entry, labels);
      if (sse && !openLate) store.close(streamId, 'failed').catch(() => {});
      clientSignal.removeEventListener('abort', clientGone);
      return upstreamFailure(call, early);
    }
    headers ??= responseHeaders();
    if (openLate) void openInStore(headers);
    const relay = startRelay();

    // An adapter that writes to the socket itself (node/serve.ts) needs no ReadableStream.
    return takesDirectResponse(request)
      ? directOnlyResponse(relay.direct, { status: 200, headers })
      : new Response(relay.body, { status: 200, headers });
  }

  function finish(entry: ActiveStream, labels: Readonly<Record<string, string>>): void {
    if (active.delete(entry)) metrics.active.add(labels, -1);
  }

  function countTokens(labels: Record<string, string>, result: Result): void {
    if (result.usage?.inputTokens !== undefined) metrics.inputTokens.inc(labels, result.usage.inputTokens);
    const output = result.usage?.outputTokens ?? result.metrics.outputTokens;
    if (output !== undefined && output > 0) {
      metrics.outputTokens.inc(
        labelSets.with(labels, 'source', result.metrics.outputTokensEstimated ? 'estimate' : 'server'),
        output,
      );
    }
  }

  /** An upstream that failed before its stream began: counted, logged, and answered as an HTTP error. */
  function upstreamFailure(call: Call, error: unknown): Response {
    const { dialect, scope, labels } = call;
    metrics.streams.inc(labelSets.with(labels, 'outcome', 'error'));
    const response = upstreamFailureResponse(dialect, scope.format, error, scope.requestId);
    done(
      scope,
      Object.assign({}, call.base, {
        status: response.status,
        outcome: 'error' as const,
        error,
        endState: 'error' as const,
      }),
    );
    return response;
  }

  async function resume(
    dialect: Dialect,
    lastEventId: string,
    request: IncomingRequest,
    scope: Scope,
  ): Promise<Response> {
    if (scope.format === 'text') return reject(dialect, scope, 400, 'a plain-text stream cannot be resumed');
    const parsed = parseEventId(lastEventId);
    if (parsed === undefined) {
      metrics.resumes.inc({ result: 'invalid' });
      return reject(dialect, scope, 400, 'Last-Event-ID is not an event id this gateway wrote');
    }
    let subscription: Awaited<ReturnType<ResumeStore['subscribe']>>;
    try {
      // The owner is what the guard established (a key it accepted), never anything the client sent.
      subscription = await store.subscribe(
        parsed.streamId,
        parsed.seq,
        abortSignalOf(request.signal),
        clientIdentityOf(request).owner,
      );
    } catch (error) {
      if (error instanceof ResumeGapError) {
        metrics.resumes.inc({ result: 'gone' });
        return reject(dialect, scope, 410, `cannot resume: ${error.message}`);
      }
      if (error instanceof NoSuchEventError) {
        metrics.resumes.inc({ result: 'no-such-event' });
        return reject(dialect, scope, 404, `cannot resume: ${error.message}`);
      }
      // The store is unreachable (Redis restarting): a retryable refusal in the dialect's shape.
      metrics.resumes.inc({ result: 'error' });
      return reject(
        dialect,
        scope,
        503,
        `cannot resume: the resume store failed: ${redactUrls(errorMessage(error))}`,
        'unavailable_error',
      );
    }
    if (subscription === undefined) {
      metrics.resumes.inc({ result: 'unknown' });
      return reject(dialect, scope, 404, 'cannot resume: the stream is unknown or expired');
    }
    metrics.resumes.inc({ result: 'ok' });
    const body = resumedBody(
      subscription,
      parsed.streamId,
      parsed.seq,
      retryMs,
      () => done(scope, { route: dialect.id, status: 200, outcome: 'resumed', streamId: parsed.streamId }),
      keepaliveMs,
    );
    return new Response(body, { status: 200, headers: subscription.meta.headers });
  }

  function listModels(): string[] {
    const names = new Set<string>();
    for (const upstream of options.upstreams) for (const model of upstream.models ?? []) names.add(model);
    return [...names];
  }

  /** The servers' informational routes (side-routes.ts). */
  const sideRoutes: SideRouteContext = {
    upstreams: options.upstreams,
    models: listModels,
    closing: () => closing,
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
      done(scope, { route: 'openai-responses', status: 200, outcome: 'resumed', streamId });
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
            { status: closing ? 'shutting-down' : 'ok', activeStreams: active.size },
            { status: closing ? 503 : 200 },
          );
        case '/metrics':
          return new Response(metrics.render(), {
            headers: { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' },
          });
        case '/v1/models':
          return Response.json(openAiModelList(listModels()));
        case '/api/tags':
          return Response.json(ollamaTags(listModels()));
      }
    }
    // Issue 20: the Messages and Responses token-counting routes (token-count-route.ts), and the
    // retrieval of a Responses stream by its id (responses-cursor.ts).
    const counted = tokenCountRoute(request, target, sideRoutes);
    if (counted !== undefined) return counted;
    const retrieved = responsesCursorRoute(request, target, responsesCursor);
    if (retrieved !== undefined) return retrieved;
    const side = sideRoute(request, target, sideRoutes);
    if (side !== undefined) return side;
    const fallback = options.fallback === undefined ? undefined : await options.fallback(toRequest(request));
    if (fallback !== undefined) return fallback;
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
        return Response.json(
          { error: { message: `internal error: ${errorMessage(error)}`, type: 'server_error' } },
          { status: 500 },
        );
      }
    }),
    close: async () => {
      closing = true;
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

/**
 * The token counts of a whole (non-stream) answer, in any dialect's field names: OpenAI `usage`
 * (`prompt_tokens`, `completion_tokens`), Messages and Responses `usage` (`input_tokens`, `output_tokens`),
 * Ollama `prompt_eval_count` / `eval_count`, llama.cpp `tokens_evaluated` / `tokens_predicted`.
 */
function wholeAnswerUsage(text: string): { inputTokens?: number; outputTokens?: number } | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const record = value as Record<string, unknown>;
  const usage = (typeof record.usage === 'object' && record.usage !== null ? record.usage : record) as Record<
    string,
    unknown
  >;
  const number = (...keys: string[]): number | undefined => {
    for (const key of keys) if (typeof usage[key] === 'number') return usage[key] as number;
    return undefined;
  };
  const counts: { inputTokens?: number; outputTokens?: number } = {};
  const input = number('prompt_tokens', 'input_tokens', 'prompt_eval_count', 'tokens_evaluated');
  const output = number('completion_tokens', 'output_tokens', 'eval_count', 'tokens_predicted');
  if (input !== undefined) counts.inputTokens = input;
  if (output !== undefined) counts.outputTokens = output;
  return counts;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    (timer as { unref?: () => void }).unref?.();
  });
}
