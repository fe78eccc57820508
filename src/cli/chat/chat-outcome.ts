import type { Result } from '../../events/result.ts';
import type { Style } from '../cli-io.ts';

/** How an answer ended, as `tokenwire chat` reports it. */
export type ChatStatus = 'finished' | 'truncated' | 'incomplete' | 'cancelled';

/**
 * Exit statuses of `tokenwire chat`. 1 (the request failed before any answer: HTTP error, refused
 * connection) and 2 (usage) are the CLI's general codes; 130 is what shells report for Ctrl-C.
 */
export const CHAT_EXIT = {
  finished: 0,
  failed: 1,
  usage: 2,
  incomplete: 3,
  truncated: 4,
  cancelled: 130,
} as const;

export interface ChatOutcome {
  status: ChatStatus;
  exitCode: number;
  /** One line: what happened, never "finished" for a cut-off or broken answer. */
  headline: string;
}

const INCOMPLETE_WORDS: Record<string, string> = {
  'connection-closed': 'connection lost',
  'idle-timeout': 'idle timeout',
  'first-byte-timeout': 'timed out',
  'total-timeout': 'timed out',
  'server-error': 'server error',
  malformed: 'malformed stream',
};

/** Classifies a Result: cancelled (aborted), incomplete (anything else unfinished), truncated, finished. */
export function chatOutcome(result: Result): ChatOutcome {
  // "Partial" only when something was shown: with nothing above, say that nothing came.
  const shown = result.text !== '' || result.reasoning !== '' || result.toolCalls.length > 0;
  const partial = shown ? 'The answer above is partial.' : 'No answer text arrived.';
  if (result.incomplete === 'aborted') {
    return {
      status: 'cancelled',
      exitCode: CHAT_EXIT.cancelled,
      headline: `CANCELLED: stopped by Ctrl-C; the connection was closed, so the server stops generating. ${partial}`,
    };
  }
  if (!result.complete) {
    const reason = result.incomplete ?? 'connection-closed';
    const detail = (result.error?.message ?? '').replace(/\.+$/, '');
    return {
      status: 'incomplete',
      exitCode: CHAT_EXIT.incomplete,
      headline: `INCOMPLETE (${INCOMPLETE_WORDS[reason] ?? reason}): ${detail || 'the stream ended before its terminal event'}. ${partial}`,
    };
  }
  if (result.truncated) {
    // llama-server's Responses route says "completed" when max_output_tokens cut the answer: the
    // client read the cut from the output count, and the footer says why it disagrees with the server.
    const said =
      result.rawFinishReason === 'completed'
        ? 'the server said "completed", but the output count reached the cap'
        : `finish ${JSON.stringify(result.rawFinishReason ?? 'length')}`;
    return {
      status: 'truncated',
      exitCode: CHAT_EXIT.truncated,
      headline: `TRUNCATED: the answer hit the output cap (${said}); raise --max-tokens for the rest.`,
    };
  }
  const raw = result.rawFinishReason;
  const word =
    raw !== undefined && raw !== null && raw !== result.finishReason
      ? `${result.finishReason ?? 'stop'}, server said ${JSON.stringify(raw)}`
      : (result.finishReason ?? 'stop');
  return { status: 'finished', exitCode: CHAT_EXIT.finished, headline: `finished (${word})` };
}

/** Output tokens per second, and where the figure comes from. */
export interface TokenRate {
  tokensPerSecond: number;
  /** `server`: the server's own decode timing; `client`: measured here over the span after the first token. */
  source: 'server' | 'client';
}

/**
 * The decode speed: the server's own figure when it reports its generation time (llama.cpp
 * `predicted_ms`, Ollama `eval_duration`, the simulator's timings) — the client's clock on a short
 * answer mostly measures network and flush batching — else the client's, over the span after the first
 * token. Undefined when neither can be had.
 */
export function tokenRate(result: Result): TokenRate | undefined {
  const timings = result.timings;
  const tokens = timings?.evalTokens ?? result.usage?.outputTokens;
  if (timings?.evalMs !== undefined && timings.evalMs > 0 && tokens !== undefined && tokens > 0)
    return { tokensPerSecond: (tokens * 1000) / timings.evalMs, source: 'server' };
  const measured = result.metrics.outputTokensPerSecond;
  return measured === undefined ? undefined : { tokensPerSecond: measured, source: 'client' };
}

/** The figures line: TTFT, tokens per second, output tokens (flagged when estimated), total time. */
export function chatFigures(result: Result): string {
  const m = result.metrics;
  const parts: string[] = [];
  parts.push(m.ttftMs === undefined ? 'no text' : `TTFT ${formatMs(m.ttftMs)}`);
  const rate = tokenRate(result);
  if (rate !== undefined)
    parts.push(
      `${rate.tokensPerSecond.toFixed(1)} tokens/s (${rate.source === 'server' ? "server's timing" : 'after the first token'})`,
    );
  if (m.outputTokens !== undefined) {
    parts.push(
      m.outputTokensEstimated
        ? `~${m.outputTokens} output tokens (estimated: the server sent no count)`
        : `${m.outputTokens} output tokens`,
    );
  }
  if (m.totalMs !== undefined) parts.push(`${formatMs(m.totalMs)} total`);
  if (result.dialect !== undefined) parts.push(result.dialect);
  return parts.join(' · ');
}

/** The footer lines `tokenwire chat` prints on stderr after the answer. */
export function chatFooter(result: Result, style: Style): string {
  const outcome = chatOutcome(result);
  const colour =
    outcome.status === 'finished' ? style.green : outcome.status === 'truncated' ? style.yellow : style.red;
  const mark = outcome.status === 'finished' ? '[done]' : '[!]';
  return `${colour(`${mark} ${outcome.headline}`)}\n${style.dim(`    ${chatFigures(result)}`)}\n`;
}

/** `12.3 ms`, `1.24 s`. */
export function formatMs(ms: number): string {
  if (ms < 1000) return `${ms < 10 ? ms.toFixed(1) : Math.round(ms)} ms`;
  return `${(ms / 1000).toFixed(2)} s`;
}
