import type { FrameKind } from '../../dialects/dialect.ts';
import type { StreamEvent } from '../../events/stream-event.ts';
import type { Frame } from '../../wire/frame.ts';

/**
 * A same-dialect relay's frames: each upstream payload goes to the client as the upstream wrote it —
 * every field, every choice, every logprob, the server's own extras — while the gateway still decodes
 * it (completeness, errors, usage, metrics) and owns the framing around it (SSE ids, `retry:`,
 * keepalives, resume). A frame is held until its events are known (they are decoded right after it
 * arrives) and written at the next frame or the end of the read, so it never waits for later bytes.
 *
 * What is not written: the usage of a usage-only chunk the gateway asked for itself (`include_usage` the
 * client did not ask for) — the chunk goes without its `usage` when it carries anything else (llama-server
 * moves its `timings` there when usage is asked for), else not at all — and a payload the decoder refused
 * (the stream then ends with the dialect's error).
 */
export class VerbatimFrames {
  readonly #write: (data: string, kind: FrameKind | undefined) => void;
  readonly #dropUsageOnly: boolean;
  #pending: Frame | undefined;
  #sawUsage = false;
  #sawOther = false;
  #sawTimings = false;
  /** The upstream wrote its own error event (passed on as it was). */
  sawError = false;

  constructor(write: (data: string, kind: FrameKind | undefined) => void, dropUsageOnly: boolean) {
    this.#write = write;
    this.#dropUsageOnly = dropUsageOnly;
  }

  /** A frame arrived (before its events). */
  frame(frame: Frame): void {
    this.flush();
    this.#pending = frame;
    this.#sawUsage = false;
    this.#sawOther = false;
    this.#sawTimings = false;
  }

  /** An event decoded from the pending frame. */
  event(event: StreamEvent): void {
    if (event.type === 'usage') this.#sawUsage = true;
    else if (event.type === 'timings') this.#sawTimings = true;
    else this.#sawOther = true;
    if (event.type === 'error') this.sawError = true;
  }

  /** Writes the pending frame. */
  flush(): void {
    const frame = this.#pending;
    if (frame === undefined) return;
    this.#pending = undefined;
    if (this.#dropUsageOnly && this.#sawUsage && !this.#sawOther) {
      if (this.#sawTimings) this.#write(withoutUsage(frame.data), frame.event);
      return;
    }
    this.#write(frame.data, frame.legacyError === true ? 'legacy-error-field' : frame.event);
  }

  /** Forgets the pending frame (the decoder refused it). */
  discard(): void {
    this.#pending = undefined;
  }
}

/** The chunk less its `usage`; the rest keeps its keys' order and values (numbers as JSON writes them). */
function withoutUsage(data: string): string {
  // Rest, not a loop of assignments: an upstream's own `__proto__` key stays a key.
  const { usage: _usage, ...rest } = JSON.parse(data) as Record<string, unknown>;
  return JSON.stringify(rest);
}
