import type { DialectId } from '../dialects/dialect.ts';

/** How one request ended. `cut` is the `cut-after` fault (the connection broke mid-stream). */
export type SimOutcome = 'completed' | 'cancelled' | 'failed' | 'cut';

export interface SimRequestRecord {
  /** `sim-<n>`, in arrival order. */
  id: string;
  dialect: DialectId;
  /** The model name asked for, without any `@<faults>` suffix ('' when the body was unreadable). */
  model: string;
  outcome: SimOutcome;
  /** Tokens generated, also for cancelled and cut requests. */
  outputTokens: number;
  /** Clock times (`SimOptions.now`), ms. */
  startedAt: number;
  endedAt: number;
  /** The faults applied, as a canonical spec ('' for none). */
  faults: string;
  /** The request's headers, lower-case names. */
  headers?: Record<string, string>;
}

/**
 * Live counters over generation requests (POSTs to a dialect endpoint; `GET /v1/models` and the
 * like are not counted). A request that fails before streaming (a 4xx, the `status` fault) counts
 * as failed; a `cut` counts as failed too.
 */
export interface SimStats {
  requests: number;
  /** Requests being handled now (from arrival, through any header delay, to the end of the body). */
  active: number;
  completed: number;
  cancelled: number;
  failed: number;
  /** Output tokens generated over all requests, including cancelled ones. */
  outputTokens: number;
  /** One record per finished request, newest last, at most `SIM_LOG_LIMIT`. */
  log: SimRequestRecord[];
}

export const SIM_LOG_LIMIT = 1000;

/** Keeps the counters and wakes `idle()` waiters. */
export class SimStatsRecorder {
  readonly stats: SimStats = {
    requests: 0,
    active: 0,
    completed: 0,
    cancelled: 0,
    failed: 0,
    outputTokens: 0,
    log: [],
  };
  #waiters: (() => void)[] = [];

  begin(): void {
    this.stats.requests += 1;
    this.stats.active += 1;
  }

  end(record: SimRequestRecord): void {
    const stats = this.stats;
    stats.active -= 1;
    stats.outputTokens += record.outputTokens;
    if (record.outcome === 'completed') stats.completed += 1;
    else if (record.outcome === 'cancelled') stats.cancelled += 1;
    else stats.failed += 1;
    stats.log.push(record);
    if (stats.log.length > SIM_LOG_LIMIT) stats.log.splice(0, stats.log.length - SIM_LOG_LIMIT);
    if (stats.active === 0) {
      const waiters = this.#waiters;
      this.#waiters = [];
      for (const wake of waiters) wake();
    }
  }

  /** Resolves when no request is in flight. */
  idle(): Promise<void> {
    if (this.stats.active === 0) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push(resolve));
  }
}
