import type { StreamOutcome } from './gateway-metrics.ts';

/** Log levels, most severe first. A gateway at level `warn` writes `error` and `warn` records. */
export type LogLevel = 'error' | 'warn' | 'info' | 'debug';

export const LOG_LEVELS: readonly LogLevel[] = ['error', 'warn', 'info', 'debug'];

/** How a relayed stream ended, as logs and spans say it: `truncated` is a completed stream cut by the output cap. */
export type EndState = 'completed' | 'truncated' | 'cancelled' | 'incomplete' | 'error';

/**
 * One record per request, written when the request ends (for a stream: when the stream ends). It
 * never carries credentials or headers, and carries the prompt and the answer only when the gateway
 * was asked to (`logContent`).
 */
export interface RequestLog {
  level: LogLevel;
  /** The `x-request-id` (the client's, or generated), also in the response headers and sent upstream. */
  requestId: string;
  /** The trace this request's span belongs to, when tracing is on. */
  traceId?: string | undefined;
  route: string;
  upstream: string | undefined;
  /** The replicas that failed before the one that answered, in order (before the first byte). */
  attempts?: string[] | undefined;
  /** The stream's continuations on another replica after a failure mid-answer. */
  continuations?: ContinuationRecord[] | undefined;
  status: number;
  outcome: StreamOutcome | 'rejected' | 'resumed' | 'non-stream';
  /** For streams that reached the upstream: how they ended (`truncated` = finish reason `length`). */
  endState?: EndState | undefined;
  /** The unified finish reason (`stop`, `length`, `tool-calls`…). */
  finishReason?: string | undefined;
  model: string | undefined;
  /** `text` when the client asked for plain-text output. */
  format?: 'text' | undefined;
  /** The resumable stream's id (SSE routes): its first 6 characters and `…`, whole at debug level. */
  streamId?: string | undefined;
  ttftMs: number | undefined;
  /** Time per output token after the first, ms. */
  tpotMs?: number | undefined;
  durationMs: number;
  inputTokens: number | undefined;
  outputTokens: number | undefined;
  /** True when `outputTokens` is counted from chunks because the upstream reported no count. */
  outputTokensEstimated?: boolean | undefined;
  error: string | undefined;
  /** At level `debug` only: how the upstream stream went. */
  debug?:
    | {
        upstreamDialect: string | undefined;
        upstreamTtftMs: number | undefined;
        /** Content-carrying frames read from the upstream. */
        chunks: number;
        keepalives: number;
        upstreamBytes: number;
        incomplete: string | undefined;
      }
    | undefined;
  /** Only with `logContent`: the prompt as sent upstream, rendered as text. */
  prompt?: string | undefined;
  /** Only with `logContent`: the answer text relayed. */
  answer?: string | undefined;
}

/** Whether a record at `level` is written by a logger set to `threshold`. */
export function logs(threshold: LogLevel, level: LogLevel): boolean {
  return LOG_LEVELS.indexOf(level) <= LOG_LEVELS.indexOf(threshold);
}

/** The level of a request's record: failures are errors, refusals and truncations warnings. */
export function levelOf(outcome: RequestLog['outcome'], status: number, endState?: EndState): LogLevel {
  if (status >= 500 || outcome === 'error' || outcome === 'incomplete') return 'error';
  if (status >= 400 || outcome === 'rejected' || endState === 'truncated') return 'warn';
  return 'info';
}

const URL_IN_TEXT = /\b([a-z][a-z0-9+.-]*:\/\/)([^\s/?#@]*@)?([^\s/?#]*)([^\s?#]*)(\?[^\s#]*)?(#\S*)?/gi;

/**
 * Removes what may be a secret from URLs inside a message (any scheme: http, redis…): `user:password@`
 * and the query string (`?api_key=…`). Error messages quote upstream and store URLs, and logs and
 * clients must never see credentials.
 */
export function redactUrls(text: string): string {
  return text.replace(
    URL_IN_TEXT,
    (
      _all,
      scheme: string,
      userinfo: string | undefined,
      host: string,
      path: string,
      query: string | undefined,
    ) => `${scheme}${userinfo === undefined ? '' : '***@'}${host}${path}${query === undefined ? '' : '?***'}`,
  );
}

/** One continuation of a stream (its log line's `continuations`). */
export interface ContinuationRecord {
  /** The replica that failed, and the one asked to go on. */
  from: string;
  to: string | undefined;
  /**
   * `tokens`: token-exact (a llama.cpp token-id prompt); `prefill`: the text so far as the assistant's
   * (or after a bare prompt); `restart`: nothing of the answer had gone out, the request went as it was.
   */
  path: 'tokens' | 'prefill' | 'restart' | undefined;
  /** Output tokens the stream had before the seam. */
  afterTokens: number;
  /** From the failure to the continuation's first event written (ms); undefined when none came. */
  gapMs?: number | undefined;
  result: 'continued' | 'failed' | 'refused';
  /** Why it was refused or failed. */
  reason?: string | undefined;
}
