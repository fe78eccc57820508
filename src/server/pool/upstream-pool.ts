import type { DialectId } from '../../dialects/dialect.ts';
import { listsModel, servesAnyModelName } from '../../dialects/model-not-found.ts';
import type { Upstream } from '../upstream/upstream.ts';
import { type BalancePolicy, ReplicaChooser } from './choose-replica.ts';
import type { LoadSignal } from './load-signal.ts';
import { type CallOutcome, DEFAULT_HEALTH, type HealthOptions, ReplicaHealth } from './replica-health.ts';

/** One upstream in the pool, with what the pool knows of it. */
export class Replica {
  readonly upstream: Upstream;
  readonly health: ReplicaHealth;
  /** Its share of its models' load against their other replicas' (`Upstream.weight`, default 1). */
  readonly weight: number;
  /** Streams this gateway has open to it. */
  inFlight = 0;
  /** The server's own load at the last scrape, and `inFlight` at that moment. */
  load: LoadSignal | undefined;
  inFlightAtScrape: number | undefined;
  /** The models it serves, as last listed (its configured ones, else its own model list). */
  models: readonly string[] | undefined;
  /** Requests sent to it, and the failures among them by kind. */
  picks = 0;
  readonly failures: Record<Exclude<CallOutcome, 'ok'>, number> = {
    unreachable: 0,
    'server-error': 0,
    timeout: 0,
  };

  constructor(upstream: Upstream, health: HealthOptions) {
    this.upstream = upstream;
    this.health = new ReplicaHealth(health);
    this.weight = upstream.weight ?? 1;
    this.models = upstream.models;
  }

  get name(): string {
    return this.upstream.name;
  }

  /** Whether it may take one more request at `now`: healthy (or on trial) and under its stream cap. */
  available(now: number): boolean {
    return this.underCap() && this.health.available(now);
  }

  /** Under its stream cap (`Upstream.maxStreams`), or with none. */
  underCap(): boolean {
    const cap = this.upstream.maxStreams;
    return cap === undefined || this.inFlight < cap;
  }
}

/** A request's hold on a replica: released once with how the call went. */
export interface Lease {
  readonly replica: Replica;
  release(outcome: CallOutcome): void;
}

export interface PoolOptions {
  balance?: BalancePolicy | undefined;
  health?: HealthOptions | undefined;
  prefixLoadBound?: number | undefined;
  /** Clock in ms. Default `Date.now`. */
  now?: (() => number) | undefined;
}

/**
 * The upstreams behind the gateway, grouped by the models they serve: which replicas serve a model,
 * which of them may take a request now, and which one does (by the balancing policy). The request path
 * asks it for a lease and reports back how the call went; the monitor (pool-monitor.ts) feeds it the
 * servers' health, load and model lists.
 */
export class UpstreamPool {
  readonly replicas: readonly Replica[];
  readonly #chooser: ReplicaChooser;
  readonly #now: () => number;

  constructor(upstreams: readonly Upstream[], options: PoolOptions = {}) {
    const names = new Set<string>();
    for (const upstream of upstreams) {
      if (names.has(upstream.name))
        throw new Error(`two upstreams are named ${JSON.stringify(upstream.name)}`);
      names.add(upstream.name);
      if (upstream.weight !== undefined && !(upstream.weight > 0 && Number.isFinite(upstream.weight)))
        throw new Error(`upstream ${upstream.name}: weight must be a number above 0, not ${upstream.weight}`);
    }
    const health = options.health ?? DEFAULT_HEALTH;
    this.replicas = upstreams.map((upstream) => new Replica(upstream, health));
    this.#chooser = new ReplicaChooser(options.balance ?? 'least-busy', {
      prefixLoadBound: options.prefixLoadBound,
    });
    this.#now = options.now ?? Date.now;
  }

  get balance(): BalancePolicy {
    return this.#chooser.policy;
  }

  /**
   * The replicas that serve `model` for a client of `client`'s dialect, healthy or not, in the order they
   * were given: those that list it (`@` suffixes and Ollama's `:latest` included, and their aliases);
   * else, for no model or a client whose server ignores names (llama-server's `/completion`, TGI), all
   * of them; else those that take any name (no model list, or `anyModelName`). Empty: nobody serves it.
   */
  serving(model: string | undefined, client: DialectId): Replica[] {
    if (model === undefined) return [...this.replicas];
    const listing = this.replicas.filter((replica) => replicaLists(replica, model));
    if (listing.length > 0) return listing;
    if (servesAnyModelName(client)) return [...this.replicas];
    return this.replicas.filter(
      (replica) =>
        replica.upstream.anyModelName === true || replica.models === undefined || replica.models.length === 0,
    );
  }

  /**
   * A lease on the replica that takes this request: among `serving(model, client)`, those available now
   * and not in `tried` (earlier attempts of the same request), chosen by the policy (`key`: the
   * conversation's, for `prefix`); when every one is cooling down, the cooling ones. Undefined when
   * none can take it (loading, at their stream caps, or all tried).
   */
  acquire(
    model: string | undefined,
    client: DialectId,
    key?: string | undefined,
    tried?: ReadonlySet<Replica>,
  ): Lease | undefined {
    return this.acquireAmong(this.serving(model, client), key, tried);
  }

  /** `acquire` among replicas already found to serve the model (`serving`). */
  acquireAmong(
    serving: readonly Replica[],
    key?: string | undefined,
    tried?: ReadonlySet<Replica>,
  ): Lease | undefined {
    const now = this.#now();
    const untried = serving.filter((replica) => !(tried?.has(replica) ?? false));
    let candidates = untried.filter((replica) => replica.available(now));
    // Every replica cooling down: rather than refuse, the cooling ones take requests again (a model with
    // one replica keeps being served; a failure a client provoked cannot shut others out). Loading
    // models and stream caps still hold.
    if (candidates.length === 0)
      candidates = untried.filter((replica) => replica.underCap() && replica.health.state(now) !== 'loading');
    const replica = this.#chooser.choose(candidates, key);
    if (replica === undefined) return undefined;
    return this.lease(replica);
  }

  /** A lease on this replica, whatever its health (a side route, or a request the caller routed itself). */
  lease(replica: Replica): Lease {
    replica.health.taken(this.#now());
    replica.inFlight += 1;
    replica.picks += 1;
    let released = false;
    return {
      replica,
      release: (outcome) => {
        if (released) return;
        released = true;
        replica.inFlight -= 1;
        if (outcome !== 'ok') replica.failures[outcome] += 1;
        replica.health.report(outcome, this.#now());
      },
    };
  }

  /**
   * The upstream for a call beside generation about `model` (a side route, a token count): among those
   * that list it (else all), the first available now, else the first. No lease: such calls are short.
   */
  pickFor(model: string | undefined): Upstream {
    const now = this.#now();
    const listing =
      model === undefined ? [] : this.replicas.filter((replica) => replicaLists(replica, model));
    const among = listing.length > 0 ? listing : this.replicas;
    return (among.find((replica) => replica.available(now)) ?? among[0]!).upstream;
  }

  /** Every model some replica lists, each once, in the order first listed. */
  models(): string[] {
    const out = new Set<string>();
    for (const replica of this.replicas) {
      for (const model of replica.models ?? []) out.add(model);
      for (const alias of Object.keys(replica.upstream.aliases ?? {})) out.add(alias);
    }
    return [...out];
  }

  /** The name `replica`'s server knows `model` by: its alias's target, else the same name. */
  static serverModelName(replica: Replica, model: string): string {
    return replica.upstream.aliases?.[model] ?? model;
  }
}

function replicaLists(replica: Replica, model: string): boolean {
  const aliases = replica.upstream.aliases;
  if (aliases !== undefined && Object.hasOwn(aliases, model)) return true;
  return replica.models !== undefined && listsModel(replica.models, model);
}
