import type { Dialect, MidStreamError } from '../dialects/dialect.ts';
import type { Result } from '../events/result.ts';
import type { StreamEvent } from '../events/stream-event.ts';
import type { TextCoalescer } from './coalescer.ts';
import type { GatewayOptions } from './create-gateway.ts';
import { countTokens, endRequest, type RequestEnd, rejectRequest, upstreamFailed } from './end-request.ts';
import { GatewayMetrics } from './gateway-metrics.ts';
import { GatewayTelemetry, type RequestTelemetry } from './gateway-telemetry.ts';
import { MemoryResumeStore } from './memory-resume-store.ts';
import type { OutputFormat } from './output-format.ts';
import type { LogLevel } from './request-log.ts';
import type { DirectBody } from './response-output.ts';
import type { ResumeStore } from './resume-store.ts';
import { RouteLabelSets } from './route-label-sets.ts';
import type { StreamRelay } from './stream-relay.ts';
import type { Call } from './upstream-call.ts';
import type { VerbatimFrames } from './verbatim-frames.ts';

export type { Call } from './upstream-call.ts';

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
 * sets, resume store, clock, telemetry, the open streams; and, as methods, the ends every stage writes
 * (end-request.ts): `done()` (the span and the log line, once per request), `reject()` (an HTTP error
 * answered before any upstream call), `upstreamFailure()`. Made once by createGateway and passed to
 * each stage.
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

  /** The request's end: its span and log line (end-request.ts), once per request. */
  done(scope: Scope, end: RequestEnd): void {
    endRequest(this, scope, end);
  }

  /** A request refused before any upstream call (end-request.ts). */
  reject(dialect: Dialect, scope: Scope, status: number, message: string, errorType?: string): Response {
    return rejectRequest(this, dialect, scope, status, message, errorType);
  }

  /** The stream is no longer open (counted once, however it ended). */
  finish(entry: ActiveStream, labels: Readonly<Record<string, string>>): void {
    if (this.active.delete(entry)) this.metrics.active.add(labels, -1);
  }

  /** An answer's token counts, by who counted them (end-request.ts). */
  countTokens(labels: Record<string, string>, result: Result): void {
    countTokens(this, labels, result);
  }

  /** An upstream that failed before its stream began (end-request.ts). */
  upstreamFailure(call: Call, error: unknown): Response {
    return upstreamFailed(this, call, error);
  }
}
