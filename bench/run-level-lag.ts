/**
 * The bench engine's own schedule lag with 1000 streams in flight (what test/bench/run-level.test.ts
 * checks functionally; the figure lives here, not in a timed test). The simulator's fetch handler runs
 * in-process (TTFT 1.8 s, 10 tokens/s, 3 tokens), so the run measures the bench's scheduling and the
 * client's decoding at 1000 streams, not the cost of 1000 connections. 1000 streams start over 1.5 s in
 * a closed loop; each lives about 2 s, so all are in flight after the 1.5 s mark.
 *
 * stdout: one JSON line `{streams, completed, peakInFlight, lagP50Ms, lagP99Ms, ttftP50Ms}` (run-all
 * turns it into a verdict: p50 < 250 ms, p99 < 1000 ms, the test's old bounds). Flags: `--streams N` (default 1000).
 */
import { runLevel } from '../src/bench/run-level.ts';
import { createWorkload } from '../src/bench/workload.ts';
import { createSim } from '../src/sim/index.ts';

const argv = process.argv.slice(2);
const at = argv.indexOf('--streams');
const streams = at === -1 ? 1000 : Number(argv[at + 1]);

const local = createSim({ timing: { ttftMs: 1800, tokensPerSecond: 10, jitter: 0, loadMs: 0 } });
const target = {
  url: 'http://sim.internal/v1/chat/completions',
  dialect: 'openai-chat' as const,
  fetch: local.fetch,
};
const workload = createWorkload({ dialect: 'openai-chat', model: 'sim', outputTokens: { min: 3, max: 3 } });
// Warm up: the simulator's tokenizer loads on its first request.
await runLevel({ target, load: { kind: 'closed', concurrency: 2 }, workload, requests: 2 }).done;
const result = await runLevel({
  target,
  load: { kind: 'closed', concurrency: streams, rampUpMs: 1500 },
  workload,
  requests: streams,
}).done;
process.stdout.write(
  `${JSON.stringify({
    streams,
    completed: result.counts.truncated,
    peakInFlight: Math.max(...result.charts.timeline.concurrency),
    lagP50Ms: result.metrics.lag.p50,
    lagP99Ms: result.metrics.lag.p99,
    ttftP50Ms: result.metrics.ttft.p50,
  })}\n`,
);
