/**
 * The client's "gone" signal on an IncomingRequest: the part of an AbortSignal the gateway reads. A
 * standard AbortSignal is one. node/serve.ts passes a LightClientSignal instead, which tells the
 * gateway the same thing: the client went away. Code that needs a real AbortSignal (a Request for a
 * fallback handler, a resume store) gets one from `abortSignalOf`, built only then.
 * Shape kept for speed: bench/README.md "Why the code is shaped as it is" (LightClientSignal).
 */
export interface ClientSignal {
  readonly aborted: boolean;
  /** Only `abort` is ever dispatched. As on an AbortSignal, a listener added twice is called once. */
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/**
 * A one-shot ClientSignal: `abort()` calls each listener once, in the order added. As with an
 * AbortSignal, a listener removed during the dispatch is not called, one added after the abort never
 * is, and a listener that throws does not stop the others (its error is rethrown in a microtask, where
 * an EventTarget would report it).
 */
export class LightClientSignal implements ClientSignal {
  #aborted = false;
  #reason: unknown;
  #listeners: ((() => void) | undefined)[] = [];

  get aborted(): boolean {
    return this.#aborted;
  }

  get reason(): unknown {
    return this.#reason;
  }

  addEventListener(type: 'abort', listener: () => void): void {
    if (type !== 'abort' || this.#aborted || this.#listeners.includes(listener)) return;
    this.#listeners.push(listener);
  }

  removeEventListener(type: 'abort', listener: () => void): void {
    if (type !== 'abort') return;
    // During the dispatch the listeners already called are gone (undefined), so one found here is still
    // ahead of the loop in `abort`: taking it out leaves that loop's next index on the one after it.
    const at = this.#listeners.indexOf(listener);
    if (at >= 0) this.#listeners.splice(at, 1);
  }

  abort(reason?: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    const listeners = this.#listeners;
    for (let i = 0; i < listeners.length; i++) {
      const listener = listeners[i]!;
      listeners[i] = undefined;
      try {
        listener();
      } catch (error) {
        queueMicrotask(() => {
          throw error;
        });
      }
    }
    this.#listeners = [];
  }
}

/** A standard AbortSignal that aborts with `signal`: itself when it is one. */
export function abortSignalOf(signal: ClientSignal): AbortSignal {
  if (signal instanceof AbortSignal) return signal;
  const controller = new AbortController();
  const reason = () => (signal as { reason?: unknown }).reason;
  if (signal.aborted) controller.abort(reason());
  else signal.addEventListener('abort', () => controller.abort(reason()), { once: true });
  return controller.signal;
}
