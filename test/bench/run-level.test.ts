import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { LevelResult } from '../../src/bench/level-recorder.ts';
import type { LoadSpec } from '../../src/bench/load.ts';
import { type LevelOptions, runLevel } from '../../src/bench/run-level.ts';
import { createWorkload } from '../../src/bench/workload.ts';
import { createSim } from '../../src/sim/index.ts';
import { type ServedSim, type SimProcess, serveSim, spawnSim } from './bench-helpers.ts';

/*
 * The bench against the simulator set to a known TTFT and token rate. For the accuracy and the
 * 1000-stream tests the simulator runs in its own process (the other core), as it would in real use;
 * the machine is shared, so the bounds are generous, and the exact figures come from separate runs.
 */

const TTFT_MS = 100;
const TOKENS_PER_SECOND = 20; // one token every 50 ms
const GAP_MS = 1000 / TOKENS_PER_SECOND;
const OUTPUT_TOKENS = 8;

let sim: ServedSim;
let remote: SimProcess;
before(async () => {
  [sim, remote] = await Promise.all([
    serveSim({ ttftMs: TTFT_MS, tokensPerSecond: TOKENS_PER_SECOND }),
    spawnSim({ ttftMs: TTFT_MS, tokensPerSecond: TOKENS_PER_SECOND }),
  ]);
  // The simulator loads its tokenizer on the first request: pay that before any timing.
  await Promise.all([
    runLevel(level({ kind: 'closed', concurrency: 1 }, 1)).done,
    runLevel({
      ...level({ kind: 'closed', concurrency: 4 }, 8),
      target: { url: remote.url(), dialect: 'openai-chat' },
    }).done,
  ]);
});
after(() => Promise.all([sim.close(), remote.close()]));

function level(load: LoadSpec, requests: number, extra: Partial<LevelOptions> = {}): LevelOptions {
  return {
    target: { url: sim.url(), dialect: 'openai-chat' },
    load,
    workload: createWorkload({
      dialect: 'openai-chat',
      model: 'sim',
      outputTokens: { min: OUTPUT_TOKENS, max: OUTPUT_TOKENS },
    }),
    requests,
    ...extra,
  };
}

function assertCompleteRun(result: LevelResult, sent: number, tokens = OUTPUT_TOKENS): void {
  assert.equal(result.counts.sent, sent);
  // The sim's answers are longer than the cap: every one stops at it (finish "length").
  assert.equal(result.counts.truncated, sent, JSON.stringify(result.errors));
  assert.equal(result.counts.incomplete + result.counts.failed, 0);
  assert.equal(result.counts.tokensEstimated, 0, 'token counts come from the usage chunk');
  assert.equal(result.metrics.outputTokens.p50, tokens);
}

describe('bench against the simulator: reports the configured TTFT and TPOT at p50', () => {
  // The larger levels start their streams over a ramp-up shorter than a stream (about 2 ms of client
  // CPU per new connection here), so every stream is in flight at once without a herd at t=0.
  for (const [concurrency, rampUpMs, tokens] of [
    [1, 0, 20],
    [64, 300, 20],
    [256, 1000, 40],
  ] as const) {
    it(`concurrency ${concurrency}`, async () => {
      const requests = Math.max(2, concurrency);
      const result = await runLevel({
        target: { url: remote.url(), dialect: 'openai-chat' },
        load: { kind: 'closed', concurrency, rampUpMs },
        workload: createWorkload({
          dialect: 'openai-chat',
          model: 'sim',
          outputTokens: { min: tokens, max: tokens },
        }),
        requests,
      }).done;
      assertCompleteRun(result, requests, tokens);
      const e2e = TTFT_MS + (tokens - 1) * GAP_MS;
      const peak = Math.max(...result.charts.timeline.concurrency);
      assert.ok(peak >= 1, `peak streams in flight ${peak}`);
      const { ttft, itl } = result.metrics;
      // Lower bounds only: a busy shared machine only adds time, so these never flake, and they still
      // fail if TTFT were measured from the wrong event (it can never be below what the server was told
      // to do) or the end-to-end time were cut short. How close to the configured figures the bench
      // reads under load is a speed figure, for `npm run bench` (bench/run-level-lag.ts), not a test.
      assert.ok(ttft.p50 >= TTFT_MS - 1, `TTFT p50 ${ttft.p50} ms, configured ${TTFT_MS}`);
      assert.ok(result.metrics.e2e.p50 >= e2e - 2);
      const gaps = result.requests!.reduce((sum, row) => sum + row.chunks - 1, 0);
      assert.equal(itl.count, gaps, 'one inter-chunk gap between each pair of content chunks');
      assert.equal(
        result.requests?.every((row) => typeof row.lagMs === 'number'),
        true,
        'each row has its lag',
      );
      assert.equal(result.requests?.length, requests);
    });
  }
});

describe('scheduling', () => {
  it('runs 1000 streams in flight to completion and reports the schedule lag of each', async () => {
    // Functional only: how small the lag stays is a speed figure, measured by `npm run bench`
    // (bench/run-level-lag.ts, a verdict line in bench/RESULTS.md), never asserted in a timed test.
    // The simulator's fetch handler in-process: this exercises the bench's scheduling and the client's
    // decoding at 1000 streams, not the kernel's and undici's cost of opening 1000 connections.
    const local = createSim({ timing: { ttftMs: 1800, tokensPerSecond: 10, jitter: 0, loadMs: 0 } });
    const target = {
      url: 'http://sim.internal/v1/chat/completions',
      dialect: 'openai-chat' as const,
      fetch: local.fetch,
    };
    const workload = createWorkload({
      dialect: 'openai-chat',
      model: 'sim',
      outputTokens: { min: 3, max: 3 },
    });
    await runLevel({ target, load: { kind: 'closed', concurrency: 2 }, workload, requests: 2 }).done;
    const result = await runLevel({
      target,
      load: { kind: 'closed', concurrency: 1000, rampUpMs: 1500 },
      workload,
      requests: 1000,
    }).done;
    assert.equal(result.counts.sent, 1000);
    assert.equal(result.counts.truncated, 1000, JSON.stringify(result.errors));
    const lag = result.metrics.lag;
    assert.equal(lag.count, 1000);
    for (const figure of [lag.p50, lag.p99, lag.max])
      assert.ok(Number.isFinite(figure) && figure >= 0, `lag figure ${figure}`);
    assert.ok(lag.p50 <= lag.p99 && lag.p99 <= lag.max);
    // Never before the simulator's configured first token (a lower bound, not a speed figure).
    assert.ok(result.metrics.ttft.p50 >= 1800, `TTFT p50 ${result.metrics.ttft.p50}`);
  });

  it('open loop: Poisson arrivals come at about the asked rate, measured from their scheduled time', async () => {
    const result = await runLevel({
      target: { url: remote.url(), dialect: 'openai-chat' },
      load: { kind: 'open', rate: 100, burstiness: 1 },
      workload: createWorkload({ dialect: 'openai-chat', model: 'sim', outputTokens: { min: 2, max: 2 } }),
      requests: 100,
      seed: 5,
    }).done;
    assert.equal(result.counts.truncated, 100, JSON.stringify(result.errors));
    const rows = result.requests!;
    // The schedule itself (seeded, so not a timing): arrivals at about the asked rate. How late the bench
    // sends against it is the lag, a speed figure for `npm run bench`.
    const intended = rows.map((row) => row.intendedMs);
    const intendedRate = (rows.length - 1) / ((Math.max(...intended) - Math.min(...intended)) / 1000);
    assert.ok(
      intendedRate > 100 * 0.65 && intendedRate < 100 * 1.35,
      `scheduled ${intendedRate} req/s, asked 100`,
    );
    // Gaps between scheduled arrivals vary as a Poisson process's do (not evenly spaced).
    const gaps = rows
      .map((row) => row.intendedMs)
      .sort((a, b) => a - b)
      .slice(1)
      .map(
        (at, i, all) =>
          at - (i === 0 ? rows.map((r) => r.intendedMs).sort((a, b) => a - b)[0]! : all[i - 1]!),
      );
    assert.ok(Math.min(...gaps) < 2 && Math.max(...gaps) > 25, 'exponential gaps, not a metronome');
    assert.equal(
      rows.every((row) => typeof row.lagMs === 'number'),
      true,
      'measured from the scheduled time',
    );
  });

  it('open loop with a concurrency cap: waiting for a slot counts as lag and in the latencies', async () => {
    const result = await runLevel(
      level({ kind: 'open', rate: Number.POSITIVE_INFINITY, burstiness: 1, maxConcurrency: 4 }, 12),
    ).done;
    assert.equal(result.counts.truncated, 12);
    assert.ok(Math.max(...result.charts.timeline.concurrency) <= 4.01);
    const e2e = TTFT_MS + (OUTPUT_TOKENS - 1) * GAP_MS;
    // All 12 were due at 0; the last 4 waited for two rounds of 4.
    assert.ok(result.metrics.lag.max >= 2 * e2e * 0.9, `lag max ${result.metrics.lag.max}`);
    assert.ok(result.metrics.ttft.max >= 2 * e2e * 0.9 + TTFT_MS, `TTFT max ${result.metrics.ttft.max}`);
  });

  it('a duration ends sending; requests in flight finish', async () => {
    const result = await runLevel(level({ kind: 'closed', concurrency: 2 }, 1000, { durationMs: 600 })).done;
    assert.ok(result.counts.sent >= 2 && result.counts.sent <= 8, `sent ${result.counts.sent}`);
    assert.equal(result.counts.truncated, result.counts.sent);
  });

  it('an abort stops sending and ends the streams in flight as incomplete, never completed', async () => {
    const controller = new AbortController();
    const run = runLevel(level({ kind: 'closed', concurrency: 3 }, 100, { signal: controller.signal }));
    setTimeout(() => controller.abort(), 200);
    const result = await run.done;
    assert.equal(result.counts.sent, 3);
    assert.equal(result.counts.completed + result.counts.truncated, 0);
    assert.equal(result.counts.incomplete, 3);
    assert.deepEqual(
      result.errors.map((e) => e.code),
      ['aborted'],
    );
  });
});

describe('failures are counted, never as completed', () => {
  const withFault = (fault: string, requests = 3) =>
    runLevel(
      level({ kind: 'closed', concurrency: 3 }, requests, {
        target: { url: sim.url(), dialect: 'openai-chat', headers: { 'x-tokenwire-fault': fault } },
        slo: { ttft: 10_000 },
      }),
    ).done;

  it('HTTP errors: failed, with the status as the code', async () => {
    const result = await withFault('status=503');
    assert.equal(result.counts.failed, 3);
    assert.equal(result.counts.completed + result.counts.truncated, 0);
    assert.equal(result.errors[0]?.code, 'http-503');
    assert.equal(result.goodput?.fraction, 0);
    assert.equal(result.metrics.ttft.count, 0);
  });

  it('a cut connection and a mid-stream error: incomplete, by reason', async () => {
    const cut = await withFault('cut-after=2');
    assert.equal(cut.counts.incomplete, 3);
    assert.equal(cut.errors[0]?.code, 'connection-closed');
    const error = await withFault('error-after=2');
    assert.equal(error.counts.incomplete, 3);
    assert.equal(error.errors[0]?.code, 'server-error');
    assert.equal(error.goodput?.good, 0, 'a fast but incomplete answer is not good');
  });

  it('a refused connection: failed (network)', async () => {
    const gone = await serveSim();
    const url = gone.url();
    await gone.close();
    const result = await runLevel({
      ...level({ kind: 'closed', concurrency: 1 }, 2),
      target: { url, dialect: 'openai-chat' },
    }).done;
    assert.equal(result.counts.failed, 2);
    assert.equal(result.errors[0]?.code, 'network');
  });
});

describe('TTFT split from server timings', () => {
  it('Ollama durations: model load and prompt eval are reported, and the parts add up to TTFT', async () => {
    const cold = await serveSim({ ttftMs: 80, tokensPerSecond: 50, loadMs: 150 });
    try {
      const result = await runLevel({
        target: { url: cold.url('ollama-chat'), dialect: 'ollama-chat' },
        load: { kind: 'closed', concurrency: 1 },
        workload: createWorkload({ dialect: 'ollama-chat', model: 'sim', outputTokens: { min: 4, max: 4 } }),
        requests: 2,
      }).done;
      assert.equal(result.counts.truncated, 2, JSON.stringify(result.errors));
      const { load, promptEval, queue, firstToken } = result.metrics;
      assert.equal(load.count, 2);
      assert.ok(load.max >= 149 && load.max <= 151, `the cold start ${load.max}`);
      assert.equal(load.min, 0, 'the second request found the model loaded');
      // Lower bounds only (a busy machine only adds time): the configured prompt eval, one decode step.
      assert.ok(promptEval.p50 >= 79, `prompt eval ${promptEval.p50}`);
      assert.ok(firstToken.p50 > 5, `one decode step ${firstToken.p50}`);
      for (const row of result.requests!) {
        assert.ok(row.ttftMs! >= row.lagMs);
      }
      assert.equal(queue.count, 2, `queue ${queue.max}`);
    } finally {
      await cold.close();
    }
  });
});
