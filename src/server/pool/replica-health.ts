/** How one call to an upstream went, as the pool is told it. */
export type CallOutcome =
  /** Answered (a 2xx, or a 4xx that says the request was bad: the server is fine). */
  | 'ok'
  /** Connection refused, reset, DNS or TLS failure: nothing listens, or the link is broken. */
  | 'unreachable'
  /** A 5xx, or a 429 / 503 that says the server is overloaded. */
  | 'server-error'
  /** No response headers, or no byte mid-stream, within the upstream timeout. */
  | 'timeout';

/** Where a replica stands: taking requests, cooling down after failures, or on trial after a cooldown. */
export type HealthState = 'up' | 'cooling' | 'trial' | 'loading';

export interface HealthOptions {
  /** Consecutive server errors or timeouts that start a cooldown (an unreachable server cools at once). */
  failuresToCool: number;
  /** The first cooldown; each further one in a row doubles, up to `maxCooldownMs`. */
  cooldownMs: number;
  maxCooldownMs: number;
}

export const DEFAULT_HEALTH: HealthOptions = { failuresToCool: 3, cooldownMs: 2_000, maxCooldownMs: 60_000 };

/**
 * One replica's health, from passive signals (how its calls went) and active ones (its health route): a
 * circuit breaker. Up, it takes requests. A connection failure, or `failuresToCool` server errors or
 * timeouts in a row, put it in a cooldown (`cooldownMs`, doubling for each cooldown in a row). After the
 * cooldown it is on trial: one request goes to it (half-open) and its outcome decides — up again, or a
 * longer cooldown. A health route that says "loading" (llama-server's 503 while the model loads) keeps it
 * out of rotation without counting as a failure.
 */
export class ReplicaHealth {
  readonly #options: HealthOptions;
  #state: HealthState = 'up';
  #failures = 0;
  #cooldowns = 0;
  #coolUntil = 0;
  #trialTaken = false;
  /** Cooldowns so far (each time it was put out of rotation after failures). */
  cooldownsTotal = 0;
  /** What put it out of rotation last, for `/healthz` and the log. */
  lastFailure: CallOutcome | 'loading' | undefined;

  constructor(options: HealthOptions = DEFAULT_HEALTH) {
    this.#options = options;
  }

  /** The state at `now`: a cooldown that has run out is a trial. */
  state(now: number): HealthState {
    if (this.#state === 'cooling' && now >= this.#coolUntil) {
      this.#state = 'trial';
      this.#trialTaken = false;
    }
    return this.#state;
  }

  /** Whether a new request may go to it at `now` (a trial takes one request at a time). */
  available(now: number): boolean {
    const state = this.state(now);
    return state === 'up' || (state === 'trial' && !this.#trialTaken);
  }

  /** A request was sent to it (on trial, that is the one trial request). */
  taken(now: number): void {
    if (this.state(now) === 'trial') this.#trialTaken = true;
  }

  /** When its cooldown ends (ms, on the pool's clock); 0 when it is not cooling. */
  get coolUntil(): number {
    return this.#state === 'cooling' ? this.#coolUntil : 0;
  }

  report(outcome: CallOutcome, now: number): void {
    if (outcome === 'ok') {
      this.#state = 'up';
      this.#failures = 0;
      this.#cooldowns = 0;
      return;
    }
    this.lastFailure = outcome;
    this.#failures += 1;
    const state = this.state(now);
    if (state === 'trial' || outcome === 'unreachable' || this.#failures >= this.#options.failuresToCool)
      this.#cool(now);
  }

  /** What its health route said: up, loading (not yet), or down (unreachable or an error). */
  probed(result: 'up' | 'loading' | 'down', now: number): void {
    if (result === 'up') {
      // A cooling replica that answers its health route gets its trial now rather than at the cooldown's end.
      if (this.#state === 'loading' || this.#state === 'cooling') {
        this.#state = 'trial';
        this.#trialTaken = false;
      }
      return;
    }
    if (result === 'loading') {
      this.#state = 'loading';
      this.lastFailure = 'loading';
      return;
    }
    if (this.#state !== 'cooling') this.report('unreachable', now);
  }

  /**
   * The server asked to be left alone for `ms` (a 429's or 503's `Retry-After`): out of rotation that
   * long, then on trial, without counting as a cooldown in a row.
   */
  backOff(ms: number, now: number): void {
    if (ms <= 0) return;
    const until = this.#state === 'cooling' ? this.#coolUntil : 0;
    this.#state = 'cooling';
    this.#failures = 0;
    this.#coolUntil = Math.max(until, now + ms);
  }

  #cool(now: number): void {
    const { cooldownMs, maxCooldownMs } = this.#options;
    this.#cooldowns += 1;
    this.cooldownsTotal += 1;
    this.#state = 'cooling';
    this.#failures = 0;
    this.#coolUntil = now + Math.min(maxCooldownMs, cooldownMs * 2 ** (this.#cooldowns - 1));
  }
}
