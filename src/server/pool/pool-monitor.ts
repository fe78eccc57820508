import { callUpstreamAside } from '../upstream/upstream-side-call.ts';
import { loadFromPrometheus, loadFromSlots } from './load-signal.ts';
import type { Replica, UpstreamPool } from './upstream-pool.ts';

export interface MonitorOptions {
  /** How long one probe waits for its answer. Default 2 s. */
  timeoutMs?: number | undefined;
  /** Also read each server's load (`/metrics`, llama-server's `/slots`): for `--balance load`. */
  scrapeLoad?: boolean | undefined;
  /** Clock in ms. Default `Date.now`. */
  now?: (() => number) | undefined;
}

/** What a server's health route said. */
export type ProbeResult = 'up' | 'loading' | 'down';

/**
 * The pool's active checks: each server's own health route (llama-server, vLLM, TGI, SGLang and the
 * simulator `GET /health`, where llama-server's 503 means the model is still loading; Ollama `GET
 * /api/version`) and, when asked, its load. `checkOnce()` probes every replica once; `start()` repeats it
 * on an interval until `stop()`.
 */
export class PoolMonitor {
  readonly #pool: UpstreamPool;
  readonly #timeoutMs: number;
  readonly #scrapeLoad: boolean;
  readonly #now: () => number;
  #timer: ReturnType<typeof setInterval> | undefined;
  #running: Promise<void> | undefined;

  constructor(pool: UpstreamPool, options: MonitorOptions = {}) {
    this.#pool = pool;
    this.#timeoutMs = options.timeoutMs ?? 2000;
    this.#scrapeLoad = options.scrapeLoad === true;
    this.#now = options.now ?? Date.now;
  }

  /** Probes every replica once, side by side; resolves when all have answered or timed out. */
  checkOnce(): Promise<void> {
    this.#running ??= Promise.all(this.#pool.replicas.map((replica) => this.#check(replica))).then(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  start(intervalMs: number): void {
    if (this.#timer !== undefined) return;
    this.#timer = setInterval(() => void this.checkOnce(), intervalMs);
    // A monitor never keeps a process alive on its own.
    (this.#timer as { unref?: () => void }).unref?.();
  }

  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  async #check(replica: Replica): Promise<void> {
    const result = await this.probeHealth(replica);
    replica.health.probed(result, this.#now());
    if (result === 'up' && this.#scrapeLoad) {
      const inFlight = replica.inFlight;
      const load = await this.#scrape(replica);
      if (load !== undefined) {
        replica.load = load;
        replica.inFlightAtScrape = inFlight;
      }
    }
  }

  /** What the replica's health route says (a server with no such route is up when it answers at all). */
  async probeHealth(replica: Replica): Promise<ProbeResult> {
    const upstream = replica.upstream;
    const ollamaOnly = upstream.dialects.every((dialect) => dialect.startsWith('ollama'));
    const answer = await callUpstreamAside(
      upstream,
      ollamaOnly ? '/api/version' : '/health',
      { method: 'GET', headers: Object.assign({}, upstream.headers) },
      this.#timeoutMs,
    );
    if (answer === undefined) return 'down';
    const status = answer.status;
    const text = await answer.text().catch(() => '');
    if (status >= 200 && status < 300) return 'up';
    // No health route (an Ollama behind a path, a proxy): it answered, so it is there.
    if (status === 404 || status === 405) return 'up';
    if (status === 503 && /loading/i.test(text)) return 'loading';
    return 'down';
  }

  async #scrape(replica: Replica) {
    const upstream = replica.upstream;
    const headers = Object.assign({}, upstream.headers);
    const metrics = await callUpstreamAside(
      upstream,
      '/metrics',
      { method: 'GET', headers },
      this.#timeoutMs,
    );
    if (metrics?.ok) {
      const load = loadFromPrometheus(await metrics.text().catch(() => ''));
      if (load !== undefined) return load;
    } else await metrics?.body?.cancel().catch(() => {});
    if (!upstream.dialects.includes('llamacpp')) return undefined;
    const slots = await callUpstreamAside(upstream, '/slots', { method: 'GET', headers }, this.#timeoutMs);
    if (!slots?.ok) {
      await slots?.body?.cancel().catch(() => {});
      return undefined;
    }
    return loadFromSlots(await slots.json().catch(() => undefined));
  }
}
