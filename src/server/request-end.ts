import type { DialectId } from '../dialects/dialect.ts';
import { type ChatRequest, renderPrompt } from '../events/chat-request.ts';
import type { Result } from '../events/result.ts';
import { errorMessage } from './gateway-errors.ts';
import type { OutputFormat } from './output-format.ts';
import { type EndState, type LogLevel, levelOf, logs, type RequestLog, redactUrls } from './request-log.ts';
import type { Upstream } from './upstream.ts';

/** How a request ended, for its log line and its span. */
export interface RequestEnd {
  route: DialectId;
  status: number;
  outcome: RequestLog['outcome'];
  upstream?: Upstream | undefined;
  upstreamDialect?: DialectId | undefined;
  chat?: ChatRequest | undefined;
  result?: Result | undefined;
  error?: unknown;
  endState?: EndState | undefined;
  ttftMs?: number | undefined;
  /** When the first content was relayed (gateway clock), for time per output token. */
  firstContentAt?: number | undefined;
  streamId?: string | undefined;
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
  if (end.endState !== undefined) record.endState = end.endState;
  if (result?.finishReason !== undefined) record.finishReason = result.finishReason;
  if (context.format === 'text') record.format = 'text';
  // A stream id replays the stream to whoever holds it (with no API keys): info lines carry only its
  // first 6 characters (enough to match lines up); the whole id only at debug level.
  if (end.streamId !== undefined)
    record.streamId = context.logLevel === 'debug' ? end.streamId : `${end.streamId.slice(0, 6)}…`;
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
