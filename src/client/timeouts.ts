/**
 * Timeouts of one stream, in milliseconds; each is off when undefined.
 * - `connectMs`: until the response headers arrive (a refused or silent server).
 * - `firstByteMs`: from the headers to the first byte of the body.
 * - `idleMs`: "no event for N ms": from the headers or the last frame to the next frame. Keepalive
 *   comments do not reset it — a server that only pings is still stalled.
 * - `totalMs`: the whole request.
 */
export interface TimeoutOptions {
  connectMs?: number | undefined;
  firstByteMs?: number | undefined;
  idleMs?: number | undefined;
  totalMs?: number | undefined;
}

export type TimeoutKind = 'connect' | 'first-byte' | 'idle' | 'total';

/**
 * Watches the deadlines with one timer: activity only records a timestamp, and the timer re-arms
 * itself for the time left, so a fast stream costs no timer churn per event. A timer that fires early
 * only re-arms, so a phase change (headers, first byte) that pushes the next deadline later keeps the
 * timer it has: with equal connect and idle timeouts (`tokenwire serve`'s default), one timer per
 * request instead of three set and two cleared.
 */
export class Deadlines {
  readonly #options: TimeoutOptions;
  readonly #onExpire: (kind: TimeoutKind) => void;
  readonly #now: () => number;
  readonly #startedAt: number;
  #phase: 'connect' | 'first-byte' | 'streaming' | 'done' = 'connect';
  #phaseStart: number;
  #lastActivity: number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** When the timer fires (on the `now` clock); meaningless without a timer. */
  #armedAt = 0;
  /** Reading is paused for the consumer: the source is not idle, so no idle deadline runs. */
  #held = false;

  constructor(options: TimeoutOptions, onExpire: (kind: TimeoutKind) => void, now: () => number) {
    this.#options = options;
    this.#onExpire = onExpire;
    this.#now = now;
    this.#startedAt = now();
    this.#phaseStart = this.#startedAt;
    this.#lastActivity = this.#startedAt;
    this.#arm();
  }

  /** The response headers arrived. */
  headers(): void {
    this.#phase = 'first-byte';
    this.#phaseStart = this.#now();
    this.#lastActivity = this.#phaseStart;
    this.#arm();
  }

  /** The first body byte arrived. */
  firstByte(): void {
    if (this.#phase !== 'first-byte') return;
    this.#phase = 'streaming';
    this.#arm();
  }

  /** A frame (an event) arrived: resets the idle deadline. */
  activity(): void {
    // Only the idle deadline reads it: without one, skip the clock (called once per frame).
    if (this.#options.idleMs !== undefined) this.#lastActivity = this.#now();
  }

  /** Reading pauses for a slow consumer (backpressure): the idle deadline waits too. */
  hold(): void {
    this.#held = true;
  }

  /** Reading resumes: the idle deadline counts from now. */
  release(): void {
    if (!this.#held) return;
    this.#held = false;
    this.#lastActivity = this.#now();
    this.#arm();
  }

  stop(): void {
    this.#phase = 'done';
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #arm(): void {
    const next = this.#nextDeadline();
    // A timer due no later than the next deadline stays: when it fires, #check finds what is due then.
    if (this.#timer !== undefined && (next === undefined || this.#armedAt <= next.at)) return;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (next === undefined) return;
    const now = this.#now();
    const wait = Math.max(0, next.at - now);
    this.#armedAt = now + wait;
    this.#timer = setTimeout(() => this.#check(), wait);
    // A pending deadline must not keep a process alive on its own.
    (this.#timer as { unref?: () => void }).unref?.();
  }

  #check(): void {
    this.#timer = undefined;
    if (this.#phase === 'done') return;
    const next = this.#nextDeadline();
    if (next === undefined) return;
    if (this.#now() >= next.at) {
      this.stop();
      this.#onExpire(next.kind);
      return;
    }
    this.#arm();
  }

  #nextDeadline(): { at: number; kind: TimeoutKind } | undefined {
    const candidates: { at: number; kind: TimeoutKind }[] = [];
    const o = this.#options;
    if (o.totalMs !== undefined) candidates.push({ at: this.#startedAt + o.totalMs, kind: 'total' });
    if (this.#phase === 'connect' && o.connectMs !== undefined) {
      candidates.push({ at: this.#phaseStart + o.connectMs, kind: 'connect' });
    }
    if (this.#phase === 'first-byte' && o.firstByteMs !== undefined) {
      candidates.push({ at: this.#phaseStart + o.firstByteMs, kind: 'first-byte' });
    }
    if (
      (this.#phase === 'first-byte' || this.#phase === 'streaming') &&
      o.idleMs !== undefined &&
      !this.#held
    ) {
      candidates.push({ at: this.#lastActivity + o.idleMs, kind: 'idle' });
    }
    let best: { at: number; kind: TimeoutKind } | undefined;
    for (const candidate of candidates) if (best === undefined || candidate.at < best.at) best = candidate;
    return best;
  }
}
