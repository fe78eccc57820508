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
  if (result.incomplete === 'aborted') {
    return {
      status: 'cancelled',
      exitCode: CHAT_EXIT.cancelled,
      headline:
        'CANCELLED: stopped by Ctrl-C; the connection was closed, so the server stops generating. The answer above is partial.',
    };
  }
  if (!result.complete) {
    const reason = result.incomplete ?? 'connection-closed';
    const detail = result.error?.message ?? '';
    return {
      status: 'incomplete',
      exitCode: CHAT_EXIT.incomplete,
      headline: `INCOMPLETE (${INCOMPLETE_WORDS[reason] ?? reason}): ${detail || 'the stream ended before its terminal event'}. The answer above is partial.`,
    };
  }
  if (result.truncated) {
    return {
      status: 'truncated',
      exitCode: CHAT_EXIT.truncated,
      headline: `TRUNCATED: the answer hit the output cap (finish ${JSON.stringify(result.rawFinishReason ?? 'length')}); raise --max-tokens for the rest.`,
    };
  }
  const raw = result.rawFinishReason;
  const word =
    raw !== undefined && raw !== null && raw !== result.finishReason
      ? `${result.finishReason ?? 'stop'}, server said ${JSON.stringify(raw)}`
      : (result.finishReason ?? 'stop');
  return { status: 'finished', exitCode: CHAT_EXIT.finished, headline: `finished (${word})` };
}

/** The figures line: TTFT, tokens per second, output tokens (flagged when estimated), total time. */
export function chatFigures(result: Result): string {
  const m = result.metrics;
  const parts: string[] = [];
  parts.push(m.ttftMs === undefined ? 'no text' : `TTFT ${formatMs(m.ttftMs)}`);
  if (m.outputTokensPerSecond !== undefined) parts.push(`${m.outputTokensPerSecond.toFixed(1)} tokens/s`);
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
