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
