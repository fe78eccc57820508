import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatSoakReport, runSoak } from '../../bench/soak-run.ts';

/**
 * The soak of `npm run soak`, short: 100 streams at once for a few seconds through the guarded gateway
 * (a process of its own, the simulator over HTTP), with random client disconnects and upstream faults.
 * Memory figures are not asserted here (they belong to `npm run soak`); everything else is.
 */
describe('soak (short)', () => {
  it('accounts for every stream exactly once, as the clients saw it, and leaves no upstream connection open', async () => {
    const report = await runSoak({
      concurrency: 100,
      durationMs: 3000,
      warmupConcurrency: 0,
      warmupMs: 0,
      tokensPerSecond: 10,
      seed: 7,
      checkRss: false,
      rssTolerance: 0.1,
      rssSettleMs: 0,
    });
    const text = formatSoakReport(report);
    assert.ok(report.streams >= 100, text);
    for (const outcome of ['completed', 'cancelled', 'incomplete', 'error'] as const)
      assert.ok(report.clientOutcomes[outcome] > 0, `some ${outcome} streams ran\n${text}`);
    assert.deepEqual(report.metricOutcomes, report.clientOutcomes, text);
    assert.equal(report.metricRequests, report.streams, text);
    assert.deepEqual(report.mismatches, [], text);
    assert.equal(report.settled.simSocketsLeft, 0, text);
    assert.equal(report.settled.simOpenResponses, 0, text);
    assert.equal(report.settled.gatewayOpenResponses, 0, text);
    assert.equal(report.settled.gatewayActive, 0, text);
    assert.deepEqual(report.settled.uncaught, [], text);
    assert.deepEqual(report.clientUncaught, [], text);
    // Every disconnect reached the upstream as a cancellation.
    assert.ok(report.settled.simStats.cancelled >= report.clientOutcomes.cancelled, text);
    assert.equal(report.ok, true, text);
  });
});
