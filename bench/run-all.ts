/**
 * `npm run bench`: every benchmark, then bench/RESULTS.md (machine, versions, date, headline ratios
 * and verdicts against the bench's targets, then the full tables).
 * Flags: `--quick` (fewer rounds and events, for trying things; not for RESULTS.md), `--skip-decode`,
 * `--skip-gateway`, `--skip-cli` (the bench CLI's own cost), `--skip-pipe` (gateway-vs-pipe.ts), `--skip-lag`, `--skip-workers` (serve-workers.ts), `--skip-pool` (pool-cost.ts, pool-balance.ts), `--skip-continue` (continue-cost.ts), `--out <file>` (default bench/RESULTS.md).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { decodeMarkdown, runDecodeBench, type WorkerReport } from './decode-throughput.ts';
import { gatewayMarkdown } from './gateway-markdown.ts';
import { runGatewayBench } from './gateway-overhead.ts';
import type { GatewayReport } from './gateway-report.ts';
import { addedByRound, summarize } from './gateway-summary.ts';
import { fmt } from './stats.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const outAt = argv.indexOf('--out');
const outFile = outAt === -1 ? `${root}bench/RESULTS.md` : argv[outAt + 1]!;
const log = (line: string) => console.error(`[bench] ${line}`);

function packageVersion(name: string): string {
  try {
    const json = JSON.parse(readFileSync(`${root}node_modules/${name}/package.json`, 'utf8')) as {
      version: string;
    };
    return json.version;
  } catch {
    return 'not installed';
  }
}

function cpuModel(): string {
  try {
    const line = readFileSync('/proc/cpuinfo', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('model name'));
    return line?.split(':')[1]?.trim() ?? os.cpus()[0]?.model ?? 'unknown';
  } catch {
    return os.cpus()[0]?.model ?? 'unknown';
  }
}

function nproc(): string {
  try {
    return execFileSync('nproc', { encoding: 'utf8' }).trim();
  } catch {
    return String(os.availableParallelism());
  }
}

const started = new Date();
const loadBefore = os.loadavg();
log(`machine: ${nproc()} CPUs, ${cpuModel()}, load ${loadBefore.map((l) => l.toFixed(2)).join(' ')}`);

let decode: WorkerReport[] = [];
if (!argv.includes('--skip-decode')) {
  decode = runDecodeBench({
    rounds: quick ? 2 : undefined,
    events: quick ? 50_000 : undefined,
    log,
  });
}
let gateway: GatewayReport | undefined;
if (!argv.includes('--skip-gateway')) {
  gateway = await runGatewayBench({
    rounds: quick ? 2 : undefined,
    idleStreams: quick ? 200 : undefined,
    log,
  });
}

/** The bench CLI's own cost is measured by `bench/bench-cli-cost.ts` when it exists. */
function benchCliSection(): string {
  const script = fileURLToPath(new URL('./bench-cli-cost.js', import.meta.url));
  if (!existsSync(script)) {
    return '_Not measured yet._ Hook: `bench/bench-cli-cost.ts`, when present, is run by `npm run bench` and prints this section as Markdown on stdout.';
  }
  log('bench CLI cost');
  return execFileSync(process.execPath, [script, ...(quick ? ['--quick'] : [])], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 16 * 1024 * 1024,
  }).trim();
}
const benchCli = argv.includes('--skip-cli') ? '_Skipped._' : benchCliSection();
// `tokenwire serve` against a bare pipe, each in its own process (gateway-vs-pipe.ts prints the section).
const vsPipe = argv.includes('--skip-pipe')
  ? '_Skipped._'
  : execFileSync(process.execPath, [fileURLToPath(new URL('./gateway-vs-pipe.js', import.meta.url))], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    }).trim();
const loadAfter = os.loadavg();

type Verdict = { target: string; measured: string; met: boolean | undefined };
const verdicts: Verdict[] = [];
const headline: string[] = [];

function subject(report: WorkerReport, id: string) {
  return report.subjects.find((s) => s.id === id && s.broken === undefined);
}

const ratio = (s: { median: number; min: number; max: number }) =>
  `${fmt(s.median)}× (${fmt(s.min)}–${fmt(s.max)})`;
// Every dialect and read size through a standard Response body, complete() and stream() both
// within 1.10x the floor; on NDJSON at least as fast as the hand-rolled line-splitter client.
for (const report of decode.filter((r) => r.group === 'fast')) {
  const where = `${report.dialect}, ${report.readBytes / 1024} KiB reads`;
  const tw = subject(report, 'tokenwire');
  const twStream = subject(report, 'tokenwire-stream');
  if (tw === undefined || twStream === undefined) {
    verdicts.push({
      target: `decode ≤ 1.10× floor (${where})`,
      measured: `tokenwire ${tw === undefined ? 'complete()' : 'stream()'} row broken`,
      met: false,
    });
    continue;
  }
  verdicts.push({
    target: `decode ≤ 1.10× the scan+JSON.parse floor's time (${where})`,
    measured: `complete() ${ratio(tw.cpuRatioToFloor)} CPU time; wall ${ratio(tw.ratioToFloor)}`,
    met: tw.cpuRatioToFloor.median <= 1.1,
  });
  verdicts.push({
    target: `stream() for-await ≤ 1.10× the floor's time (${where})`,
    measured: `${ratio(twStream.cpuRatioToFloor)} CPU time; wall ${ratio(twStream.ratioToFloor)}`,
    met: twStream.cpuRatioToFloor.median <= 1.1,
  });
  const twBatches = subject(report, 'tokenwire-batches');
  if (twBatches !== undefined)
    verdicts.push({
      target: `stream().batches() for-await ≤ 1.10× the floor's time (${where})`,
      measured: `${ratio(twBatches.cpuRatioToFloor)} CPU time; wall ${ratio(twBatches.ratioToFloor)}`,
      met: twBatches.cpuRatioToFloor.median <= 1.1,
    });
  const twOnEvent = subject(report, 'tokenwire-onevent');
  if (twOnEvent !== undefined)
    verdicts.push({
      target: `complete({ onEvent }) ≤ 1.10× the floor's time (${where})`,
      measured: `${ratio(twOnEvent.cpuRatioToFloor)} CPU time; wall ${ratio(twOnEvent.ratioToFloor)}`,
      met: twOnEvent.cpuRatioToFloor.median <= 1.1,
    });
  const splitter = subject(report, 'line-splitter');
  if (splitter !== undefined) {
    verdicts.push({
      target: `decode at least as fast as the hand-rolled line-splitter client (${where})`,
      measured: `complete() ${fmt(tw.cpuRatioToFloor.median)}×, stream() ${fmt(twStream.cpuRatioToFloor.median)}× vs ${fmt(splitter.cpuRatioToFloor.median)}× the floor's CPU time (wall ${fmt(tw.ratioToFloor.median)}×, ${fmt(twStream.ratioToFloor.median)}× vs ${fmt(splitter.ratioToFloor.median)}×)`,
      met: tw.cpuRatioToFloor.median <= splitter.cpuRatioToFloor.median,
    });
  }
  const others: string[] = [];
  for (const id of ['eventsource-parser', 'line-splitter', 'ollama-js']) {
    const other = subject(report, id);
    if (other !== undefined)
      others.push(`${fmt(other.cpuRatioToFloor.median / tw.cpuRatioToFloor.median)}× ${other.label}`);
  }
  const sdk = decode.find(
    (r) => r.group === 'sdk' && r.dialect === report.dialect && r.readBytes === report.readBytes,
  );
  const twSdk = sdk === undefined ? undefined : subject(sdk, 'tokenwire');
  for (const [id, need] of [
    ['openai-sdk', 3],
    ['ai-sdk', 10],
  ] as const) {
    const other = sdk === undefined ? undefined : subject(sdk, id);
    if (other === undefined || twSdk === undefined) continue;
    const times = other.cpuRatioToFloor.median / twSdk.cpuRatioToFloor.median;
    const wallTimes = other.ratioToFloor.median / twSdk.ratioToFloor.median;
    others.push(`${fmt(times)}× ${other.label}`);
    verdicts.push({
      target: `≥ ${need}× the throughput of ${other.label} (${where})`,
      measured: `${fmt(times)}× (CPU time); wall ${fmt(wallTimes)}×`,
      met: times >= need,
    });
  }
  headline.push(
    `- **${where}**: tokenwire ${fmt(tw.eventsPerSecond.median, 0)} events/s, ${fmt(tw.mbPerSecond.median, 0)} MB/s (wall), ${fmt(tw.cpuRatioToFloor.median)}× the floor's CPU time (${fmt(tw.ratioToFloor.median)}× wall)${others.length > 0 ? `; tokenwire's throughput is ${others.join(', ')}` : ''}.`,
  );
}

if (gateway !== undefined) {
  const rows = summarize(gateway);
  const row = (route: string, level: number) => rows.find((r) => r.route === route && r.level === level);
  const gwRoutes = ['gw-openai', 'gw-ollama', 'gw-messages', 'gw-tgi'];
  for (const level of [1, 32, 128].filter((l) => gateway!.levels.includes(l))) {
    const direct = row('direct', level)!;
    const bare = row('bare', level)!;
    // Verdicts read each round's added figure (route − direct within the round), median over the rounds
    // (gateway-overhead.ts, addedByRound); the pooled figure is quoted beside it.
    const bareAdded = addedByRound(rows, 'bare', level, 'netTtftP50').median;
    const barePooled = bare.netTtftP50 - direct.netTtftP50;
    for (const id of gwRoutes) {
      const r = row(id, level)!;
      const added = addedByRound(rows, id, level, 'netTtftP50').median;
      const pooled = r.netTtftP50 - direct.netTtftP50;
      verdicts.push({
        target: `added TTFT p50 ≤ 1.25× the bare proxy's at ${level} (${id})`,
        measured: `${fmt(added)} ms vs bare ${fmt(bareAdded)} ms (pooled: ${fmt(pooled)} vs ${fmt(barePooled)})`,
        met: added <= 1.25 * Math.max(bareAdded, 0),
      });
      if (level === 1) {
        verdicts.push({
          target: `added TTFT p50 < 1 ms at 1 stream (${id})`,
          measured: `${fmt(added)} ms (pooled: ${fmt(pooled)})`,
          met: added < 1 && pooled < 1,
        });
      }
      if (level === 32 || level === 128) {
        const addedP99 = addedByRound(rows, id, level, 'delayP99').median;
        const bareP99 = addedByRound(rows, 'bare', level, 'delayP99').median;
        const pooledP99 = r.delayP99 - direct.delayP99;
        const barePooledP99 = bare.delayP99 - direct.delayP99;
        verdicts.push({
          target: `added p99 chunk delay ≤ 2× the bare proxy's at ${level} (${id})`,
          measured: `${fmt(addedP99)} ms vs bare ${fmt(bareP99)} ms (pooled: ${fmt(pooledP99)} vs ${fmt(barePooledP99)})`,
          met: addedP99 <= 2 * Math.max(bareP99, 0),
        });
      }
      if (level === 128) {
        verdicts.push({
          target: `CPU per chunk ≤ 1.5× the bare proxy's at 128 (${id})`,
          measured: `${fmt(r.cpu.median, 1)} µs vs bare ${fmt(bare.cpu.median, 1)} µs (${fmt(r.cpu.median / bare.cpu.median)}×)`,
          met: r.cpu.median <= 1.5 * bare.cpu.median,
        });
      }
    }
  }
  // The target is read on the short prompt; the long-prompt rows are in the table (what a stream keeps).
  const shortPrompt = gateway.idle.filter((i) => i.promptBytes === 0);
  for (const idle of shortPrompt.filter((i) => i.route !== 'bare')) {
    verdicts.push({
      target: `≤ 64 KiB RSS per open idle stream at ${idle.streams} (${idle.route})`,
      measured: `${fmt(idle.rssPerStreamBytes / 1024, 1)} KiB (bare proxy ${fmt((shortPrompt.find((i) => i.route === 'bare')?.rssPerStreamBytes ?? Number.NaN) / 1024, 1)} KiB)`,
      met: idle.rssPerStreamBytes <= 64 * 1024,
    });
  }
}

const versions = ['openai', 'ai', '@ai-sdk/openai-compatible', 'ollama', 'eventsource-parser', 'typescript'];
// The bench engine's own schedule lag with 1000 streams in flight (bench/run-level-lag.ts; once a timed
// assertion in test/bench/run-level.test.ts, which now checks only that all 1000 complete with a lag).
if (!argv.includes('--skip-lag')) {
  log('bench engine lag at 1000 streams');
  const line = execFileSync(
    process.execPath,
    [fileURLToPath(new URL('./run-level-lag.js', import.meta.url))],
    {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const lag = JSON.parse(line.trim().split('\n').at(-1) ?? '{}') as {
    streams: number;
    completed: number;
    peakInFlight: number;
    lagP50Ms: number;
    lagP99Ms: number;
  };
  verdicts.push({
    target: `bench engine schedule lag with ${lag.streams} streams in flight: p50 < 250 ms, p99 < 1000 ms`,
    measured: `p50 ${fmt(lag.lagP50Ms)} ms, p99 ${fmt(lag.lagP99Ms)} ms; ${lag.completed} of ${lag.streams} complete, peak ${fmt(lag.peakInFlight, 0)} in flight`,
    met: lag.completed === lag.streams && lag.lagP50Ms < 250 && lag.lagP99Ms < 1000,
  });
}

/** Runs one of the pool benches (issues 31, 32), which prints its section's Markdown body on stdout. */
function poolSection(script: string, what: string): string {
  log(what);
  return execFileSync(
    process.execPath,
    [fileURLToPath(new URL(`./${script}`, import.meta.url)), ...(quick ? ['--quick'] : [])],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
  ).trim();
}

const md = [
  '# tokenwire benchmarks',
  '',
  `Generated by \`npm run bench\`${quick ? ' **(--quick: fewer rounds and events; not for quoting)**' : ''} on ${started.toISOString()}. Do not edit by hand.`,
  '',
  `- Machine: ${nproc()} CPUs (\`nproc\`), ${cpuModel()}, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB RAM, ${os.type()} ${os.release()}`,
  `- Load average (1/5/15 min) before: ${loadBefore.map((l) => l.toFixed(2)).join(' / ')}; after: ${loadAfter.map((l) => l.toFixed(2)).join(' / ')} (other work on the machine inflates wall times and their spread)`,
  `- Node ${process.version}; tokenwire ${packageVersion('../')}; ${versions.map((name) => `${name} ${packageVersion(name)}`).join(', ')}`,
  '',
  '## Headline',
  '',
  ...headline,
  '',
  '## Targets (issues 8 and 23)',
  '',
  '| target | measured | met |',
  '|---|---|:---:|',
  ...verdicts.map(
    (v) => `| ${v.target} | ${v.measured} | ${v.met === undefined ? '–' : v.met ? 'yes' : '**no**'} |`,
  ),
  '',
  '## 1. Decode throughput',
  '',
  'The whole response is held in memory and handed to each subject through its own injectable `fetch` as a `Response` whose body yields reads of the given size. Every subject must reassemble the exact answer text (else its row says **broken**). tokenwire runs its full path: bytes → frames → normalized events → `Result` (every check on). The floors read the same bytes: `Buffer.indexOf` of the frame delimiter alone, and that scan plus decoding each payload to a string (`buf.toString("utf8")`) and `JSON.parse`, appending the text. The rivals: a hand-rolled eventsource-parser client on every SSE dialect, a hand-rolled 30-line line-splitter client on every NDJSON dialect, and ollama-js on Ollama\'s two endpoints (all appending the text from a callback or a `for await`). "× floor" is the subject\'s time over the scan+JSON.parse floor\'s in the same round, with CPU time (`process.cpuUsage`, what the verdicts use: on a shared machine wall time also counts waiting for a core) and with wall time. Heap peak: highest heap use V8 recorded during the run minus the heap after a full GC before it; retained: after a full GC with the output kept. One worker process per (dialect, read size, group): the slow SDKs run in their own process with the floor and tokenwire, so they neither lengthen nor disturb the close comparisons. Subjects interleaved, order rotating per round, after one unrecorded warm-up round on a tenth of the stream. MB = 10^6 bytes.',
  '',
  decode.length > 0 ? decodeMarkdown(decode) : '_Skipped._',
  '',
  '## 2. Gateway overhead',
  '',
  gateway !== undefined
    ? `${gatewayMarkdown(gateway)}\n\nGateway bench wall time ${fmt(gateway.wallSeconds, 0)} s.`
    : '_Skipped._',
  '',
  "## 3. The bench CLI's own cost",
  '',
  benchCli,
  '',
  '## 4. The gateway against a bare pipe (issue 23)',
  '',
  vsPipe,
  '',
  ...(argv.includes('--skip-workers')
    ? []
    : [
        '## 5. serve --workers 2 against 1 (issue 23)',
        '',
        execFileSync(
          process.execPath,
          [fileURLToPath(new URL('./serve-workers.js', import.meta.url)), ...(quick ? ['--quick'] : [])],
          { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
        ).trim(),
        '',
      ]),
  // Issue 31: the pool's own cost (bench/pool-cost.ts) and balancing under skew (bench/pool-balance.ts).
  ...(argv.includes('--skip-pool')
    ? []
    : [
        "## 6. The pool's own cost: 4 replicas against 1 upstream (issue 31)",
        '',
        poolSection('pool-cost.js', "pool's own cost"),
        '',
        '## 7. Balancing under skew: 4 replicas, one 4× slower (issue 31)',
        '',
        poolSection('pool-balance.js', 'balancing under skew'),
        '',
      ]),
  // Issue 32: the seam's gap and what continuation costs a stream that never fails (bench/continue-cost.ts).
  ...(argv.includes('--skip-continue')
    ? []
    : [
        '## 8. Continuation: the seam, and its cost when nothing fails (issue 32)',
        '',
        poolSection('continue-cost.js', 'continuation'),
        '',
      ]),
];
writeFileSync(outFile, md.join('\n'));
log(`wrote ${outFile}`);
for (const v of verdicts) log(`${v.met ? 'MET ' : 'MISS'} ${v.target}: ${v.measured}`);
