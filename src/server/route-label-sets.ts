import { labelSet } from './prometheus.ts';

export type RouteLabels = Readonly<Record<string, string>>;

/**
 * The gateway's metric label sets, one frozen set per route and upstream (and per outcome or token
 * source), made once and reused: a metric update with them is a WeakMap lookup (prometheus.ts labelSet).
 * Bounded by the routes, upstreams and the few values of each extra label.
 */
export class RouteLabelSets {
  readonly #sets = new Map<string, RouteLabels>();

  /** `{route, upstream}`. */
  of(route: string, upstream: string): RouteLabels {
    return this.#cached(`${route}\u0000${upstream}`, () => ({ route, upstream }));
  }

  /** `labels` plus one more label. */
  with(labels: RouteLabels, name: string, value: string): RouteLabels {
    return this.#cached(`${labels.route}\u0000${labels.upstream}\u0000${name}\u0000${value}`, () => ({
      ...labels,
      [name]: value,
    }));
  }

  #cached(key: string, make: () => Record<string, string>): RouteLabels {
    let set = this.#sets.get(key);
    if (set === undefined) {
      set = labelSet(make());
      this.#sets.set(key, set);
    }
    return set;
  }
}
