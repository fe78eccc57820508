import type { LoadSignal } from './load-signal.ts';

/** How the pool picks among the replicas of a model (`--balance`). */
export type BalancePolicy = 'least-busy' | 'round-robin' | 'prefix' | 'load';

export const BALANCE_POLICIES: readonly BalancePolicy[] = ['least-busy', 'round-robin', 'prefix', 'load'];

/** What the chooser reads of a replica that may take the request. */
export interface ReplicaLoad {
  readonly name: string;
  /** Its share of the load against the others' (> 0). */
  readonly weight: number;
  /** Streams this gateway has open to it. */
  readonly inFlight: number;
  /** The server's own last-scraped load, and this gateway's streams to it at that moment. */
  readonly load?: LoadSignal | undefined;
  readonly inFlightAtScrape?: number | undefined;
}

export interface ChooserOptions {
  /** `prefix`: a replica above this many times its fair share of the streams takes no new prefix. */
  prefixLoadBound?: number | undefined;
}

/**
 * Picks one replica per request by a named policy. Every candidate given is available (healthy, under its
 * stream cap); the chooser only ranks them.
 * - `least-busy`: fewest streams in flight for its weight; ties go round in turn, so one request at a
 *   time still spreads over the replicas.
 * - `round-robin`: smooth weighted round robin (a replica of weight 2 gets every other request of 3).
 * - `prefix`: rendezvous (highest-random-weight) hashing of the conversation's key, so every gateway
 *   instance sends a conversation to the same replica, which holds its KV cache, with no shared store; a
 *   replica above `prefixLoadBound` × its fair share of the streams is passed over for the next in the
 *   key's order (with one stream of slack, so light load keeps affinity), so one hot prefix cannot
 *   overload it. No key: least-busy.
 * - `load`: the server's own queue (running + twice the waiting, from its `/metrics` or `/slots`), plus
 *   the streams this gateway opened since that scrape, scaled up by how full its KV cache is, for its
 *   weight. A replica with no signal counts its streams in flight.
 */
export class ReplicaChooser {
  readonly #policy: BalancePolicy;
  readonly #bound: number;
  #turn = 0;
  readonly #current = new Map<string, number>();

  constructor(policy: BalancePolicy, options: ChooserOptions = {}) {
    this.#policy = policy;
    this.#bound = options.prefixLoadBound ?? 1.25;
  }

  get policy(): BalancePolicy {
    return this.#policy;
  }

  choose<R extends ReplicaLoad>(candidates: readonly R[], key?: string): R | undefined {
    if (candidates.length <= 1) return candidates[0];
    switch (this.#policy) {
      case 'round-robin':
        return this.#roundRobin(candidates);
      case 'prefix':
        return key === undefined || key === ''
          ? this.#fewest(candidates, busy)
          : this.#prefix(candidates, key);
      case 'load':
        return this.#fewest(candidates, queued);
      default:
        return this.#fewest(candidates, busy);
    }
  }

  /** The lowest score for its weight; ties taken in turn. */
  #fewest<R extends ReplicaLoad>(candidates: readonly R[], score: (replica: R) => number): R {
    let best = Number.POSITIVE_INFINITY;
    const tied: R[] = [];
    for (const replica of candidates) {
      const value = score(replica) / replica.weight;
      if (value < best - 1e-9) {
        best = value;
        tied.length = 0;
        tied.push(replica);
      } else if (Math.abs(value - best) <= 1e-9) tied.push(replica);
    }
    const chosen = tied[this.#turn % tied.length] as R;
    this.#turn = (this.#turn + 1) % 1_000_000_007;
    return chosen;
  }

  /** nginx's smooth weighted round robin: each turn every replica gains its weight, the leader pays the total. */
  #roundRobin<R extends ReplicaLoad>(candidates: readonly R[]): R {
    let total = 0;
    let chosen = candidates[0] as R;
    let top = Number.NEGATIVE_INFINITY;
    for (const replica of candidates) {
      const current = (this.#current.get(replica.name) ?? 0) + replica.weight;
      this.#current.set(replica.name, current);
      total += replica.weight;
      if (current > top) {
        top = current;
        chosen = replica;
      }
    }
    this.#current.set(chosen.name, top - total);
    return chosen;
  }

  #prefix<R extends ReplicaLoad>(candidates: readonly R[], key: string): R {
    const ranked = candidates
      .map((replica) => ({ replica, score: rendezvousScore(key, replica.name, replica.weight) }))
      .sort((a, b) => b.score - a.score);
    let streams = 1;
    let weights = 0;
    for (const replica of candidates) {
      streams += replica.inFlight;
      weights += replica.weight;
    }
    for (const { replica } of ranked) {
      const fairShare = (streams * replica.weight) / weights;
      // One stream of slack, so that at light load (a fair share below one stream) a conversation keeps
      // its replica; beyond it, the bound of consistent hashing with bounded loads.
      if (replica.inFlight + 1 <= Math.ceil(this.#bound * fairShare) + 1) return replica;
    }
    return this.#fewest(candidates, busy);
  }
}

function busy(replica: ReplicaLoad): number {
  return replica.inFlight;
}

function queued(replica: ReplicaLoad): number {
  const load = replica.load;
  if (load === undefined || (load.running === undefined && load.waiting === undefined))
    return replica.inFlight;
  const sinceScrape = replica.inFlight - (replica.inFlightAtScrape ?? 0);
  const queue = Math.max(0, (load.running ?? 0) + 2 * (load.waiting ?? 0) + sinceScrape);
  return queue * (1 + (load.cacheUsage ?? 0));
}

/**
 * Weighted rendezvous hashing: `-weight / ln(u)` with `u` the key and name hashed into (0, 1). The replica
 * with the highest score wins; each keeps its own keys when another joins or leaves.
 */
export function rendezvousScore(key: string, name: string, weight: number): number {
  const u = (hash32(`${key}\u0000${name}`) + 0.5) / 4294967296;
  return -weight / Math.log(u);
}

/** FNV-1a over UTF-16 units, then murmur3's finalizer so that near-identical inputs spread. */
function hash32(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return hash >>> 0;
}
