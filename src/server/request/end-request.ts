import type { Dialect } from '../../dialects/dialect.ts';
import { renderPrompt } from '../../events/chat-request.ts';
import type { Result } from '../../events/result.ts';
import type { GatewayContext, Scope } from '../gateway-context.ts';
import { errorMessage, errorResponse, upstreamFailureResponse } from '../http/gateway-errors.ts';
import type { OutputFormat } from '../http/output-format.ts';
import { abbreviatedStreamId } from '../http/stream-id.ts';
import {
  type ContinuationRecord,
  type LogLevel,
  levelOf,
  logs,
  type RequestLog,
  redactUrls,
} from '../observability/request-log.ts';
import { type AttemptFailure, attemptFailure } from '../pool/attempt-failure.ts';
import { callOutcome } from '../pool/call-outcome.ts';
import type { Call } from './call.ts';
import type { RequestEnd } from './request-end.ts';

/**
 * The end of a request (the stage after the answer): its span ended with the request's figures, and its
 * log line written when the logger's level wants it. Called once per request by whichever stage answered
 * it — a refusal (`rejectRequest`), an upstream failure before streaming (`upstreamFailed`), a whole
 * answer, or a stream's ending (relay-stream.ts).
 */
export function endRequest(ctx: GatewayContext, scope: Scope, end: RequestEnd): void {
  const lease = scope.lease;
  if (lease !== undefined) {
    // The replica hears how its call went; a failure of the gateway's own (no upstream in the end
    // record) is not the replica's.
    scope.lease = undefined;
    lease.release(
      end.upstream === undefined && end.result === undefined
        ? 'ok'
        : callOutcome(end.status, end.error, end.result),
    );
  }
  const figures = endFigures(end, scope.startedAt, ctx.now());
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
  const onLog = ctx.options.onLog;
  if (onLog === undefined) return;
  const record = requestLogRecord(end, figures, {
    requestId: scope.requestId,
    traceId: scope.trace?.traceId,
    attempts: scope.attempts,
    continuations: scope.continuations,
    format: scope.format,
    logLevel: ctx.logLevel,
    content: ctx.options.logContent === true,
  });
  if (record !== undefined) onLog(record);
}

/** A request refused before any upstream call: counted, ended, and answered in its dialect's shape. */
export function rejectRequest(
  ctx: GatewayContext,
  dialect: Dialect,
  scope: Scope,
  status: number,
  message: string,
  errorType?: string,
): Response {
  ctx.metrics.rejected.inc({ route: dialect.id, status: String(status) });
  endRequest(ctx, scope, { route: dialect.id, status, outcome: 'rejected', error: message });
  return errorResponse(dialect, scope.format, status, message, errorType);
}

/** An upstream that failed before its stream began: counted, ended, and answered as an HTTP error. */
export function upstreamFailed(ctx: GatewayContext, call: Call, error: unknown): Response {
  const retry = anotherReplica(ctx, call, error);
  if (retry !== undefined) return retry;
  const { dialect, scope, labels } = call;
  ctx.metrics.streams.inc(ctx.labelSets.with(labels, 'outcome', 'error'));
  const response = upstreamFailureResponse(dialect, scope.format, error, scope.requestId);
  endRequest(
    ctx,
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

/**
 * Answered by the request stage instead of a failure when the request goes to another replica: the
 * answering stage returns it, and create-gateway.ts routes the request again (to `call.routing.next`).
 * Never sent.
 */
export const TRY_ANOTHER_REPLICA: Response = new Response(null, { status: 599 });

/**
 * Whether a failure before the first byte reached the client sends the request to another replica:
 * the failure is one another replica may not have (`attemptFailure`: refused, reset, a connect timeout,
 * 429/502/503/504), the request has attempts left (`retries`), its client is still there, and another
 * replica of its model can take it now. Then the failed replica hears how its call went (a 429's or
 * 503's `Retry-After` keeps it out that long), the attempt is named for `x-tokenwire-attempts` and
 * counted, and the next replica's lease waits in `call.routing.next`.
 */
function anotherReplica(ctx: GatewayContext, call: Call, error: unknown): Response | undefined {
  return nextReplica(ctx, call, attemptFailure(error)) ? TRY_ANOTHER_REPLICA : undefined;
}

/**
 * The next replica for a request whose attempt failed before any of its events reached the client
 * (`anotherReplica`; relay-stream.ts after its 200 went out with only keepalives): true when there is
 * one, its lease waiting in `call.routing.next`, the failed replica told how its call went.
 */
export function nextReplica(ctx: GatewayContext, call: Call, failure: AttemptFailure | undefined): boolean {
  const { scope, routing } = call;
  const lease = scope.lease;
  if (failure === undefined || !failure.retryable || lease === undefined) return false;
  if ((scope.attempts?.length ?? 0) >= ctx.retries || call.request.signal.aborted) return false;
  if (ctx.now() - scope.startedAt > ctx.retryBudgetMs) return false;
  routing.tried.add(lease.replica);
  const next = ctx.pool.acquire(routing.model, call.dialect.id, routing.key, routing.tried);
  if (next === undefined) return false;
  scope.lease = undefined;
  lease.release(failure.outcome);
  if (failure.retryAfterMs !== undefined) lease.replica.health.backOff(failure.retryAfterMs, Date.now());
  if (scope.attempts === undefined) scope.attempts = [];
  scope.attempts.push(lease.replica.name);
  ctx.metrics.retries.inc({ route: call.dialect.id, upstream: lease.replica.name, outcome: failure.outcome });
  routing.next = next;
  return true;
}

/** An answer's token counts, by who counted them. */
export function countTokens(ctx: GatewayContext, labels: Record<string, string>, result: Result): void {
  const metrics = ctx.metrics;
  if (result.usage?.inputTokens !== undefined) metrics.inputTokens.inc(labels, result.usage.inputTokens);
  const output = result.usage?.outputTokens ?? result.metrics.outputTokens;
  if (output !== undefined && output > 0) {
    metrics.outputTokens.inc(
      ctx.labelSets.with(labels, 'source', result.metrics.outputTokensEstimated ? 'estimate' : 'server'),
      output,
    );
  }
}

/** The figures of an ended request that its span and its log line share. */
export interface EndFigures {
  durationMs: number;
  outputTokens: number | undefined;
  /** True when the output tokens were counted from chunks (the upstream reported none). */
  estimated: boolean | undefined;
  tpotMs: number | undefined;
}

export function endFigures(end: RequestEnd, startedAt: number, at: number): EndFigures {
  const result = end.result;
  const outputTokens =
    result === undefined ? undefined : (result.usage?.outputTokens ?? result.metrics.outputTokens);
  const estimated = result === undefined ? undefined : result.usage?.outputTokens === undefined;
  let tpotMs: number | undefined;
  if (end.firstContentAt !== undefined && outputTokens !== undefined && outputTokens > 1)
    tpotMs = (at - end.firstContentAt) / (outputTokens - 1);
  return { durationMs: at - startedAt, outputTokens, estimated, tpotMs };
}

export interface RecordContext {
  requestId: string;
  traceId: string | undefined;
  /** The replicas that failed before the one that answered. */
  attempts?: string[] | undefined;
  continuations?: ContinuationRecord[] | undefined;
  format: OutputFormat;
  logLevel: LogLevel;
  /** Put the prompt and the answer in (`logContent`). */
  content: boolean;
}

/** The request's log record, or undefined when its level is below the logger's. */
export function requestLogRecord(
  end: RequestEnd,
  figures: EndFigures,
  context: RecordContext,
): RequestLog | undefined {
  const level = levelOf(end.outcome, end.status, end.endState);
  if (!logs(context.logLevel, level)) return undefined;
  const result = end.result;
  const failure =
    end.error ??
    (result !== undefined && !result.complete && end.endState !== 'cancelled'
      ? result.error?.message
      : undefined);
  const record: RequestLog = {
    level,
    requestId: context.requestId,
    route: end.route,
    upstream: end.upstream?.name,
    status: end.status,
    outcome: end.outcome,
    model: end.chat?.model,
    ttftMs: end.ttftMs,
    durationMs: figures.durationMs,
    inputTokens: result?.usage?.inputTokens,
    outputTokens: figures.outputTokens,
    error: failure === undefined ? undefined : redactUrls(errorMessage(failure)),
  };
  if (context.traceId !== undefined) record.traceId = context.traceId;
  if (context.attempts !== undefined) record.attempts = context.attempts;
  if (context.continuations !== undefined) record.continuations = context.continuations;
  if (end.endState !== undefined) record.endState = end.endState;
  if (result?.finishReason !== undefined) record.finishReason = result.finishReason;
  if (context.format === 'text') record.format = 'text';
  // A stream id replays the stream to whoever holds it (with no API keys): info lines carry only its
  // first 6 characters (enough to match lines up); the whole id only at debug level.
  if (end.streamId !== undefined)
    record.streamId = context.logLevel === 'debug' ? end.streamId : abbreviatedStreamId(end.streamId);
  if (figures.tpotMs !== undefined) record.tpotMs = figures.tpotMs;
  if (figures.estimated !== undefined) record.outputTokensEstimated = figures.estimated;
  if (context.logLevel === 'debug' && result !== undefined) {
    record.debug = {
      upstreamDialect: end.upstreamDialect,
      upstreamTtftMs: result.metrics.ttftMs,
      chunks: result.metrics.chunkCount,
      keepalives: result.metrics.keepaliveCount,
      upstreamBytes: result.metrics.bytes,
      incomplete: result.incomplete,
    };
  }
  if (context.content) {
    if (end.chat !== undefined) record.prompt = renderPrompt(end.chat);
    if (result !== undefined) record.answer = result.text;
  }
  return record;
}
