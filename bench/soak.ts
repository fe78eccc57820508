// `npm run soak`: the bounded reliability soak (not part of `npm test`; test/server/soak-short.test.ts
// runs a short one). 1000 concurrent streams through the gateway for 30 s by default, over loopback.
// Usage: node --expose-gc .build/bench/soak.js [--concurrency N] [--duration-s S] [--tps N] [--seed N]
import { parseArgs } from 'node:util';
import { formatSoakReport, runSoak } from './soak-run.ts';

const { values } = parseArgs({
  options: {
    concurrency: { type: 'string', default: '1000' },
    'duration-s': { type: 'string', default: '30' },
    tps: { type: 'string', default: '2' },
    seed: { type: 'string', default: '1' },
    'warmup-s': { type: 'string', default: '20' },
  },
});
const concurrency = Number(values.concurrency);
const report = await runSoak({
  concurrency,
  durationMs: Number(values['duration-s']) * 1000,
  warmupConcurrency: concurrency,
  warmupMs: Number(values['warmup-s']) * 1000,
  tokensPerSecond: Number(values.tps),
  seed: Number(values.seed),
  checkRss: true,
  rssTolerance: 0.1,
  rssSettleMs: 60000,
  log: (line) => process.stderr.write(`${line}\n`),
});
process.stdout.write(`${formatSoakReport(report)}\n`);
process.exitCode = report.ok ? 0 : 1;
