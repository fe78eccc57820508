import type { IncompleteReason, Result } from '../src/events/result.ts';

/**
 * How an answer ended, as the page shows it. Only `finished` is a finished answer; every other kind
 * gets a banner, so a cut-off or broken answer is never presented as done.
 */
export type OutcomeKind = 'finished' | 'truncated' | 'incomplete' | 'cancelled' | 'failed';

export interface Outcome {
  kind: OutcomeKind;
  /** A short headline ("Finished", "Incomplete: connection lost"). */
  title: string;
  /** One or two sentences: what happened, in the client's and the server's words. */
  detail: string;
}

const REASON_TITLES: Record<IncompleteReason, string> = {
  'connection-closed': 'connection lost',
  'first-byte-timeout': 'first-byte timeout',
  'idle-timeout': 'idle timeout',
  'total-timeout': 'total timeout',
  aborted: 'aborted',
  'server-error': 'server error',
  malformed: 'malformed stream',
};

const PARTIAL = 'The text below is partial: it is not a finished answer.';

/** The outcome of a stream that got a response (its Result). */
export function describeResult(result: Result): Outcome {
  const raw = result.rawFinishReason;
  const said = typeof raw === 'string' && raw !== result.finishReason ? ` (the server said "${raw}")` : '';
  if (!result.complete) {
    if (result.incomplete === 'aborted') {
      return { kind: 'cancelled', title: 'Cancelled', detail: `You stopped this answer. ${PARTIAL}` };
    }
    const reason = result.incomplete === undefined ? 'unknown reason' : REASON_TITLES[result.incomplete];
    const message = result.error?.message;
    return {
      kind: 'incomplete',
      title: `Incomplete: ${reason}`,
      detail: `${message === undefined ? '' : `${message.replace(/\.\s*$/, '')}. `}${PARTIAL}`,
    };
  }
  switch (result.finishReason) {
    case 'length':
      return {
        kind: 'truncated',
        title: 'Truncated by the output limit',
        detail: `The answer was cut off by the output cap (finish reason length${said}). Raise max tokens to get the rest.`,
      };
    case 'error':
      return {
        kind: 'incomplete',
        title: 'Incomplete: ended by a server error',
        detail: `The server ended the generation with an error (finish reason error${said}). ${PARTIAL}`,
      };
    case 'content-filter':
      return {
        kind: 'truncated',
        title: 'Stopped by a content filter',
        detail: `A filter on the server stopped the answer (finish reason content-filter${said}).`,
      };
    default:
      return {
        kind: 'finished',
        title: 'Finished',
        detail: `The stream ended with its terminal event (finish reason ${result.finishReason ?? 'not given'}${said}).`,
      };
  }
}

/** The outcome of a request that got no stream: an HTTP error, a refused connection, a Stop before the response. */
export function describeFailure(error: unknown): Outcome {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  const message = error instanceof Error ? error.message : String(error);
  if (code === 'aborted') {
    return {
      kind: 'cancelled',
      title: 'Cancelled',
      detail: 'You stopped the request before any answer arrived.',
    };
  }
  return { kind: 'failed', title: 'Request failed', detail: message };
}

/**
 * How a stream ended, as every part of the page shows it: the wire column's last row, the wire summary,
 * and (through `describeResult`) the banner and the status line. The one source is the client's
 * `Result` (`complete` is true only when the dialect's terminal event came); `[DONE]`, which OpenAI's
 * routes send after the finish, is reported beside it as a fact, never as the verdict (wire-formats.md:
 * `[DONE]` is optional; the finish is the terminal marker).
 */
export interface Ending {
  /** The terminal event came (the Result is complete). */
  terminal: boolean;
  /** The wire column's last row ("terminal event: …", "no terminal event (… never came)"). */
  wire: string;
  /** The same in a few words, for the wire summary. */
  summary: string;
  /** `[DONE]` after the finish, when the dialect sends one: a note, never the verdict. */
  note?: string | undefined;
}

/**
 * `terminalEvent` is the dialect's words for its terminal event (`Dialect.terminalEvent`); `sawDone`
 * whether `[DONE]` arrived, for the dialects whose streams end with it (undefined for the others).
 */
export function describeEnding(
  result: Result | undefined,
  terminalEvent: string,
  sawDone: boolean | undefined,
): Ending {
  if (result === undefined) return { terminal: false, wire: 'no stream', summary: 'no stream' };
  const note =
    sawDone === undefined ? undefined : sawDone ? '[DONE] came' : 'no [DONE] (optional after the finish)';
  if (result.complete) {
    const ending: Ending = {
      terminal: true,
      wire: `terminal event: ${terminalEvent}`,
      summary: 'complete: terminal event received',
    };
    if (note !== undefined) ending.note = note;
    return ending;
  }
  const reason = result.incomplete === undefined ? 'unknown reason' : REASON_TITLES[result.incomplete];
  const ending: Ending = {
    terminal: false,
    wire: `no terminal event (${terminalEvent} never came)`,
    summary: `incomplete (${reason}): no terminal event`,
  };
  // An error event or a payload the client could not read ended it, whatever came after.
  if (result.incomplete === 'server-error' || result.incomplete === 'malformed') {
    ending.wire = `ended by ${reason}: not a terminal event`;
  }
  if (note !== undefined) ending.note = note;
  return ending;
}
