/**
 * Waits `ms` on a real timer. Resolves early (never rejects) when `signal` aborts, so a cancelled
 * stream stops at once. An injected `SimOptions.sleep` must keep this contract: resolve or reject
 * when the signal aborts.
 */
export function realSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted || ms <= 0) {
      resolve();
      return;
    }
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
