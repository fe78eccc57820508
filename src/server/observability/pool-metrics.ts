import type { UpstreamPool } from '../pool/upstream-pool.ts';
import type { GatewayMetrics } from './gateway-metrics.ts';

/** The pool's state per upstream, copied into the metrics before `/metrics` is rendered. */
export function recordPoolMetrics(metrics: GatewayMetrics, pool: UpstreamPool, now: number): void {
  for (const replica of pool.replicas) {
    const labels = { upstream: replica.name };
    const state = replica.health.state(now);
    metrics.upstreamUp.set(labels, state === 'up' || state === 'trial' ? 1 : 0);
    metrics.upstreamInFlight.set(labels, replica.inFlight);
    metrics.upstreamPicks.set(labels, replica.picks);
    for (const [kind, count] of Object.entries(replica.failures))
      metrics.upstreamFailures.set({ upstream: replica.name, kind }, count);
    metrics.upstreamCooldowns.set(labels, replica.health.cooldownsTotal);
  }
}

/** What `/healthz` says of each upstream: its state, streams in flight, models, and what last failed. */
export function poolHealth(pool: UpstreamPool, now: number): Record<string, unknown>[] {
  return pool.replicas.map((replica) => {
    const state = replica.health.state(now);
    const entry: Record<string, unknown> = {
      name: replica.name,
      state: state === 'trial' ? 'up' : state,
      inFlight: replica.inFlight,
      models: replica.models ?? [],
    };
    if (state === 'cooling') entry.coolingForMs = Math.max(0, replica.health.coolUntil - now);
    if (replica.health.lastFailure !== undefined) entry.lastFailure = replica.health.lastFailure;
    return entry;
  });
}
