import type { StreamRequest } from '../client/build-request.ts';
import type { StreamOptions } from '../client/run-stream.ts';
import type { Dialect, MidStreamError } from '../dialects/dialect.ts';
import type { ChatRequest } from '../events/chat-request.ts';
import type { Result } from '../events/result.ts';
import type { StreamEvent } from '../events/stream-event.ts';
import type { TextCoalescer } from './coalescer.ts';
import type { GatewayOptions } from './create-gateway.ts';
import { errorResponse, upstreamFailureResponse } from './gateway-errors.ts';
import { GatewayMetrics } from './gateway-metrics.ts';
import { GatewayTelemetry, type RequestTelemetry } from './gateway-telemetry.ts';
import type { IncomingRequest } from './incoming-request.ts';
import { MemoryResumeStore } from './memory-resume-store.ts';
import type { OutputFormat } from './output-format.ts';
import { endFigures, type RequestEnd, requestLogRecord } from './request-end.ts';
import type { LogLevel } from './request-log.ts';
import type { DirectBody } from './response-output.ts';
import type { ResumeStore } from './resume-store.ts';
import { RouteLabelSets } from './route-label-sets.ts';
import type { StreamRelay } from './stream-relay.ts';
import type { Upstream } from './upstream.ts';
import type { VerbatimFrames } from './verbatim-frames.ts';

/** What the gateway writes a stream through: its dialect's SSE/NDJSON, or plain text. */
export interface Relay {
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

/** One stream being relayed: what the keepalive ticker and `close()` reach. */
export interface ActiveStream {
  /** Undefined until the upstream answered. */
  relay: Relay | undefined;
  /** A same-dialect stream's payloads, written as the upstream wrote them; undefined when re-encoded. */
  verbatim: { frames: VerbatimFrames; relay: StreamRelay } | undefined;
  /** Text held by a coalescing flush policy, written before the stream's ending. */
  coalescer: TextCoalescer | undefined;
  upstreamAbort: AbortController;
}

/** A generation request, parsed and routed: what answering it reads. */
export interface Call {
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
export interface Scope {
  requestId: string;
  startedAt: number;
  format: OutputFormat;
  trace: RequestTelemetry | undefined;
  /** Request fields dropped because the upstream's dialect has no counterpart (`drop_params`). */
  dropped?: string | undefined;
}

/**
 * What every request of one gateway shares: its options (with their defaults settled), metrics, label
 * sets, resume store, clock, telemetry, the open streams; and the ends every stage writes — `done()`
 * (the log line and the span, once per request) and `reject()` (an HTTP error answered before any
 * upstream call). Made once by createGateway and passed to each stage.
 */
export class GatewayContext {
  readonly options: GatewayOptions;
  readonly metrics = new GatewayMetrics();
  readonly labelSets = new RouteLabelSets();
  readonly now: () => number;
  readonly store: ResumeStore;
  readonly keepaliveMs: number;
  readonly retryMs: number;
  readonly maxBodyBytes: number;
  readonly headersWaitMs: number;
  readonly logLevel: LogLevel;
  readonly telemetry: GatewayTelemetry | undefined;
  /** The streams being relayed now. */
  readonly active = new Set<ActiveStream>();
  /** Set by `close()`: new requests get 503. */
  closing = false;

  constructor(options: GatewayOptions) {
    this.options = options;
    this.now = options.now ?? (() => performance.now());
    this.store = options.resumeStore ?? new MemoryResumeStore();
    this.keepaliveMs = options.keepaliveMs ?? 15000;
    this.retryMs = options.retryMs ?? 3000;
    this.maxBodyBytes = options.maxBodyBytes ?? 4 * 1024 * 1024;
    this.headersWaitMs = options.upstreamHeadersWaitMs ?? 1000;
    this.logLevel = options.logLevel ?? 'info';
    this.telemetry = options.telemetry === undefined ? undefined : new GatewayTelemetry(options.telemetry);
  }

  /** The request's log line (when its level is wanted) and the end of its span. */
  done(scope: Scope, end: RequestEnd): void {
    const figures = endFigures(end, scope.startedAt, this.now());
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
    const onLog = this.options.onLog;
    if (onLog === undefined) return;
    const record = requestLogRecord(end, figures, {
      requestId: scope.requestId,
      traceId: scope.trace?.traceId,
      format: scope.format,
      logLevel: this.logLevel,
      content: this.options.logContent === true,
    });
    if (record !== undefined) onLog(record);
  }

  /** A request refused before any upstream call: counted, logged, and answered in its dialect's shape. */
  reject(dialect: Dialect, scope: Scope, status: number, message: string, errorType?: string): Response {
    this.metrics.rejected.inc({ route: dialect.id, status: String(status) });
    this.done(scope, { route: dialect.id, status, outcome: 'rejected', error: message });
    return errorResponse(dialect, scope.format, status, message, errorType);
  }

  /** The stream is no longer open (counted once, however it ended). */
  finish(entry: ActiveStream, labels: Readonly<Record<string, string>>): void {
    if (this.active.delete(entry)) this.metrics.active.add(labels, -1);
  }

  /** An answer's token counts, by who counted them. */
  countTokens(labels: Record<string, string>, result: Result): void {
    const metrics = this.metrics;
    if (result.usage?.inputTokens !== undefined) metrics.inputTokens.inc(labels, result.usage.inputTokens);
    const output = result.usage?.outputTokens ?? result.metrics.outputTokens;
    if (output !== undefined && output > 0) {
      metrics.outputTokens.inc(
        this.labelSets.with(labels, 'source', result.metrics.outputTokensEstimated ? 'estimate' : 'server'),
        output,
      );
    }
  }

  /** An upstream that failed before its stream began: counted, logged, and answered as an HTTP error. */
  upstreamFailure(call: Call, error: unknown): Response {
    const { dialect, scope, labels } = call;
    this.metrics.streams.inc(this.labelSets.with(labels, 'outcome', 'error'));
    const response = upstreamFailureResponse(dialect, scope.format, error, scope.requestId);
    this.done(
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
}
