import type { Result } from '../../events/result.ts';
import { attemptFailure } from './attempt-failure.ts';
import type { CallOutcome } from './replica-health.ts';

/**
 * How a request's call to its replica went, from how the request ended: what the replica's health is
 * told when the request's lease is released. A stream that ran to its end, a whole answer, a cancel by
 * the client and a refusal of the request itself (a 4xx) are `ok`; a stream cut mid-way is the replica
 * unreachable, one that stalled past the upstream timeout a timeout, one that ended on the server's own
 * error event (or wrote what no decoder reads) a server error; a failure before streaming is classified by `attemptFailure`.
 */
export function callOutcome(status: number, error: unknown, result: Result | undefined): CallOutcome {
  if (result !== undefined) {
    if (result.complete) return 'ok';
    switch (result.incomplete) {
      case 'connection-closed':
        return 'unreachable';
      case 'idle-timeout':
      case 'first-byte-timeout':
        return 'timeout';
      case 'server-error':
      case 'malformed':
        return 'server-error';
      default:
        return 'ok';
    }
  }
  if (error !== undefined) return attemptFailure(error)?.outcome ?? (status >= 500 ? 'server-error' : 'ok');
  return status >= 500 ? 'server-error' : 'ok';
}
