import { HttpError, RequestFailedError } from '../client/client-errors.ts';
import { runStream } from '../client/run-stream.ts';
import { type Dialect, type DialectId, RequestError } from '../dialects/dialect.ts';
import { frameText } from '../dialects/frame-text.ts';
import { DIALECTS, getDialect } from '../dialects/registry.ts';
import { TokenwireError } from '../errors.ts';
import type { ChatRequest } from '../events/chat-request.ts';
import type { Result } from '../events/result.ts';
import type { FlushPolicy } from './coalescer.ts';
import { GatewayMetrics, type StreamOutcome } from './gateway-metrics.ts';
import { MemoryResumeStore } from './memory-resume-store.ts';
import { nonStreamBody } from './non-stream-response.ts';
import { BodyError, readJsonBody } from './read-body.ts';
import { formatEventId, parseEventId, ResumeGapError, type ResumeStore } from './resume-store.ts';
import { StreamRelay } from './stream-relay.ts';
import { pickUpstreamDialect, type Upstream } from './upstream.ts';

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
  /** Largest request body. Default 4 MiB. */
  maxBodyBytes?: number | undefined;
  /** How long to wait for the upstream's headers so its HTTP errors can be passed on as such. Default 1000. */
  upstreamHeadersWaitMs?: number | undefined;
  /** Encoder flavor per dialect for what the gateway writes (default: each dialect's first). */
  flavors?: Partial<Record<DialectId, string>> | undefined;
  /** Serves anything that is not an API route (the playground). */
  fallback?: ((request: Request) => Promise<Response | undefined> | Response | undefined) | undefined;
  /** One record per request, at its end. */
  onLog?: ((record: RequestLog) => void) | undefined;
  /** Monotonic clock in ms (metrics). Default performance.now. */
  now?: (() => number) | undefined;
}

export interface RequestLog {
  route: string;
  upstream: string | undefined;
  status: number;
  outcome: StreamOutcome | 'rejected' | 'resumed' | 'non-stream';
  model: string | undefined;
  ttftMs: number | undefined;
  durationMs: number;
  inputTokens: number | undefined;
  outputTokens: number | undefined;
  error: string | undefined;
}

export interface Gateway {
  fetch(request: Request): Promise<Response>;
  readonly metrics: GatewayMetrics;
  /** Streams being relayed now. */
  activeStreams(): number;
  /**
   * Graceful shutdown: new requests get 503; in-flight streams end with their dialect's error event
   * (not a silent close) and their upstreams are aborted.
   */
  close(): Promise<void>;
}

/** Request headers passed on to the upstream: tracing, request ids, and the simulator's fault controls. */
const FORWARDED_HEADERS = [
  'x-request-id',
  'traceparent',
  'tracestate',
  'x-tokenwire-fault',
  'x-tokenwire-flavor',
];

/** The dialects that stream unless told otherwise (`stream` absent). */
const STREAMS_BY_DEFAULT = new Set<DialectId>(['ollama-chat', 'ollama-generate', 'tgi']);

interface ActiveStream {
  relay: StreamRelay;
  upstreamAbort: AbortController;
}

export function createGateway(options: GatewayOptions): Gateway {
  if (options.upstreams.length === 0) throw new TypeError('createGateway needs at least one upstream');
  const metrics = new GatewayMetrics();
  const now = options.now ?? (() => performance.now());
  const store = options.resumeStore ?? new MemoryResumeStore();
  const keepaliveMs = options.keepaliveMs ?? 15000;
  const retryMs = options.retryMs ?? 3000;
  const maxBodyBytes = options.maxBodyBytes ?? 4 * 1024 * 1024;
  const headersWaitMs = options.upstreamHeadersWaitMs ?? 1000;
  const active = new Set<ActiveStream>();
  let closing = false;

  let ticker: ReturnType<typeof setInterval> | undefined;
  if (keepaliveMs > 0) {
    ticker = setInterval(
      () => {
        const at = now();
        for (const stream of active)
          if (at - stream.relay.lastWriteAt >= keepaliveMs) stream.relay.keepalive();
      },
      Math.min(1000, Math.max(10, keepaliveMs / 4)),
    );
    (ticker as { unref?: () => void }).unref?.();
  }

  const routes = new Map<string, Dialect>();
  for (const dialect of Object.values(DIALECTS)) for (const path of dialect.paths) routes.set(path, dialect);

  function log(record: RequestLog): void {
    options.onLog?.(record);
  }

  function errorResponse(dialect: Dialect, status: number, message: string, errorType?: string): Response {
    const error = dialect.errorResponse({ status, message, errorType });
    return new Response(error.body, {
      status: error.status,
      headers: { 'content-type': error.contentType, 'cache-control': 'no-store' },
    });
  }

  function reject(dialect: Dialect, status: number, message: string, errorType?: string): Response {
    metrics.rejected.inc({ route: dialect.id, status: String(status) });
    log({
      route: dialect.id,
      upstream: undefined,
      status,
      outcome: 'rejected',
      model: undefined,
      ttftMs: undefined,
      durationMs: 0,
      inputTokens: undefined,
      outputTokens: undefined,
      error: message,
    });
    return errorResponse(dialect, status, message, errorType);
  }

  function pickUpstream(model: string | undefined): Upstream {
    if (model !== undefined) {
      const base = model.split('@')[0];
      const match = options.upstreams.find(
        (u) => u.models?.includes(model) || (base !== undefined && u.models?.includes(base)),
      );
      if (match !== undefined) return match;
    }
    return options.upstreams[0]!;
  }

  function upstreamBody(
    incoming: Dialect,
    upstreamDialect: Dialect,
    body: Record<string, unknown>,
    request: ChatRequest,
  ): Record<string, unknown> {
    // The gateway always asks for usage: it counts tokens even for clients that did not ask for them.
    if (incoming.id === upstreamDialect.id) {
      const out: Record<string, unknown> = { ...body };
      if (upstreamDialect.id !== 'tgi') out.stream = true;
      if (upstreamDialect.id === 'openai-chat' || upstreamDialect.id === 'openai-completions') {
        const streamOptions =
          typeof body.stream_options === 'object' && body.stream_options !== null ? body.stream_options : {};
        out.stream_options = { ...streamOptions, include_usage: true };
      }
      return out;
    }
    return upstreamDialect.toRequestBody({ ...request, includeUsage: true, extra: undefined });
  }

  async function handleStream(dialect: Dialect, request: Request, tgiRoot = false): Promise<Response> {
    const startedAt = now();
    if (closing) return reject(dialect, 503, 'the gateway is shutting down', 'unavailable_error');
    const lastEventId = request.headers.get('last-event-id');
    if (lastEventId !== null && lastEventId !== '') return resume(dialect, lastEventId, request);
    if (request.method !== 'POST') return reject(dialect, 405, `use POST for ${dialect.paths[0]}`);

    let body: unknown;
    let chat: ChatRequest;
    try {
      body = await readJsonBody(request, maxBodyBytes);
      chat = dialect.fromRequestBody(body);
    } catch (error) {
      if (error instanceof BodyError) return reject(dialect, error.status, error.message);
      if (error instanceof RequestError) return reject(dialect, error.status, error.message);
      throw error;
    }
    const upstream = pickUpstream(chat.model);
    // TGI and llama-server requests name no model: they mean the one the server runs.
    if (chat.model === undefined && upstream.models?.[0] !== undefined) chat.model = upstream.models[0];
    const upstreamDialect = getDialect(pickUpstreamDialect(upstream, dialect.id, chat));
    const labels = { route: dialect.id, upstream: upstream.name };
    metrics.requests.inc(labels);
    // TGI's `POST /` streams only with `stream: true`; its /generate_stream always streams.
    const wantsStream = chat.stream ?? (tgiRoot ? false : STREAMS_BY_DEFAULT.has(dialect.id));
    const upstreamAbort = new AbortController();
    const sent = upstreamBody(dialect, upstreamDialect, body as Record<string, unknown>, chat);
    const forwarded: Record<string, string> = {};
    for (const name of FORWARDED_HEADERS) {
      const value = request.headers.get(name);
      if (value !== null) forwarded[name] = value;
    }
    const target = {
      url: `${upstream.url.replace(/\/+$/, '')}${upstreamDialect.paths[0]}`,
      dialect: upstreamDialect.id,
      body: sent,
      // The upstream's own credentials win over anything a client sent.
      headers: { ...forwarded, ...upstream.headers },
    };
    const runOptions = {
      fetch: upstream.fetch,
      signal: upstreamAbort.signal,
      timeouts: upstream.timeouts,
    };

    if (!wantsStream) {
      const onClientGone = () => upstreamAbort.abort();
      request.signal.addEventListener('abort', onClientGone, { once: true });
      try {
        const result = await runStream(target, runOptions);
        countTokens(labels, result);
        if (!result.complete) {
          const outcome: StreamOutcome = result.incomplete === 'server-error' ? 'error' : 'incomplete';
          metrics.streams.inc({ ...labels, outcome });
          return errorResponse(
            dialect,
            502,
            `the upstream stream was incomplete: ${result.error?.message ?? result.incomplete}`,
            'upstream_error',
          );
        }
        metrics.streams.inc({ ...labels, outcome: 'completed' });
        if (result.truncated) metrics.truncated.inc(labels);
        log(requestLog(dialect, upstream, 200, 'non-stream', chat, result, now() - startedAt, undefined));
        const answer = nonStreamBody(dialect.id, result, chat.model ?? result.model ?? 'unknown', Date.now());
        // TGI's `POST /` answers with a list (the HF Inference API shape).
        return Response.json(tgiRoot ? [answer] : answer);
      } catch (error) {
        return upstreamFailure(dialect, labels, error);
      } finally {
        request.signal.removeEventListener('abort', onClientGone);
      }
    }

    const streamId = randomStreamId();
    const flavor = options.flavors?.[dialect.id];
    const encoder = dialect.createEncoder({
      flavor,
      includeUsage: chat.includeUsage === true,
      model: chat.model,
    });
    let firstContentAt: number | undefined;
    let upstreamStopped = false;
    const relay = new StreamRelay({
      streamId,
      dialect,
      encoder,
      store,
      flush: options.flush,
      retryMs,
      now,
      onCancel: () => clientGone(),
    });
    const entry: ActiveStream = { relay, upstreamAbort };
    let detachTimer: ReturnType<typeof setTimeout> | undefined;
    const clientGone = () => {
      relay.clientLeft();
      if (options.keepStreamOnDisconnect === true) {
        detachTimer ??= setTimeout(() => upstreamAbort.abort(), options.detachedTimeoutMs ?? 60000);
        return;
      }
      upstreamStopped = true;
      upstreamAbort.abort();
    };
    request.signal.addEventListener('abort', clientGone, { once: true });
    const headers: Record<string, string> = {
      ...dialect.responseHeaders(flavor),
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
      'x-tokenwire-stream-id': streamId,
    };
    if (relay.sse) {
      await store.open(streamId, {
        dialect: dialect.id,
        flavor,
        headers,
        model: chat.model,
        createdAt: Date.now(),
      });
    }

    let headersSeen: () => void = () => {};
    const upstreamHeaders = new Promise<void>((resolve) => {
      headersSeen = resolve;
    });
    active.add(entry);
    metrics.active.add(labels, 1);
    const run = runStream(
      target,
      // An error status is not "ready": the run rejects with it right after, and it is passed on as such.
      { ...runOptions, onResponse: (response) => (response.ok ? headersSeen() : undefined) },
      {
        onEvent: (event) => {
          if (event.type === 'error') return; // written once, as the stream's ending
          if (
            firstContentAt === undefined &&
            (event.type === 'text' || event.type === 'reasoning' || event.type === 'tool-call-delta')
          ) {
            firstContentAt = now();
          }
          relay.event(event);
        },
        afterChunk: () => relay.flushEncoder(),
        backpressure: () => relay.backpressure(),
      },
    );
    run.catch(() => {});

    // Pass the upstream's own HTTP errors on as such when they come quickly; never wait for a token.
    let early: unknown;
    await Promise.race([
      upstreamHeaders,
      run.then(
        () => {},
        (error: unknown) => {
          early = error ?? new Error('upstream failed');
        },
      ),
      delay(headersWaitMs),
    ]);
    if (early !== undefined) {
      finish(entry, labels);
      store.close(streamId, 'failed').catch(() => {});
      request.signal.removeEventListener('abort', clientGone);
      return upstreamFailure(dialect, labels, early);
    }

    run
      .then(
        (result) => {
          relay.flushEncoder();
          let outcome: StreamOutcome;
          let closing: 'complete' | 'failed' | 'cancelled';
          if (result.complete) {
            relay.end();
            outcome = 'completed';
            closing = 'complete';
            if (result.truncated) metrics.truncated.inc(labels);
          } else if (result.incomplete === 'aborted' && upstreamStopped) {
            relay.abort();
            outcome = 'cancelled';
            closing = 'cancelled';
          } else {
            relay.fail({
              message: `upstream ${upstream.name}: ${result.error?.message ?? result.incomplete ?? 'the stream failed'}`,
              status: result.error?.status ?? 502,
              errorType: result.error?.errorType,
            });
            outcome = result.incomplete === 'server-error' ? 'error' : 'incomplete';
            closing = 'failed';
          }
          store.close(streamId, closing).catch(() => {});
          metrics.streams.inc({ ...labels, outcome });
          countTokens(labels, result);
          if (firstContentAt !== undefined) metrics.ttft.observe(labels, (firstContentAt - startedAt) / 1000);
          for (const gap of result.metrics.interChunkMs) metrics.interChunk.observe(labels, gap / 1000);
          metrics.duration.observe(labels, (now() - startedAt) / 1000);
          log(
            requestLog(
              dialect,
              upstream,
              200,
              outcome,
              chat,
              result,
              now() - startedAt,
              firstContentAt === undefined ? undefined : firstContentAt - startedAt,
            ),
          );
        },
        (error: unknown) => {
          relay.fail({ message: `upstream ${upstream.name}: ${errorMessage(error)}`, status: 502 });
          store.close(streamId, 'failed').catch(() => {});
          metrics.streams.inc({ ...labels, outcome: 'error' });
          log({
            ...requestLog(dialect, upstream, 200, 'error', chat, undefined, now() - startedAt, undefined),
            error: errorMessage(error),
          });
        },
      )
      .finally(() => {
        if (detachTimer !== undefined) clearTimeout(detachTimer);
        request.signal.removeEventListener('abort', clientGone);
        finish(entry, labels);
      });

    return new Response(relay.body, { status: 200, headers });
  }

  function finish(entry: ActiveStream, labels: Record<string, string>): void {
    if (active.delete(entry)) metrics.active.add(labels, -1);
  }

  function countTokens(labels: Record<string, string>, result: Result): void {
    if (result.usage?.inputTokens !== undefined) metrics.inputTokens.inc(labels, result.usage.inputTokens);
    const output = result.usage?.outputTokens ?? result.metrics.outputTokens;
    if (output !== undefined && output > 0) {
      metrics.outputTokens.inc(
        { ...labels, source: result.usage?.outputTokens === undefined ? 'estimate' : 'server' },
        output,
      );
    }
  }

  function upstreamFailure(dialect: Dialect, labels: Record<string, string>, error: unknown): Response {
    metrics.streams.inc({ ...labels, outcome: 'error' });
    if (error instanceof HttpError) {
      // 4xx are the client's to fix and pass through; anything else is a bad gateway.
      const status = error.status >= 400 && error.status < 500 ? error.status : 502;
      const response = errorResponse(dialect, status, `upstream ${labels.upstream}: ${error.message}`);
      if (error.retryAfterSeconds !== undefined)
        response.headers.set('retry-after', String(error.retryAfterSeconds));
      return response;
    }
    if (error instanceof RequestFailedError) {
      const status = error.code === 'connect-timeout' || error.code === 'total-timeout' ? 504 : 502;
      return errorResponse(
        dialect,
        status,
        `upstream ${labels.upstream}: ${error.message}`,
        'upstream_error',
      );
    }
    return errorResponse(
      dialect,
      502,
      `upstream ${labels.upstream}: ${errorMessage(error)}`,
      'upstream_error',
    );
  }

  async function resume(dialect: Dialect, lastEventId: string, request: Request): Promise<Response> {
    const parsed = parseEventId(lastEventId);
    if (parsed === undefined) {
      metrics.resumes.inc({ result: 'invalid' });
      return reject(dialect, 400, 'Last-Event-ID is not an event id this gateway wrote');
    }
    let subscription: Awaited<ReturnType<ResumeStore['subscribe']>>;
    try {
      subscription = await store.subscribe(parsed.streamId, parsed.seq, request.signal);
    } catch (error) {
      if (error instanceof ResumeGapError) {
        metrics.resumes.inc({ result: 'gone' });
        return reject(dialect, 410, `cannot resume: ${error.message}`);
      }
      throw error;
    }
    if (subscription === undefined) {
      metrics.resumes.inc({ result: 'unknown' });
      return reject(dialect, 404, 'cannot resume: the stream is unknown or expired');
    }
    metrics.resumes.inc({ result: 'ok' });
    const meta = subscription.meta;
    const resumedDialect = getDialect(meta.dialect);
    const encoded = new TextEncoder();
    const frames = subscription.frames;
    let lastSeq = parsed.seq;
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(encoded.encode(`retry: ${retryMs}\n\n`));
        try {
          for await (const frame of frames) {
            lastSeq = frame.seq;
            controller.enqueue(encoded.encode(frame.text));
          }
          const status = subscription.status();
          if (status === 'cancelled' || status === 'lost' || status === 'live') {
            // Nobody wrote this stream's ending: write an honest one, never a clean finish.
            const encoder = resumedDialect.createEncoder({ flavor: meta.flavor, model: meta.model });
            encoder.error(
              {
                message:
                  status === 'cancelled'
                    ? 'the stream was cancelled when its client disconnected; it cannot be finished'
                    : 'the stream stopped before it finished (its producer is gone)',
                status: 502,
              },
              (data, kind) => {
                lastSeq += 1;
                controller.enqueue(
                  encoded.encode(frameText(encoder, data, kind, formatEventId(parsed.streamId, lastSeq))),
                );
              },
            );
          }
          controller.close();
        } catch (error) {
          controller.error(error);
        }
      },
    });
    return new Response(body, { status: 200, headers: meta.headers });
  }

  function listModels(): string[] {
    const names = new Set<string>();
    for (const upstream of options.upstreams) for (const model of upstream.models ?? []) names.add(model);
    return [...names];
  }

  async function handle(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const path = url.pathname.replace(/\/+$/, '') || '/';
    const dialect = routes.get(path);
    if (dialect !== undefined) return handleStream(dialect, request);
    // TGI serves generation on `POST /` too (what @huggingface/inference calls with an endpoint URL).
    if (path === '/' && request.method === 'POST') return handleStream(getDialect('tgi'), request, true);
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
          return Response.json({
            object: 'list',
            data: listModels().map((id) => ({ id, object: 'model', created: 0, owned_by: 'tokenwire' })),
          });
        case '/api/tags':
          return Response.json({
            models: listModels().map((name) => ({
              name,
              model: name,
              modified_at: new Date(0).toISOString(),
              size: 0,
              digest: '',
              details: { format: 'gguf', family: 'tokenwire', parameter_size: '', quantization_level: '' },
            })),
          });
      }
    }
    const fallback = await options.fallback?.(request);
    if (fallback !== undefined) return fallback;
    return Response.json(
      { error: { message: `no route for ${request.method} ${path}`, type: 'not_found_error' } },
      { status: 404 },
    );
  }

  return {
    metrics,
    activeStreams: () => active.size,
    fetch: async (request) => {
      try {
        return await handle(request);
      } catch (error) {
        return Response.json(
          { error: { message: `internal error: ${errorMessage(error)}`, type: 'server_error' } },
          { status: 500 },
        );
      }
    },
    close: async () => {
      closing = true;
      if (ticker !== undefined) clearInterval(ticker);
      for (const stream of active) {
        stream.relay.fail({
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

function requestLog(
  dialect: Dialect,
  upstream: Upstream,
  status: number,
  outcome: RequestLog['outcome'],
  chat: ChatRequest,
  result: Result | undefined,
  durationMs: number,
  ttftMs: number | undefined,
): RequestLog {
  return {
    route: dialect.id,
    upstream: upstream.name,
    status,
    outcome,
    model: chat.model,
    ttftMs,
    durationMs,
    inputTokens: result?.usage?.inputTokens,
    outputTokens: result?.usage?.outputTokens ?? result?.metrics.outputTokens,
    error: result?.error?.message,
  };
}

function errorMessage(error: unknown): string {
  if (TokenwireError.is(error) || error instanceof Error) return error.message;
  return String(error);
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    (timer as { unref?: () => void }).unref?.();
  });
}

function randomStreamId(): string {
  const bytes = new Uint8Array(9);
  crypto.getRandomValues(bytes);
  let out = '';
  for (const byte of bytes) out += byte.toString(16).padStart(2, '0');
  return out;
}
