import type { Result } from '../events/result.ts';
import type { Timings } from '../events/usage.ts';

/**
 * How one request ended, as the bench counts it. `completed` and `truncated` both had their dialect's
 * terminal event (a truncated one stopped at the output cap: `finish_reason: length`); `incomplete`
 * got a response but no terminal event (cut, timeout, server error event, malformed); `failed` got no
 * stream at all (refused connection, HTTP error status). An incomplete Result is never counted as
 * completed.
 */
export type RequestStatus = 'completed' | 'truncated' | 'incomplete' | 'failed';

/**
 * Where the time to first token went, when the server reports its own timings (Ollama's
 * `load_duration` / `prompt_eval_duration` / `eval_duration`, llama.cpp's `timings.prompt_ms` /
 * `predicted_ms`). All in ms; the parts add up to the TTFT measured from the intended send time:
 *
 *   TTFT = schedule lag + queue + load + prompt eval + first-token decode
 *
 * - `firstTokenMs`: one decode step, estimated as `evalMs / evalTokens` (0 when not reported);
 * - `loadMs`: undefined when the server reports none (llama.cpp, TGI): unknown, never shown as 0;
 * - `queueMs`: the rest, `TTFT from the actual send - load - prompt eval - first-token decode`, floored
 *   at 0: time waiting in the server's queue plus the network both ways — whatever the server's own
 *   timings do not explain. The schedule lag (the bench's own delay) is reported on its own.
 */
export interface TtftBreakdown {
  queueMs: number;
  /** Undefined when the server reports no load time (llama.cpp, TGI): unknown, not zero. */
  loadMs?: number | undefined;
  promptEvalMs: number;
  firstTokenMs: number;
}

/** The figures of one request, every time in ms measured from its intended send time. */
export interface RequestFigures {
  status: RequestStatus;
  /** Actual send - intended send: the bench's own scheduling delay. */
  lagMs: number;
  ttfbMs?: number | undefined;
  ttftMs?: number | undefined;
  /** Until the stream ended (or failed). */
  e2eMs: number;
  /** From the server's usage when it sent one, else the content chunks (flagged). */
  outputTokens: number;
  tokensEstimated: boolean;
  inputTokens?: number | undefined;
  /** (E2E - TTFT) / (output tokens - 1); undefined with fewer than 2 tokens. */
  tpotMs?: number | undefined;
  /** Decode speed seen by this user: 1000 / TPOT. */
  tokensPerSecond?: number | undefined;
  chunkCount: number;
  breakdown?: TtftBreakdown | undefined;
}

/** TPOT, the decode time per token after the first: (E2E - TTFT) / (tokens - 1). */
export function tpotMs(e2eMs: number, ttftMs: number, outputTokens: number): number | undefined {
  if (!(outputTokens > 1) || !Number.isFinite(ttftMs) || !Number.isFinite(e2eMs)) return undefined;
  return Math.max(0, e2eMs - ttftMs) / (outputTokens - 1);
}

/**
 * Splits a TTFT (measured from the actual send) by the server's timings; undefined when the server
 * reported neither a load nor a prompt evaluation time.
 */
export function ttftBreakdown(
  ttftFromSendMs: number,
  timings: Timings | undefined,
): TtftBreakdown | undefined {
  if (timings === undefined) return undefined;
  if (timings.loadMs === undefined && timings.promptEvalMs === undefined) return undefined;
  // Ollama leaves `load_duration` out when it is 0 (Go's omitempty) but always sends `total_duration`:
  // there, absent means 0. Elsewhere (llama.cpp, TGI) no load time is reported at all: unknown.
  const ollama = typeof timings.raw === 'object' && timings.raw !== null && 'total_duration' in timings.raw;
  const loadMs = timings.loadMs ?? (ollama ? 0 : undefined);
  const promptEvalMs = timings.promptEvalMs ?? 0;
  const firstTokenMs =
    timings.evalMs !== undefined && timings.evalTokens !== undefined && timings.evalTokens > 0
      ? timings.evalMs / timings.evalTokens
      : 0;
  // An unreported load time stays in the queue figure (it is part of what the timings do not explain).
  const queueMs = Math.max(0, ttftFromSendMs - (loadMs ?? 0) - promptEvalMs - firstTokenMs);
  const split: TtftBreakdown = { queueMs, promptEvalMs, firstTokenMs };
  if (loadMs !== undefined) split.loadMs = loadMs;
  return split;
}

/** The status of a Result: only a complete one counts as completed. */
export function statusOf(result: Result): RequestStatus {
  if (!result.complete) return 'incomplete';
  return result.truncated ? 'truncated' : 'completed';
}

/**
 * The figures of one finished stream. `lagMs` (actual send - intended send) is added to the client's
 * times, which count from the actual send: a late send is the bench's delay and counts against it,
 * never hidden (the coordinated-omission mistake).
 */
export function requestFigures(result: Result, lagMs: number): RequestFigures {
  const m = result.metrics;
  const figures: RequestFigures = {
    status: statusOf(result),
    lagMs,
    e2eMs: lagMs + (m.totalMs ?? 0),
    outputTokens: m.outputTokens ?? m.chunkCount,
    tokensEstimated: m.outputTokensEstimated,
    chunkCount: m.chunkCount,
  };
  if (m.ttfbMs !== undefined) figures.ttfbMs = lagMs + m.ttfbMs;
  if (m.inputTokens !== undefined) figures.inputTokens = m.inputTokens;
  if (m.ttftMs !== undefined) {
    figures.ttftMs = lagMs + m.ttftMs;
    const tpot = tpotMs(figures.e2eMs, figures.ttftMs, figures.outputTokens);
    if (tpot !== undefined) {
      figures.tpotMs = tpot;
      if (tpot > 0) figures.tokensPerSecond = 1000 / tpot;
    }
    const breakdown = ttftBreakdown(m.ttftMs, result.timings);
    if (breakdown !== undefined) figures.breakdown = breakdown;
  }
  return figures;
}
