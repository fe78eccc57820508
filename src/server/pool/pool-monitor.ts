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

/** A discovered model list is read again every this many checks (30 s at the default 5 s). */
const MODELS_EVERY_CHECKS = 6;

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
  /** Checks so far: a discovered model list is read again every `MODELS_EVERY_CHECKS`. */
  #checks = 0;
  #running: Promise<void> | undefined;

  constructor(pool: UpstreamPool, options: MonitorOptions = {}) {
    this.#pool = pool;
    this.#timeoutMs = options.timeoutMs ?? 2000;
    this.#scrapeLoad = options.scrapeLoad === true;
    this.#now = options.now ?? Date.now;
  }

  /** Probes every replica once, side by side; resolves when all have answered or timed out. */
  checkOnce(): Promise<void> {
    const models = this.#checks % MODELS_EVERY_CHECKS === 0;
    this.#checks += 1;
    this.#running ??= Promise.all(this.#pool.replicas.map((replica) => this.#check(replica, models))).then(
      () => {
        this.#running = undefined;
      },
    );
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

  async #check(replica: Replica, models: boolean): Promise<void> {
    const result = await this.probeHealth(replica);
    replica.health.probed(result, this.#now());
    if (result === 'up' && models && replica.upstream.discoverModels === true) {
      const listed = await this.listModels(replica);
      if (listed !== undefined && listed.length > 0) replica.models = listed;
    }
    if (result === 'up' && this.#scrapeLoad) {
      const load = await this.#scrape(replica);
      if (load !== undefined) {
        replica.load = load;
        // Counted when the answer arrives: a stream opened while the scrape was on its way is already
        // in the server's count (counting it again made `load` worse than `least-busy`: bench/README.md).
        replica.inFlightAtScrape = replica.inFlight;
      }
    }
  }

  /**
   * The models the server lists now: OpenAI's `GET /v1/models` (`data[].id`: vLLM, llama-server, SGLang,
   * TGI, Ollama's compatible API), else Ollama's `GET /api/tags` (`models[].name`). Undefined when it
   * lists none it can be asked for.
   */
  async listModels(replica: Replica): Promise<string[] | undefined> {
    const upstream = replica.upstream;
    const headers = Object.assign({}, upstream.headers);
    const ollamaOnly = upstream.dialects.every((dialect) => dialect.startsWith('ollama'));
    const path = ollamaOnly ? '/api/tags' : '/v1/models';
    const answer = await callUpstreamAside(upstream, path, { method: 'GET', headers }, this.#timeoutMs);
    if (!answer?.ok) {
      await answer?.body?.cancel().catch(() => {});
      return undefined;
    }
    const body = (await answer.json().catch(() => undefined)) as
      | { data?: { id?: unknown }[]; models?: { name?: unknown }[] }
      | undefined;
    const entries = ollamaOnly ? body?.models?.map((m) => m.name) : body?.data?.map((m) => m.id);
    if (!Array.isArray(entries)) return undefined;
    return entries.filter((name): name is string => typeof name === 'string' && name !== '');
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
