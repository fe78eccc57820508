import type { DialectId } from '../dialects/dialect.ts';
import type { GatewayTelemetryOptions } from './observability/gateway-telemetry.ts';
import type { LogLevel, RequestLog } from './observability/request-log.ts';
import type { BalancePolicy } from './pool/choose-replica.ts';
import type { FlushPolicy } from './relay/coalescer.ts';
import type { ResumeStore } from './resume/resume-store.ts';
import type { Upstream } from './upstream/upstream.ts';

/** What `createGateway()` takes (create-gateway.ts); read by every stage through `GatewayContext.options`. */
export interface GatewayOptions {
  /**
   * The servers behind the gateway. A request goes to one of those that serve its model, chosen by
   * `balance` among those healthy and under their stream cap (server/pool/).
   */
  upstreams: readonly Upstream[];
  /** How a model's replicas share its requests (`--balance`). Default `least-busy`. */
  balance?: BalancePolicy | undefined;
  /** Further replicas tried before the first byte reaches the client (`--retries`). Default 2. */
  retries?: number | undefined;
  /**
   * No further replica is tried once the request has been waiting this long (ms since it arrived), so a
   * client is never held by a chain of slow failures. Default 30000.
   */
  retryBudgetMs?: number | undefined;
  /**
   * When the upstream serving a stream fails after its first event (cut, a 5xx-class error in the
   * stream, a stall past its timeout), another replica of the model goes on from where the answer
   * stopped, under the same client stream (`--continue-on-failure`; a request's own
   * `x-tokenwire-continue: on|off` wins). Off by default. docs/gateway.md "When a server dies mid-answer".
   */
  continueOnFailure?: boolean | undefined;
  /** The most continuations one stream gets (`--continue-max`). Default 1. */
  continueMax?: number | undefined;
  /** Names of upstreams found down at start (their probe failed): the pool starts them as down. */
  downAtStart?: readonly string[] | undefined;
  /**
   * How often each upstream's own health route is asked (and, with `balance: 'load'`, its load read).
   * Default 5000 with more than one upstream, none with one; 0 turns the checks off.
   */
  healthIntervalMs?: number | undefined;
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
