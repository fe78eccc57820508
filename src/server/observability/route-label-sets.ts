import { labelSet } from './prometheus.ts';

export type RouteLabels = Readonly<Record<string, string>>;

/**
 * The gateway's metric label sets, one frozen set per route and upstream (and per outcome or token
 * source), made once and reused: a metric update with them is a WeakMap lookup (prometheus.ts labelSet).
 * Bounded by the routes, upstreams and the few values of each extra label.
 */
export class RouteLabelSets {
  /** route -> upstream -> set: found without building a key string per request. */
  readonly #byRoute = new Map<string, Map<string, RouteLabels>>();
  /** set -> label name -> value -> that set with the label. */
  readonly #extended = new Map<RouteLabels, Map<string, Map<string, RouteLabels>>>();

  /** `{route, upstream}`. */
  of(route: string, upstream: string): RouteLabels {
    const byUpstream = inner(this.#byRoute, route);
    let set = byUpstream.get(upstream);
    if (set === undefined) {
      set = labelSet({ route, upstream });
      byUpstream.set(upstream, set);
    }
    return set;
  }

  /** `labels` plus one more label. */
  with(labels: RouteLabels, name: string, value: string): RouteLabels {
    const byValue = inner(inner(this.#extended, labels), name);
    let set = byValue.get(value);
    if (set === undefined) {
      set = labelSet({ ...labels, [name]: value });
      byValue.set(value, set);
    }
    return set;
  }
}

/** The map under `key`, made empty when missing. */
function inner<K, V>(outer: Map<K, Map<string, V>>, key: K): Map<string, V> {
  let map = outer.get(key);
  if (map === undefined) {
    map = new Map();
    outer.set(key, map);
  }
  return map;
}
