import type { MidStreamError } from '../dialects/dialect.ts';
import type { Result } from '../events/result.ts';
import type { StreamEvent } from '../events/stream-event.ts';
import type { GatewayOptions } from './gateway-options.ts';
import type { OutputFormat } from './http/output-format.ts';
import type { DirectBody } from './http/response-output.ts';
import { GatewayMetrics } from './observability/gateway-metrics.ts';
import { GatewayTelemetry, type RequestTelemetry } from './observability/gateway-telemetry.ts';
import type { ContinuationRecord, LogLevel } from './observability/request-log.ts';
import { RouteLabelSets } from './observability/route-label-sets.ts';
import { type Lease, UpstreamPool } from './pool/upstream-pool.ts';
import type { TextCoalescer } from './relay/coalescer.ts';
import type { StreamRelay } from './relay/stream-relay.ts';
import type { VerbatimFrames } from './relay/verbatim-frames.ts';
import { MemoryResumeStore } from './resume/memory-resume-store.ts';
import type { ResumeStore } from './resume/resume-store.ts';

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
  /** A comment on the wire where the stream's framing has them (SSE), for whoever reads the raw bytes. */
  note(text: string): void;
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
  /** The request's hold on the replica answering it: released once, when the request ends. */
  lease?: Lease | undefined;
  /** The replica answering the request, by name (`x-tokenwire-upstream`). */
  upstream?: string | undefined;
  /** The replicas tried before the one answering (named in `x-tokenwire-attempts`). */
  attempts?: string[] | undefined;
  /** The stream's continuations on another replica after its upstream failed mid-answer, in order. */
  continuations?: ContinuationRecord[] | undefined;
}

/**
 * What every request of one gateway shares: its options (with their defaults settled), metrics, label
 * sets, resume store, clock, telemetry, the open streams. Made once by createGateway and passed to each
 * stage; it imports no stage (the stages' ends are in request/end-request.ts, called by the stages).
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
  /** The upstreams, grouped by model, with their health and load: which one answers a request. */
  readonly pool: UpstreamPool;
  /** Further replicas a request may go to before its first byte reaches the client. */
  readonly retries: number;
  /** How long since a request arrived its failures may still go to another replica (ms). */
  readonly retryBudgetMs: number;
  /** Whether streams continue on another replica after a mid-answer failure, unless a request says. */
  readonly continueOnFailure: boolean;
  /** The most continuations per stream. */
  readonly continueMax: number;
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
    this.pool = new UpstreamPool(options.upstreams, { balance: options.balance });
    this.retries = options.retries ?? 2;
    this.retryBudgetMs = options.retryBudgetMs ?? 30_000;
    this.continueOnFailure = options.continueOnFailure === true;
    this.continueMax = options.continueMax ?? 1;
    const now = Date.now();
    for (const name of options.downAtStart ?? [])
      this.pool.replicas.find((replica) => replica.name === name)?.health.probed('down', now);
  }

  /** The stream is no longer open (counted once, however it ended). */
  finish(entry: ActiveStream, labels: Readonly<Record<string, string>>): void {
    if (this.active.delete(entry)) this.metrics.active.add(labels, -1);
  }
}
