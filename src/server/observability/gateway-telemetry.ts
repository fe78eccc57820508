import { HttpError, RequestFailedError } from '../../client/client-errors.ts';
import {
  DURATION_BUCKETS,
  FIRST_CHUNK_BUCKETS,
  genAiFinishWord,
  genAiOperation,
  genAiProvider,
  SPAN_KIND_CLIENT,
  SPAN_KIND_SERVER,
  STATUS_ERROR,
  TOKEN_BUCKETS,
} from '../../client/gen-ai-conventions.ts';
import type {
  Attributes,
  Context,
  Histogram,
  Meter,
  OtelApi,
  Span,
  TextMapPropagator,
  Tracer,
} from '../../client/otel-types.ts';
import type { DialectId } from '../../dialects/dialect.ts';
import type { ChatRequest } from '../../events/chat-request.ts';
import type { Result } from '../../events/result.ts';
import type { IncomingHeaders, IncomingRequest } from '../http/incoming-request.ts';
import { abbreviatedStreamId } from '../http/stream-id.ts';
import type { Upstream } from '../upstream/upstream.ts';
import { type EndState, redactUrls } from './request-log.ts';

/**
 * OpenTelemetry for the gateway. Only `@opentelemetry/api` is used (an optional peer dependency),
 * and only when this option is given: it is loaded then, never at import time. Hand over the tracer
 * and meter of your SDK (the `tokenwire serve` command builds them from the standard `OTEL_*`
 * variables); either may be left out to use the API's global one.
 */
export interface GatewayTelemetryOptions {
  tracer?: Tracer | undefined;
  meter?: Meter | undefined;
  /**
   * Reads `traceparent` from requests and writes it upstream. Default: the API's global propagator
   * when one is registered, else W3C Trace Context.
   */
  propagator?: TextMapPropagator | undefined;
  /**
   * `gen_ai.provider.name`. Default per upstream dialect: `openai_compatible`, `ollama`, `llama.cpp`,
   * `hf.tgi` (none of the conventions' well-known values fits a self-hosted server, so these are custom).
   */
  providerName?: string | ((upstream: Upstream) => string) | undefined;
}

/** Time per output token: the one bucket set only the server side records. */
const TPOT_BUCKETS = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5];

interface Instruments {
  serverTtft: Histogram;
  serverTpot: Histogram;
  serverDuration: Histogram;
  clientDuration: Histogram;
  clientTtfc: Histogram;
  tokenUsage: Histogram;
}

/** A low-cardinality `error.type`: the HTTP status, the failure's code, or `_OTHER`. */
export function errorType(error: unknown, result?: Result): string {
  if (result !== undefined && !result.complete) return result.error?.code ?? result.incomplete ?? '_OTHER';
  if (error instanceof HttpError) return String(error.status);
  if (error instanceof RequestFailedError) return error.code;
  return '_OTHER';
}

/** The model name put on metrics: one the upstream lists, else `_OTHER` (clients choose model names freely). */
function metricModel(upstream: Upstream, model: string | undefined): string | undefined {
  if (model === undefined) return undefined;
  const listed = upstream.models;
  if (listed === undefined || listed.length === 0) return model.slice(0, 128);
  if (listed.includes(model)) return model;
  const base = model.split('@')[0];
  return base !== undefined && listed.includes(base) ? base : '_OTHER';
}

function serverOf(url: string): { address: string; port: number; full: string } | undefined {
  try {
    const parsed = new URL(url);
    const port = parsed.port !== '' ? Number(parsed.port) : parsed.protocol === 'https:' ? 443 : 80;
    // No user:password, no query: a URL on a span must not carry credentials.
    return { address: parsed.hostname, port, full: `${parsed.protocol}//${parsed.host}${parsed.pathname}` };
  } catch {
    return undefined;
  }
}

/** W3C Trace Context (`traceparent`, `tracestate`), for a tracer handed over without a registered propagator. */
function w3cTraceContext(api: OtelApi): TextMapPropagator {
  // The SDK's W3CTraceContextPropagator lives in @opentelemetry/core, which the gateway must not need.
  const pattern = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
  return {
    inject(context, carrier, setter) {
      const span = api.trace.getSpanContext(context);
      if (span === undefined || !api.isSpanContextValid(span)) return;
      setter.set(
        carrier,
        'traceparent',
        `00-${span.traceId}-${span.spanId}-0${(span.traceFlags & 1).toString(16)}`,
      );
      const state = span.traceState?.serialize();
      if (state !== undefined && state !== '') setter.set(carrier, 'tracestate', state);
    },
    extract(context, carrier, getter) {
      const raw = getter.get(carrier, 'traceparent');
      const value = (Array.isArray(raw) ? raw[0] : raw)?.trim().toLowerCase();
      const match = value === undefined ? null : pattern.exec(value);
      if (match === null || match[1] === 'ff' || (match[1] === '00' && match[5] !== undefined))
        return context;
      const stateRaw = getter.get(carrier, 'tracestate');
      const state = Array.isArray(stateRaw) ? stateRaw.join(',') : stateRaw;
      const span = {
        traceId: match[2]!,
        spanId: match[3]!,
        traceFlags: Number.parseInt(match[4]!, 16) & 1,
        isRemote: true,
        ...(state === undefined || state === '' ? {} : { traceState: api.createTraceState(state) }),
      };
      return api.isSpanContextValid(span) ? api.trace.setSpanContext(context, span) : context;
    },
    fields: () => ['traceparent', 'tracestate'],
  };
}

const headersGetter = {
  get: (carrier: IncomingHeaders, key: string) => carrier.get(key) ?? undefined,
  keys: (carrier: IncomingHeaders) => [...carrier.keys()],
};
const recordSetter = {
  set: (carrier: Record<string, string>, key: string, value: string) => {
    carrier[key] = value;
  },
};

/**
 * The gateway's spans and GenAI metrics. Everything per request happens at the request's start and
 * end (and once at the first token); nothing is done per event.
 */
export class GatewayTelemetry {
  readonly #options: GatewayTelemetryOptions;
  readonly #loading: Promise<void>;
  #api: OtelApi | undefined;
  #tracer: Tracer | undefined;
  #instruments: Instruments | undefined;
  #fallbackPropagator: TextMapPropagator | undefined;

  constructor(options: GatewayTelemetryOptions) {
    this.#options = options;
    this.#loading = import('@opentelemetry/api').then(
      (api) => {
        this.#api = api;
        this.#tracer = options.tracer ?? api.trace.getTracer('tokenwire');
        this.#instruments = createInstruments(options.meter ?? api.metrics.getMeter('tokenwire'));
      },
      () => {
        // The optional peer dependency is missing: the gateway runs without telemetry.
      },
    );
  }

  /** Resolves once `@opentelemetry/api` is loaded (at once after the first request). */
  ready(): Promise<void> {
    return this.#loading;
  }

  /** A request's telemetry, or undefined when the API could not be loaded. */
  start(request: IncomingRequest, path: string, requestId: string): RequestTelemetry | undefined {
    const api = this.#api;
    if (api === undefined || this.#tracer === undefined || this.#instruments === undefined) return undefined;
    const propagator = this.#propagator(api);
    const parent = propagator.extract(api.ROOT_CONTEXT, request.headers, headersGetter);
    const span = this.#tracer.startSpan(
      `${request.method} ${path}`,
      {
        kind: SPAN_KIND_SERVER,
        attributes: {
          'http.request.method': request.method,
          'url.path': path,
          'http.route': path,
          'tokenwire.request_id': requestId,
        },
      },
      parent,
    );
    return new RequestTelemetry({
      api,
      tracer: this.#tracer,
      instruments: this.#instruments,
      propagator,
      span,
      context: api.trace.setSpan(parent, span),
      providerName: this.#options.providerName,
    });
  }

  #propagator(api: OtelApi): TextMapPropagator {
    if (this.#options.propagator !== undefined) return this.#options.propagator;
    if (api.propagation.fields().length > 0) return api.propagation;
    this.#fallbackPropagator ??= w3cTraceContext(api);
    return this.#fallbackPropagator;
  }
}

function createInstruments(meter: Meter): Instruments {
  const seconds = (name: string, description: string, buckets: number[]) =>
    meter.createHistogram(name, { description, unit: 's', advice: { explicitBucketBoundaries: buckets } });
  return {
    serverTtft: seconds(
      'gen_ai.server.time_to_first_token',
      'Time from the request reaching the gateway to the first token relayed, for streams that completed.',
      FIRST_CHUNK_BUCKETS,
    ),
    serverTpot: seconds(
      'gen_ai.server.time_per_output_token',
      'Time per output token after the first, for streams that completed.',
      TPOT_BUCKETS,
    ),
    serverDuration: seconds(
      'gen_ai.server.request.duration',
      'Whole request duration at the gateway, to the end of the stream.',
      DURATION_BUCKETS,
    ),
    clientDuration: seconds(
      'gen_ai.client.operation.duration',
      'Duration of the call to the upstream model server, to the end of its stream.',
      DURATION_BUCKETS,
    ),
    clientTtfc: seconds(
      'gen_ai.client.operation.time_to_first_chunk',
      'Time from the upstream request to its first content chunk.',
      FIRST_CHUNK_BUCKETS,
    ),
    tokenUsage: meter.createHistogram('gen_ai.client.token.usage', {
      description:
        'Input and output tokens per request (cancelled streams count the tokens made before the cancel).',
      unit: '{token}',
      advice: { explicitBucketBoundaries: TOKEN_BUCKETS },
    }),
  };
}

export interface RequestEnd {
  status: number;
  /** Set for requests that reached the upstream. */
  endState?: EndState | undefined;
  result?: Result | undefined;
  error?: unknown;
  /** From the request's arrival, ms. */
  durationMs: number;
  ttftMs?: number | undefined;
  tpotMs?: number | undefined;
  outputTokens?: number | undefined;
  outputTokensEstimated?: boolean | undefined;
}

/** One request's span (and its upstream child span) and metric attributes. */
export class RequestTelemetry {
  readonly #api: OtelApi;
  readonly #tracer: Tracer;
  readonly #instruments: Instruments;
  readonly #propagator: TextMapPropagator;
  readonly #span: Span;
  readonly #context: Context;
  readonly #providerName: GatewayTelemetryOptions['providerName'];
  #metricAttributes: Attributes | undefined;
  #upstreamAttributes: Attributes | undefined;
  #upstreamSpan: Span | undefined;
  #upstreamName = '';
  #ended = false;

  constructor(init: {
    api: OtelApi;
    tracer: Tracer;
    instruments: Instruments;
    propagator: TextMapPropagator;
    span: Span;
    context: Context;
    providerName: GatewayTelemetryOptions['providerName'];
  }) {
    this.#api = init.api;
    this.#tracer = init.tracer;
    this.#instruments = init.instruments;
    this.#propagator = init.propagator;
    this.#span = init.span;
    this.#context = init.context;
    this.#providerName = init.providerName;
  }

  get traceId(): string {
    return this.#span.spanContext().traceId;
  }

  /** The request was parsed: what it asks for, and where it goes. */
  describe(init: {
    route: DialectId;
    chat: ChatRequest;
    upstream: Upstream;
    upstreamDialect: DialectId;
    upstreamUrl: string;
    stream: boolean;
    format: 'text' | 'dialect';
    streamId?: string | undefined;
  }): void {
    const { chat, upstream } = init;
    const provider =
      typeof this.#providerName === 'function'
        ? this.#providerName(upstream)
        : (this.#providerName ?? genAiProvider(init.upstreamDialect));
    const server = serverOf(init.upstreamUrl);
    const request: Attributes = {
      'gen_ai.operation.name': genAiOperation(init.route),
      'gen_ai.provider.name': provider,
      'gen_ai.request.stream': init.stream,
      'tokenwire.route': init.route,
      'tokenwire.upstream': upstream.name,
      'tokenwire.upstream.dialect': init.upstreamDialect,
      'tokenwire.output.format': init.format,
    };
    if (chat.model !== undefined) request['gen_ai.request.model'] = chat.model;
    if (chat.maxTokens !== undefined) request['gen_ai.request.max_tokens'] = chat.maxTokens;
    if (chat.temperature !== undefined) request['gen_ai.request.temperature'] = chat.temperature;
    if (chat.topP !== undefined) request['gen_ai.request.top_p'] = chat.topP;
    if (chat.topK !== undefined) request['gen_ai.request.top_k'] = chat.topK;
    if (chat.seed !== undefined) request['gen_ai.request.seed'] = chat.seed;
    if (chat.stop !== undefined) request['gen_ai.request.stop_sequences'] = chat.stop;
    if (chat.frequencyPenalty !== undefined)
      request['gen_ai.request.frequency_penalty'] = chat.frequencyPenalty;
    if (chat.presencePenalty !== undefined) request['gen_ai.request.presence_penalty'] = chat.presencePenalty;
    // Abbreviated: a tracing backend sees the span, and the whole id can replay the stream.
    if (init.streamId !== undefined) request['tokenwire.stream_id'] = abbreviatedStreamId(init.streamId);
    this.#span.setAttributes(request);

    const metric: Attributes = {
      'gen_ai.operation.name': genAiOperation(init.route),
      'gen_ai.provider.name': provider,
      'tokenwire.route': init.route,
    };
    const model = metricModel(upstream, chat.model);
    if (model !== undefined) metric['gen_ai.request.model'] = model;
    if (server !== undefined) {
      metric['server.address'] = server.address;
      metric['server.port'] = server.port;
    }
    this.#metricAttributes = metric;

    const upstreamAttributes: Attributes = {
      'gen_ai.operation.name': genAiOperation(init.upstreamDialect),
      'gen_ai.provider.name': provider,
      'gen_ai.request.stream': true,
      'tokenwire.upstream': upstream.name,
      'tokenwire.upstream.dialect': init.upstreamDialect,
    };
    if (chat.model !== undefined) upstreamAttributes['gen_ai.request.model'] = chat.model;
    if (chat.maxTokens !== undefined) upstreamAttributes['gen_ai.request.max_tokens'] = chat.maxTokens;
    if (server !== undefined) {
      upstreamAttributes['server.address'] = server.address;
      upstreamAttributes['server.port'] = server.port;
      upstreamAttributes['url.full'] = server.full;
    }
    this.#upstreamAttributes = upstreamAttributes;
    this.#upstreamName = `${genAiOperation(init.upstreamDialect)}${chat.model === undefined ? '' : ` ${chat.model}`}`;
  }

  /**
   * Starts the upstream call's span (kind CLIENT, named as the GenAI conventions ask) and returns the
   * headers that carry its context upstream (`traceparent`, `tracestate`).
   */
  startUpstream(): Record<string, string> {
    const span = this.#tracer.startSpan(
      this.#upstreamName,
      { kind: SPAN_KIND_CLIENT, attributes: this.#upstreamAttributes ?? {} },
      this.#context,
    );
    this.#upstreamSpan = span;
    const headers: Record<string, string> = {};
    this.#propagator.inject(this.#api.trace.setSpan(this.#context, span), headers, recordSetter);
    return headers;
  }

  /** The first content token was relayed, `ttftMs` after the request arrived. */
  firstToken(ttftMs: number): void {
    this.#span.addEvent('tokenwire.first_token', { 'gen_ai.response.time_to_first_chunk': ttftMs / 1000 });
  }

  /** The client went away; the upstream is being stopped. */
  clientLeft(): void {
    this.#span.addEvent('tokenwire.client_disconnected');
  }

  /** The upstream call ended: with a Result (its stream was read), or an error before any stream. */
  upstreamEnded(result: Result | undefined, error: unknown, durationMs: number): void {
    const span = this.#upstreamSpan;
    if (span === undefined) return;
    this.#upstreamSpan = undefined;
    const attributes = { ...this.#metricAttributes };
    if (result !== undefined) {
      span.setAttributes(responseAttributes(result));
      span.setAttribute('http.response.status_code', 200);
      if (result.metrics.ttftMs !== undefined) {
        span.setAttribute('gen_ai.response.time_to_first_chunk', result.metrics.ttftMs / 1000);
        this.#instruments.clientTtfc.record(result.metrics.ttftMs / 1000, attributes);
      }
      if (result.model !== undefined) attributes['gen_ai.response.model'] = result.model;
    }
    if (error instanceof HttpError) span.setAttribute('http.response.status_code', error.status);
    const failed =
      result === undefined ? error !== undefined : !result.complete && result.incomplete !== 'aborted';
    if (failed) {
      const type = errorType(error, result);
      span.setAttribute('error.type', type);
      span.setStatus({ code: STATUS_ERROR, message: failureMessage(error, result) });
      attributes['error.type'] = type;
    }
    this.#instruments.clientDuration.record(durationMs / 1000, attributes);
    span.end();
  }

  /** The request ended (a stream: when its last byte was written). Ends the span and records metrics. */
  end(end: RequestEnd): void {
    if (this.#ended) return;
    this.#ended = true;
    // An upstream call still open (a request that ended another way) ends with it.
    if (this.#upstreamSpan !== undefined) this.upstreamEnded(end.result, end.error, end.durationMs);
    const span = this.#span;
    const result = end.result;
    span.setAttribute('http.response.status_code', end.status);
    if (result !== undefined) span.setAttributes(responseAttributes(result));
    if (end.outputTokens !== undefined) span.setAttribute('gen_ai.usage.output_tokens', end.outputTokens);
    if (end.outputTokensEstimated !== undefined)
      span.setAttribute('tokenwire.usage.output_tokens_estimated', end.outputTokensEstimated);
    if (end.ttftMs !== undefined) span.setAttribute('gen_ai.response.time_to_first_chunk', end.ttftMs / 1000);
    if (end.endState !== undefined) span.setAttribute('tokenwire.stream.end_state', end.endState);
    const failed = end.endState === 'error' || end.endState === 'incomplete' || end.status >= 500;
    let type: string | undefined;
    if (end.endState === 'error' || end.endState === 'incomplete') type = errorType(end.error, result);
    else if (end.status >= 400) type = String(end.status);
    if (type !== undefined) span.setAttribute('error.type', type);
    if (failed) span.setStatus({ code: STATUS_ERROR, message: failureMessage(end.error, result) });

    const attributes = this.#metricAttributes;
    if (attributes !== undefined) {
      const common: Attributes = { ...attributes };
      if (result?.model !== undefined) common['gen_ai.response.model'] = result.model;
      const duration: Attributes = { ...common };
      if (end.endState !== undefined) duration['tokenwire.stream.end_state'] = end.endState;
      if (type !== undefined) duration['error.type'] = type;
      this.#instruments.serverDuration.record(end.durationMs / 1000, duration);
      const completed = end.endState === 'completed' || end.endState === 'truncated';
      if (completed && end.ttftMs !== undefined)
        this.#instruments.serverTtft.record(end.ttftMs / 1000, common);
      if (completed && end.tpotMs !== undefined)
        this.#instruments.serverTpot.record(end.tpotMs / 1000, common);
      if (result !== undefined) {
        const input = result.usage?.inputTokens;
        if (input !== undefined)
          this.#instruments.tokenUsage.record(input, { ...common, 'gen_ai.token.type': 'input' });
        if (end.outputTokens !== undefined)
          this.#instruments.tokenUsage.record(end.outputTokens, { ...common, 'gen_ai.token.type': 'output' });
      }
    }
    span.end();
  }
}

function responseAttributes(result: Result): Attributes {
  const attributes: Attributes = {};
  if (result.model !== undefined) attributes['gen_ai.response.model'] = result.model;
  if (result.id !== undefined) attributes['gen_ai.response.id'] = result.id;
  const finish = genAiFinishWord(result);
  if (finish !== undefined) attributes['gen_ai.response.finish_reasons'] = [finish];
  if (typeof result.rawFinishReason === 'string')
    attributes['tokenwire.finish_reason.raw'] = result.rawFinishReason;
  if (result.usage?.inputTokens !== undefined)
    attributes['gen_ai.usage.input_tokens'] = result.usage.inputTokens;
  const output = result.usage?.outputTokens ?? result.metrics.outputTokens;
  if (output !== undefined) attributes['gen_ai.usage.output_tokens'] = output;
  if (result.incomplete !== undefined) attributes['tokenwire.stream.incomplete_reason'] = result.incomplete;
  attributes['tokenwire.stream.chunks'] = result.metrics.chunkCount;
  return attributes;
}

function failureMessage(error: unknown, result: Result | undefined): string {
  if (result?.error !== undefined) return redactUrls(result.error.message);
  if (error instanceof Error) return redactUrls(error.message);
  return error === undefined ? 'failed' : redactUrls(String(error));
}
