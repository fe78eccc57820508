import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { getDialect } from '../../src/dialects/registry.ts';
import { createSim } from '../../src/sim/index.ts';
import { ask, decode, dialects, GatedClock, post, readChunks, until } from './sim-helpers.ts';

const openAiChat = getDialect('openai-chat');

describe('sim cancellation', () => {
  for (const dialect of dialects()) {
    it(`a client abort stops generation at once and counts the tokens so far (${dialect.id})`, async () => {
      const clock = new GatedClock(6);
      const sim = createSim({ now: clock.now, sleep: clock.sleep });
      const abort = new AbortController();
      const response = await post(sim, dialect, ask('abort me'), { signal: abort.signal });
      await until(() => clock.sleeps.length === 7); // six tokens out, waiting for the seventh
      assert.equal(sim.stats.active, 1);
      abort.abort();
      await sim.idle();
      const record = sim.stats.log.at(-1)!;
      assert.equal(record.outcome, 'cancelled');
      assert.equal(record.outputTokens, 6);
      assert.deepEqual(
        [sim.stats.active, sim.stats.cancelled, sim.stats.completed, sim.stats.outputTokens],
        [0, 1, 0, 6],
      );
      const read = await readChunks(response);
      assert.ok(read.error !== undefined, 'the body ends in an error, not a clean end');
      const decoded = decode(dialect, read.chunks);
      assert.equal(decoded.complete, false);
      await new Promise((resolve) => setTimeout(resolve, 20));
      assert.equal(clock.sleeps.length, 7, 'no more generation after the abort');
    });
  }

  it('cancelling the body stops generation too', async () => {
    const clock = new GatedClock(3);
    const sim = createSim({ now: clock.now, sleep: clock.sleep });
    const response = await post(sim, openAiChat, ask('cancel me'));
    await until(() => clock.sleeps.length === 4);
    await response.body!.cancel();
    await sim.idle();
    assert.equal(sim.stats.log.at(-1)?.outcome, 'cancelled');
    assert.equal(sim.stats.log.at(-1)?.outputTokens, 3);
  });

  it('an abort during prompt evaluation counts no tokens; during slow headers it never streams', async () => {
    const clock = new GatedClock(0);
    const sim = createSim({ now: clock.now, sleep: clock.sleep });
    const abort = new AbortController();
    const response = await post(sim, openAiChat, ask('early'), { signal: abort.signal });
    assert.equal(response.status, 200, 'headers go out before the first token');
    await until(() => clock.sleeps.length === 1);
    abort.abort();
    await sim.idle();
    assert.deepEqual([sim.stats.log.at(-1)?.outcome, sim.stats.log.at(-1)?.outputTokens], ['cancelled', 0]);

    const slow = new AbortController();
    const pending = post(sim, openAiChat, ask('slow'), {
      signal: slow.signal,
      headers: { 'x-tokenwire-fault': 'slow-headers=5000' },
    });
    await until(() => clock.sleeps.length === 2);
    slow.abort();
    await pending;
    await sim.idle();
    assert.equal(sim.stats.log.at(-1)?.outcome, 'cancelled');
    assert.equal(sim.stats.cancelled, 2);
  });
});
