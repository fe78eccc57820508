import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { getDialect } from '../../src/dialects/registry.ts';
import { createSim, type SimOptions } from '../../src/sim/index.ts';
import { ask, dialects, FakeClock, ofType, post, readChunks, run } from './sim-helpers.ts';

const openAiChat = getDialect('openai-chat');
const llamacpp = { headers: { 'x-tokenwire-flavor': 'llamacpp' } };
const timed = (timing: SimOptions['timing'], clock = new FakeClock()) => ({
  clock,
  sim: createSim({ now: clock.now, sleep: clock.sleep, timing }),
});
const lastRecord = (sim: ReturnType<typeof createSim>) => sim.stats.log.at(-1)!;

describe('sim timing model (virtual clock)', () => {
  it('pays the cold start once per model, then prompt evaluation, then one token per interval', async () => {
    const { clock, sim } = timed({
      loadMs: 500,
      promptTokensPerSecond: 1000,
      tokensPerSecond: 100,
      jitter: 0,
    });
    const first = await run(sim, openAiChat, ask('timing'), llamacpp);
    const inputTokens = ofType(first.events, 'usage')[0]?.usage.inputTokens ?? 0;
    const n = lastRecord(sim).outputTokens;
    assert.ok(inputTokens > 0 && n > 10);
    assert.equal(clock.sleeps.length, n, 'one wait per token');
    assert.equal(clock.sleeps[0], 500 + inputTokens, 'load + prompt tokens at 1000/s');
    assert.ok(
      clock.sleeps.slice(1).every((ms) => ms === 10),
      '100 tokens/s',
    );
    const timings = ofType(first.events, 'timings')[0]?.timings;
    assert.equal(timings?.promptEvalTokens, inputTokens);
    assert.equal(timings?.promptEvalMs, inputTokens);
    assert.equal(timings?.evalTokens, n);
    assert.equal(timings?.evalMs, (n - 1) * 10);

    clock.sleeps.length = 0;
    await run(sim, openAiChat, ask('timing'), llamacpp);
    assert.equal(clock.sleeps[0], inputTokens, 'the model is loaded now');
    clock.sleeps.length = 0;
    await run(sim, openAiChat, { ...ask('timing'), model: 'other' }, llamacpp);
    assert.equal(clock.sleeps[0], 500 + inputTokens, 'another model loads on first use');
  });

  for (const dialect of dialects()) {
    it(`reports the cold start and durations where the dialect has fields for them (${dialect.id})`, async () => {
      const { sim } = timed({ loadMs: 750, ttftMs: 40, tokensPerSecond: 50, jitter: 0 });
      const cold = await run(sim, dialect, ask('load'));
      const warm = await run(sim, dialect, ask('load'));
      const coldTimings = ofType(cold.events, 'timings').at(-1)?.timings;
      const warmTimings = ofType(warm.events, 'timings').at(-1)?.timings;
      if (coldTimings?.loadMs !== undefined) {
        assert.equal(coldTimings.loadMs, 750);
        assert.equal(warmTimings?.loadMs ?? 0, 0);
      }
      if (coldTimings?.promptEvalMs !== undefined) assert.equal(Math.round(coldTimings.promptEvalMs), 40);
      if (coldTimings?.totalMs !== undefined) {
        const n = sim.stats.log.at(-2)?.outputTokens ?? 0;
        assert.equal(Math.round(coldTimings.totalMs), 750 + 40 + (n - 1) * 20);
      }
    });
  }

  it('ttft (fault or option) fixes the time to the first token, whatever the prompt', async () => {
    const { clock, sim } = timed({ tokensPerSecond: 100, jitter: 0 });
    await run(sim, openAiChat, ask('x'.repeat(5000)), { headers: { 'x-tokenwire-fault': 'ttft=250' } });
    assert.equal(clock.sleeps[0], 250);
    const option = timed({ ttftMs: 75, jitter: 0 });
    await run(option.sim, openAiChat, ask('hello'));
    assert.equal(option.clock.sleeps[0], 75);
  });

  it('jitter spreads the gaps, seeded: the same request waits the same way again', async () => {
    const gaps = async () => {
      const { clock, sim } = timed({ tokensPerSecond: 100, jitter: 0.5 });
      await run(sim, openAiChat, ask('jitter'));
      return clock.sleeps.slice(1);
    };
    const a = await gaps();
    assert.deepEqual(await gaps(), a);
    assert.ok(a.every((ms) => ms >= 5 && ms <= 15));
    assert.ok(new Set(a).size > a.length / 2, 'the gaps vary');
  });

  it('schedules against the intended time, so late wake-ups do not add up', async () => {
    const clock = new FakeClock(1_000_000, 3); // every sleep wakes 3 ms late
    const { sim } = timed({ promptTokensPerSecond: 1000, tokensPerSecond: 100, jitter: 0 }, clock);
    const result = await run(sim, openAiChat, ask('drift'));
    const inputTokens = ofType(result.events, 'usage')[0]?.usage.inputTokens ?? 0;
    const n = lastRecord(sim).outputTokens;
    assert.ok(
      clock.sleeps.slice(1).every((ms) => ms === 7),
      'each wait makes up for the late wake-up',
    );
    assert.equal(clock.time - 1_000_000, inputTokens + (n - 1) * 10 + 3);
  });

  it('stall=<ms> pauses once, half-way or at stall-after; tps=<n> sets the drip', async () => {
    const { clock, sim } = timed({ tokensPerSecond: 100, jitter: 0 });
    await run(sim, openAiChat, ask('stall'), {
      headers: { 'x-tokenwire-fault': 'stall=1000,stall-after=5' },
    });
    assert.equal(clock.sleeps[5], 1010);
    assert.equal(clock.sleeps.slice(1).filter((ms) => ms !== 10).length, 1, 'one stall');
    clock.sleeps.length = 0;
    await run(sim, openAiChat, ask('stall'), { headers: { 'x-tokenwire-fault': 'stall=1000' } });
    const n = lastRecord(sim).outputTokens;
    assert.equal(clock.sleeps[Math.floor(n / 2)], 1010);
    clock.sleeps.length = 0;
    await run(sim, openAiChat, ask('drip'), { headers: { 'x-tokenwire-fault': 'tps=5' } });
    assert.ok(clock.sleeps.slice(1).every((ms) => ms === 200));
  });

  it('keepalive=<ms> writes SSE comments through every silence, before the first token too', async () => {
    const { sim } = timed({ tokensPerSecond: 100, jitter: 0 });
    const result = await run(sim, openAiChat, ask('ping'), {
      headers: { 'x-tokenwire-fault': 'ttft=1000,keepalive=300,stall=1000,stall-after=3' },
    });
    assert.equal(result.comments, 6, 'three before the first token, three in the stall');
    assert.ok(result.raw.startsWith(':\n\n:\n\n:\n\ndata: '));
    const plain = await run(sim, openAiChat, ask('ping'), { headers: { 'x-tokenwire-fault': 'ttft=1000' } });
    assert.equal(plain.comments, 0);
    assert.equal(plain.text, result.text);
  });

  for (const dialect of dialects().filter((d) => d.framing === 'ndjson')) {
    it(`keepalive writes nothing in NDJSON, which has no comments (${dialect.id})`, async () => {
      const { sim } = timed({ jitter: 0 });
      const result = await run(sim, dialect, ask('ping'), {
        headers: { 'x-tokenwire-fault': 'ttft=1000,keepalive=100' },
      });
      assert.ok(result.raw.startsWith('{'));
      assert.equal(result.complete, true);
    });
  }

  it('slow-headers=<ms> holds the response headers', async () => {
    const { clock, sim } = timed({ jitter: 0 });
    const response = await post(sim, openAiChat, ask('slow'), {
      headers: { 'x-tokenwire-fault': 'slow-headers=800' },
    });
    assert.equal(clock.sleeps[0], 800);
    assert.equal(response.status, 200);
    await readChunks(response);
  });
});

describe('sim timing on real timers', () => {
  it('sends the headers before the first token, and the first token no earlier than the TTFT', async () => {
    const sim = createSim({ timing: { ttftMs: 300, tokensPerSecond: 1000, jitter: 0 } });
    const started = performance.now();
    const response = await post(sim, openAiChat, ask('real', { maxTokens: 5 }));
    const reader = response.body!.getReader();
    await reader.read();
    const firstAt = performance.now() - started;
    while (!(await reader.read()).done) {}
    // A timer never fires early, whatever the machine's load: a lower bound only (1 ms of timer rounding).
    assert.ok(firstAt >= 299, `first chunk at ${firstAt} ms, before the 300 ms TTFT`);
  });
});
