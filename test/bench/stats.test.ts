import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { LatencyHistogram } from '../../src/bench/latency-histogram.ts';
import { LevelRecorder } from '../../src/bench/level-recorder.ts';
import { requestFigures, statusOf, tpotMs, ttftBreakdown } from '../../src/bench/request-figures.ts';
import { formatSlo, meetsSlo, parseSlo } from '../../src/bench/slo.ts';
import type { Result, StreamMetrics } from '../../src/events/result.ts';
import type { Timings, Usage } from '../../src/events/usage.ts';

/** A finished Result with the given client metrics (times from the actual send). */
function result(
  metrics: Partial<StreamMetrics>,
  extra: {
    usage?: Usage;
    timings?: Timings;
    complete?: boolean;
    truncated?: boolean;
    incomplete?: Result['incomplete'];
  } = {},
): Result {
  const r: Result = {
    text: 'x',
    reasoning: '',
    toolCalls: [],
    complete: extra.complete ?? true,
    truncated: extra.truncated ?? false,
    metrics: {
      chunkCount: 0,
      interChunkMs: [],
      outputTokensEstimated: extra.usage?.outputTokens === undefined,
      keepaliveCount: 0,
      bytes: 0,
      ...metrics,
    },
  };
  if (extra.usage !== undefined) r.usage = extra.usage;
  if (extra.timings !== undefined) r.timings = extra.timings;
  if (extra.incomplete !== undefined) {
    r.incomplete = extra.incomplete;
    r.error = { code: extra.incomplete, message: `ended: ${extra.incomplete}` };
  }
  return r;
}

/** The exact percentile (nearest rank) of a sample. */
function exactPercentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1]!;
}

describe('LatencyHistogram (HDR)', () => {
  it('p50/p90/p95/p99/max are within 0.1 % of the exact values', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: 0.01, max: 100_000, noNaN: true }), { minLength: 1, maxLength: 400 }),
        (values) => {
          const h = new LatencyHistogram();
          for (const v of values) h.record(v);
          const d = h.distribution();
          assert.equal(d.count, values.length);
          assert.equal(d.max, Math.max(...values));
          assert.equal(d.min, Math.min(...values));
          for (const [p, got] of [
            [50, d.p50],
            [90, d.p90],
            [95, d.p95],
            [99, d.p99],
          ] as const) {
            const exact = exactPercentile(values, p);
            // 3 significant digits, and the recorded unit is 1 µs.
            assert.ok(Math.abs(got - exact) <= exact * 0.001 + 0.001, `p${p}: ${got} vs ${exact}`);
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('reports exact integers as themselves, and NaN when empty', () => {
    const h = new LatencyHistogram();
    assert.ok(Number.isNaN(h.distribution().p50));
    for (let i = 0; i < 10; i++) h.record(20);
    const d = h.distribution();
    assert.equal(d.p50, 20);
    assert.equal(d.p99, 20);
    assert.equal(d.mean, 20);
    assert.equal(d.stddev, 0);
  });

  it('chart bins hold every sample once', () => {
    const h = new LatencyHistogram();
    for (let i = 1; i <= 1000; i++) h.record(i * 1.7);
    h.record(0);
    const bins = h.bins(30);
    assert.equal(bins.length, 30);
    assert.equal(
      bins.reduce((sum, b) => sum + b.count, 0),
      1001,
    );
    for (let i = 1; i < bins.length; i++) assert.ok(bins[i]!.from >= bins[i - 1]!.from);
  });
});

describe('per-request figures', () => {
  it('TPOT = (E2E - TTFT) / (tokens - 1); none with one token', () => {
    assert.equal(tpotMs(1100, 100, 21), 50);
    assert.equal(tpotMs(100, 100, 1), undefined);
    assert.equal(tpotMs(100, 100, 0), undefined);
  });

  it('counts from the intended send: the lag is added to every client time, and TPOT is unchanged', () => {
    const r = result(
      {
        ttfbMs: 95,
        ttftMs: 100,
        totalMs: 1100,
        chunkCount: 21,
        interChunkMs: new Array(20).fill(50),
        outputTokens: 21,
        inputTokens: 7,
      },
      { usage: { outputTokens: 21, inputTokens: 7 } },
    );
    const late = requestFigures(r, 30);
    assert.equal(late.lagMs, 30);
    assert.equal(late.ttfbMs, 125);
    assert.equal(late.ttftMs, 130);
    assert.equal(late.e2eMs, 1130);
    assert.equal(late.tpotMs, 50);
    assert.equal(late.tokensPerSecond, 20);
    assert.equal(late.tokensEstimated, false);
    assert.equal(late.inputTokens, 7);
    assert.equal(late.status, 'completed');
  });

  it('takes tokens from usage when present; without usage it estimates from chunks and flags it', () => {
    const base = { ttftMs: 100, totalMs: 1100, chunkCount: 11, interChunkMs: new Array(10).fill(100) };
    // The server batched 2 tokens per chunk: usage says 21, the chunks say 11.
    const withUsage = requestFigures(
      result({ ...base, outputTokens: 21 }, { usage: { outputTokens: 21 } }),
      0,
    );
    assert.equal(withUsage.outputTokens, 21);
    assert.equal(withUsage.tpotMs, 50);
    assert.equal(withUsage.tokensEstimated, false);
    const withoutUsage = requestFigures(
      result({ ...base, outputTokens: 11, outputTokensEstimated: true }),
      0,
    );
    assert.equal(withoutUsage.outputTokens, 11);
    assert.equal(withoutUsage.tpotMs, 100);
    assert.equal(withoutUsage.tokensEstimated, true);
  });

  it('an incomplete Result is never completed; a truncated one is', () => {
    assert.equal(statusOf(result({}, { complete: false, incomplete: 'connection-closed' })), 'incomplete');
    assert.equal(statusOf(result({}, { truncated: true })), 'truncated');
    assert.equal(statusOf(result({})), 'completed');
  });

  it('splits TTFT by the server timings: queue = TTFT - load - prompt eval - one decode step', () => {
    // Ollama-style: load 300, prompt eval 150, 20 tokens in 400 ms -> 20 ms a step.
    const split = ttftBreakdown(500, { loadMs: 300, promptEvalMs: 150, evalMs: 400, evalTokens: 20 });
    assert.deepEqual(split, { queueMs: 30, loadMs: 300, promptEvalMs: 150, firstTokenMs: 20 });
    // llama.cpp-style: no load time is reported, so it is unknown (not 0) and stays in the queue figure.
    assert.deepEqual(ttftBreakdown(60, { promptEvalMs: 40 }), {
      queueMs: 20,
      promptEvalMs: 40,
      firstTokenMs: 0,
    });
    // Ollama leaves load_duration out when it is 0 (omitempty): there, absent is 0.
    assert.equal(ttftBreakdown(60, { promptEvalMs: 40, raw: { total_duration: 6e7 } })?.loadMs, 0);
    // Clocks differ: never a negative queue.
    assert.equal(ttftBreakdown(10, { promptEvalMs: 40 })?.queueMs, 0);
    // Nothing reported: no split.
    assert.equal(ttftBreakdown(100, undefined), undefined);
    assert.equal(ttftBreakdown(100, { evalMs: 10, evalTokens: 2 }), undefined);
  });
});

describe('SLO and goodput', () => {
  it('parses ttft=500ms,tpot=50ms, seconds, and vLLM names; refuses unknown metrics', () => {
    assert.deepEqual(parseSlo('ttft=500ms,tpot=50ms'), { ttft: 500, tpot: 50 });
    assert.deepEqual(parseSlo('e2el=2s, ttfb=100'), { e2e: 2000, ttfb: 100 });
    assert.equal(formatSlo({ ttft: 500 }), 'ttft<=500ms');
    assert.throws(() => parseSlo('speed=5'), /bad SLO/);
    assert.throws(() => parseSlo(''), /empty SLO/);
  });

  it('a request is good when it completed and met every bound', () => {
    const slo = { ttft: 500, tpot: 50 };
    assert.equal(meetsSlo({ ok: true, ttftMs: 400, tpotMs: 40 }, slo), true);
    assert.equal(meetsSlo({ ok: true, ttftMs: 600, tpotMs: 40 }, slo), false);
    assert.equal(meetsSlo({ ok: true, ttftMs: 400, tpotMs: 60 }, slo), false);
    assert.equal(meetsSlo({ ok: false, ttftMs: 1, tpotMs: 1 }, slo), false);
    assert.equal(meetsSlo({ ok: true, tpotMs: 1 }, slo), false, 'no TTFT measured fails a TTFT bound');
    assert.equal(meetsSlo({ ok: true, ttftMs: 1 }, slo), true, 'one token: no TPOT, as in vLLM');
  });

  it('goodput is the share of all requests (failures included) that were good, and their rate', () => {
    const recorder = new LevelRecorder({ slo: { ttft: 200 } });
    const good = (ttft: number) =>
      result(
        { ttftMs: ttft, totalMs: 1000, chunkCount: 3, interChunkMs: [10, 10], outputTokens: 3 },
        { usage: { outputTokens: 3 } },
      );
    recorder.sent(0);
    recorder.result(0, 0, 0, good(100));
    recorder.sent(0);
    recorder.result(1, 0, 0, good(150));
    recorder.sent(0);
    recorder.result(2, 0, 0, good(300)); // too slow
    recorder.sent(0);
    // Fast, but incomplete: never good, never completed.
    recorder.result(
      3,
      0,
      0,
      result({ ttftMs: 50, totalMs: 1000 }, { complete: false, incomplete: 'connection-closed' }),
    );
    recorder.sent(0);
    recorder.failure(4, 0, 0, 1000, 'http-500', 'HTTP 500');
    const summary = recorder.summary({ kind: 'closed', concurrency: 5 }, 'test', new Date(0));
    assert.deepEqual(summary.counts, {
      sent: 5,
      completed: 3,
      truncated: 0,
      incomplete: 1,
      failed: 1,
      tokensEstimated: 0,
    });
    assert.equal(summary.goodput?.good, 2);
    assert.equal(summary.goodput?.fraction, 2 / 5);
    assert.equal(summary.goodput?.perSecond, 2, 'two good requests in the one second the level took');
    assert.equal(summary.metrics.ttft.count, 3, 'latencies come from completed requests only');
    assert.deepEqual(
      summary.errors.map((e) => [e.code, e.count]),
      [
        ['connection-closed', 1],
        ['http-500', 1],
      ],
    );
    assert.equal(summary.requests?.length, 5);
    assert.equal(summary.requests?.[3]?.status, 'incomplete');
  });
});
