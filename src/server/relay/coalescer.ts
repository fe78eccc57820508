import type { StreamEvent } from '../../events/stream-event.ts';

/**
 * When to write text. By default every event is written (and flushed) as it arrives. Coalescing merges
 * consecutive text events and writes them when one of the conditions holds (whichever comes first):
 * `intervalMs` since the first held text, `bytes` of held text, or `delimiter` seen in the held text
 * (written up to and including its last occurrence).
 */
export interface FlushPolicy {
  intervalMs?: number | undefined;
  bytes?: number | undefined;
  delimiter?: string | undefined;
}

export function isCoalescing(policy: FlushPolicy | undefined): policy is FlushPolicy {
  return (
    policy !== undefined &&
    (policy.intervalMs !== undefined || policy.bytes !== undefined || policy.delimiter !== undefined)
  );
}

export class TextCoalescer {
  readonly #policy: FlushPolicy;
  readonly #emit: (event: StreamEvent) => void;
  #held = '';
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(policy: FlushPolicy, emit: (event: StreamEvent) => void) {
    this.#policy = policy;
    this.#emit = emit;
  }

  push(event: StreamEvent): void {
    if (event.type !== 'text') {
      this.flush();
      this.#emit(event);
      return;
    }
    this.#held += event.text;
    const { delimiter, bytes, intervalMs } = this.#policy;
    if (delimiter !== undefined && delimiter !== '') {
      const at = this.#held.lastIndexOf(delimiter);
      if (at !== -1) {
        const cut = at + delimiter.length;
        const out = this.#held.slice(0, cut);
        this.#held = this.#held.slice(cut);
        this.#write(out);
      }
    }
    if (bytes !== undefined && this.#held.length >= bytes) {
      this.flush();
      return;
    }
    if (intervalMs !== undefined && this.#held !== '' && this.#timer === undefined) {
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        this.flush();
      }, intervalMs);
    }
  }

  flush(): void {
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    if (this.#held === '') return;
    const out = this.#held;
    this.#held = '';
    this.#write(out);
  }

  #write(text: string): void {
    if (text !== '') this.#emit({ type: 'text', text });
  }
}
