import type { DirectWriter } from './response-output.ts';
import { directBodyOfResponse } from './response-output.ts';

/** Takes a direct body's text and drops it: the response it belonged to is never sent. */
const DISCARD: DirectWriter = {
  write: () => true,
  end: () => {},
  destroy: () => {},
};

/**
 * Gives up a response that will never be sent (its head failed to go out, a header could not be set):
 * its body is cancelled, or a direct-only body is attached to nothing and closed, as when a client
 * leaves. Whatever the response held ends with it — a gateway stream aborts its upstream call, a guard
 * frees the stream slot (a response that failed late left its upstream generating for nobody
 * and its slot held for good). Never throws.
 */
export function abandonResponse(response: Response, reason?: unknown): void {
  try {
    const body = response.body;
    if (body !== null) {
      body.cancel(reason).catch(() => {});
      return;
    }
    const direct = directBodyOfResponse(response);
    if (direct !== undefined) direct.attach(DISCARD).closed();
  } catch {
    // Already being read, or already ended: its reader owns its end.
  }
}
