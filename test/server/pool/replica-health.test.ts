import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ReplicaHealth } from '../../../src/server/pool/replica-health.ts';

const options = { failuresToCool: 3, cooldownMs: 1000, maxCooldownMs: 4000 };

describe('ReplicaHealth: a circuit breaker per replica', () => {
  it('cools at once when unreachable; after the cooldown one trial request decides', () => {
    const health = new ReplicaHealth(options);
    health.report('unreachable', 0);
    assert.equal(health.state(500), 'cooling');
    assert.equal(health.available(999), false);
    assert.equal(health.state(1000), 'trial');
    assert.equal(health.available(1000), true);
    health.taken(1000);
    assert.equal(health.available(1001), false, 'one trial request at a time');
    health.report('ok', 1200);
    assert.equal(health.state(1200), 'up');
    assert.equal(health.available(1200), true);
  });

  it('cools after three server errors or timeouts in a row, not after two, and a success resets the count', () => {
    const health = new ReplicaHealth(options);
    health.report('server-error', 0);
    health.report('timeout', 1);
    assert.equal(health.state(2), 'up');
    health.report('ok', 3);
    health.report('server-error', 4);
    health.report('server-error', 5);
    assert.equal(health.state(6), 'up');
    health.report('server-error', 6);
    assert.equal(health.state(7), 'cooling');
    assert.equal(health.lastFailure, 'server-error');
  });

  it('a failed trial cools it again for twice as long, up to the cap', () => {
    const health = new ReplicaHealth(options);
    health.report('unreachable', 0);
    assert.equal(health.coolUntil, 1000);
    health.state(1000);
    health.taken(1000);
    health.report('unreachable', 1000);
    assert.equal(health.coolUntil, 3000);
    health.state(3000);
    health.report('timeout', 3000);
    assert.equal(health.coolUntil, 7000);
    health.state(7000);
    health.report('server-error', 7000);
    assert.equal(health.coolUntil, 11000, 'capped at maxCooldownMs');
  });

  it("a health route's 'loading' keeps it out without a failure; 'up' gives a cooling replica its trial at once", () => {
    const health = new ReplicaHealth(options);
    health.probed('loading', 0);
    assert.equal(health.state(0), 'loading');
    assert.equal(health.available(10_000), false);
    health.probed('up', 10_000);
    assert.equal(health.state(10_000), 'trial');
    health.report('ok', 10_001);
    assert.equal(health.state(10_001), 'up');
    health.report('unreachable', 20_000);
    health.probed('up', 20_001);
    assert.equal(health.available(20_001), true, 'its trial comes before the cooldown ends');
    health.probed('down', 30_000);
  });
});
