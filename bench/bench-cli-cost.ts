/**
 * The bench CLI's own cost. How many concurrent streams does `tokenwire bench`
 * sustain on one core while sending every request less than 5 ms (p99) after its scheduled time?
 *
 * Method
 * - Two processes, each pinned to its own core with `taskset` (when it exists): the upstream (the
 *   simulator served by src/node/serve.ts, as the gateway bench starts it: bench/gateway-upstream.ts,
 *   50 tokens/s, 20 ms to the first token) on core 0, and the real CLI, `node .build/src/cli/bin.js
 *   bench URL --json` (the same compiled sources as dist/cli/bin.js), on core 1: one process per level.
 * - Each level is an open loop (`--rate`): arrivals on a Poisson schedule fixed in advance, at the rate
 *   that keeps the target number of 2-second streams in flight (Little's law). The CLI's own "schedule
 *   lag" (actual send - scheduled send) then says how late the busy process gets round to each send.
 *   In a closed loop (`-c N`) that figure would say little: a slot's next send is intended at the moment
 *   its last stream ended and goes out in the same turn of the event loop, so the lag is the start-up
 *   burst (all N sends due at 0) and near zero after it, however busy the process is.
 * - Only the steady part of a level counts: sends scheduled after one stream's length (+0.5 s) until
 *   the sending stops; streams still in flight then drain and are not in the window.
 * - The event-loop delay of the CLI process over the same window: this file, loaded into the CLI with
 *   `node --import` (it then only installs a probe), starts `perf_hooks.monitorEventLoopDelay` (1 ms
 *   resolution; the resolution is subtracted from each sample) and `process.cpuUsage` when the CLI
 *   prints its "tokenwire bench" header (the level starts right after it). The CLI itself is unchanged.
 *   Its samples are one per timer firing, so a long stall counts once; the lag, sampled by arrivals
 *   evenly in time, counts every send the stall delayed. The verdict uses the lag.
 * - Upstream CPU: /proc/<pid>/stat polled every 100 ms, so a level limited by the simulator shows; and
 *   the bench core's busy time from /proc/stat minus the bench's CPU: other processes on the shared
 *   machine are not pinned away from it.
 * - Baseline: the same probe in an idle Node process pinned to the same core, for the same time.
 *
 * stdout: the Markdown body of RESULTS.md section 3 (run-all prints the heading). Progress on stderr.
 * Flags: `--quick` (fewer levels, shorter windows), `--levels 16,64` (target streams),
 * `--window-ms N` (the steady window).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { LevelResult, RequestRow } from '../src/bench/level-recorder.ts';
import { fmt, quantile } from './stats.ts';

const PROBE_ENV = 'TOKENWIRE_BENCH_CLI_COST_PROBE';
const TOKENS_PER_SECOND = 50;
const TTFT_MS = 20;
const OUTPUT_TOKENS = 100;
/** One stream at that pace: the first token, then one gap per further token. */
const STREAM_MS = TTFT_MS + ((OUTPUT_TOKENS - 1) * 1000) / TOKENS_PER_SECOND;
/** Sends scheduled before this (from the level's start) are the ramp-up: in flight is still growing. */
const RAMP_MS = STREAM_MS + 500;
const LAG_LIMIT_MS = 5;
/** monitorEventLoopDelay's timer period; each sample is one period plus the delay. */
const RESOLUTION_MS = 1;
const UPSTREAM_CORE = 0;
const BENCH_CORE = 1;

/** What the probe measured in one process over its window. Times on the machine-wide monotonic clock. */
interface LoopWindow {
  startMonoMs: number;
  endMonoMs: number;
  cpuMs: number;
  /** The part of cpuMs spent in the kernel (socket reads, wake-ups). */
  systemCpuMs: number;
  samples: number;
  delayP50Ms: number;
  delayP99Ms: number;
  delayMaxMs: number;
}

/** The idle process's window, its own CPU share and the other work on its core meanwhile. */
type Baseline = { loop: LoopWindow; cpu: number; otherOnCore: number } | undefined;

interface ProbeConfig {
  outFile: string;
  skipMs: number;
  windowMs: number;
}

function monoMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** A timer that need not keep the process alive (in the CLI, the probe must never delay its exit). */
function sleep(ms: number, keepAlive: boolean): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    if (!keepAlive) timer.unref();
  });
}

/** Event-loop delay and CPU of this process over the next `windowMs`. */
async function measureLoop(windowMs: number, keepAlive: boolean): Promise<LoopWindow> {
  const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  const cpuBefore = process.cpuUsage();
  const startMonoMs = monoMs();
  histogram.enable();
  await sleep(windowMs, keepAlive);
  histogram.disable();
  const endMonoMs = monoMs();
  const cpu = process.cpuUsage(cpuBefore);
  // A sample is the time between two firings of a 1 ms timer: the delay is what exceeds the period.
  const delayMs = (ns: number) => Math.max(0, ns / 1e6 - RESOLUTION_MS);
  return {
    startMonoMs,
    endMonoMs,
    cpuMs: (cpu.user + cpu.system) / 1000,
    systemCpuMs: cpu.system / 1000,
    samples: histogram.count,
    delayP50Ms: delayMs(histogram.percentile(50)),
    delayP99Ms: delayMs(histogram.percentile(99)),
    delayMaxMs: delayMs(histogram.max),
  };
}

/**
 * Inside the CLI process (loaded with `--import`): the level starts right after the CLI writes its
 * "tokenwire bench" header to stderr, so that write starts the clock; the window opens `skipMs` later.
 */
function installProbe(config: ProbeConfig): void {
  const write = process.stderr.write.bind(process.stderr);
  let started = false;
  process.stderr.write = ((...args: Parameters<typeof write>) => {
    if (!started && typeof args[0] === 'string' && args[0].includes('tokenwire bench')) {
      started = true;
      void sleep(config.skipMs, false)
        .then(() => measureLoop(config.windowMs, false))
        .then((window) => writeFileSync(config.outFile, JSON.stringify(window)));
    }
    return write(...args);
  }) as typeof process.stderr.write;
}

// The parent: upstream, levels, report.

const log = (line: string) => console.error(`[bench-cli-cost] ${line}`);
const here = fileURLToPath(new URL('.', import.meta.url));
const self = new URL(import.meta.url).href;
const cliBin = fileURLToPath(new URL('../src/cli/bin.js', import.meta.url));

/** Is `taskset` there, and may this process use both cores? */
function canPin(): boolean {
  if (os.availableParallelism() < 2) return false;
  const probe = spawnSync('taskset', ['-c', `${UPSTREAM_CORE},${BENCH_CORE}`, 'true'], { stdio: 'ignore' });
  return probe.status === 0;
}

/** `node args`, pinned to `core` when pinning works. */
function nodeCommand(pin: boolean, core: number, args: string[]): [string, string[]] {
  return pin ? ['taskset', ['-c', String(core), process.execPath, ...args]] : [process.execPath, args];
}

/** CPU ms a process has used so far (utime + stime from /proc, at the usual 100 ticks a second). */
function procCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return Number.NaN;
  }
}

/**
 * Busy ms of one core so far, whoever ran on it (user + nice + system + irq + softirq + steal from
 * /proc/stat): minus the bench's own CPU, it is the other work the core did (the machine is shared).
 */
function coreBusyMs(core: number): number {
  try {
    const line = readFileSync('/proc/stat', 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`cpu${core} `));
    if (line === undefined) return Number.NaN;
    const [user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number);
    return ((user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0) + (steal ?? 0)) * 10;
  } catch {
    return Number.NaN;
  }
}

/** Samples a CPU-time counter every 100 ms, to read its rate over any window afterwards. */
class CpuSampler {
  readonly #samples: { atMs: number; cpuMs: number }[] = [];
  readonly #timer: ReturnType<typeof setInterval>;
  readonly #read: () => number;

  constructor(read: () => number) {
    this.#read = read;
    this.#take();
    this.#timer = setInterval(() => this.#take(), 100);
  }

  #take(): void {
    this.#samples.push({ atMs: monoMs(), cpuMs: this.#read() });
  }

  /** CPU used from `startMs` to `endMs`, as a share of one core (the closest samples outside them). */
  share(startMs: number, endMs: number): number {
    // A window that just ended may have no sample after it yet.
    if ((this.#samples.at(-1)?.atMs ?? 0) < endMs) this.#take();
    const before = this.#samples.filter((s) => s.atMs <= startMs).at(-1);
    const after = this.#samples.find((s) => s.atMs >= endMs);
    if (before === undefined || after === undefined) return Number.NaN;
    return (after.cpuMs - before.cpuMs) / (after.atMs - before.atMs);
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}

/** The simulator upstream in its own process; resolves with its base URL once it listens. */
function startUpstream(pin: boolean): Promise<{ child: ChildProcess; url: string }> {
  const [command, args] = nodeCommand(pin, UPSTREAM_CORE, [`${here}gateway-upstream.js`]);
  const child = spawn(command, args, {
    env: { ...process.env, BENCH_TPS: String(TOKENS_PER_SECOND), BENCH_TTFT_MS: String(TTFT_MS) },
    // Its output goes to stderr: stdout is the Markdown.
    stdio: ['ignore', 2, 2, 'ipc'],
  });
  // Never leave it listening if this process ends early.
  process.once('exit', () => child.kill());
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the upstream exited (${code}) before it listened`)));
    child.on('message', (message: { ready?: boolean; url?: string }) => {
      if (message.ready === true && message.url !== undefined) resolve({ child, url: message.url });
    });
  });
}

async function stopUpstream(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.send({ exit: true });
  const timer = setTimeout(() => child.kill('SIGKILL'), 2000);
  await exited;
  clearTimeout(timer);
}

/** Runs a pinned node process to its end; resolves with its stdout. */
function runNode(
  pin: boolean,
  args: string[],
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
): Promise<{ stdout: string; code: number | null }> {
  const [command, argv] = nodeCommand(pin, BENCH_CORE, args);
  const child = spawn(command, argv, { env, stdio: ['ignore', 'pipe', 'inherit'] });
  const chunks: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
  // SIGTERM: the CLI stops sending, lets the streams end and still prints what it has.
  const timer = setTimeout(() => child.kill('SIGTERM'), timeoutMs);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ stdout: Buffer.concat(chunks).toString('utf8'), code });
    });
  });
}

interface LevelFigures {
  streams: number;
  ratePerSecond: number;
  inFlight: number;
  completed: number;
  notOk: number;
  sendsInWindow: number;
  chunksPerSecond: number;
  streamTokensPerSecondP50: number;
  benchCpu: number;
  benchSystemCpu: number;
  upstreamCpu: number;
  /** What else ran on the bench's core meanwhile (share of the core), when pinned. */
  otherOnCore: number;
  lagP50Ms: number;
  lagP99Ms: number;
  /** The CLI's own lag p99 over the whole level (ramp-up included), as its report shows it. */
  cliLagP99Ms: number;
  loop: LoopWindow | undefined;
}

/** Mean of a timeline series over the buckets that lie wholly inside [fromMs, toMs). */
function windowMean(series: readonly number[], bucketMs: number, fromMs: number, toMs: number): number {
  const inside = series.filter((_, i) => i * bucketMs >= fromMs && (i + 1) * bucketMs <= toMs);
  return inside.length === 0 ? Number.NaN : inside.reduce((a, b) => a + b, 0) / inside.length;
}

/** The figures of one level from the CLI's JSON (its steady window) and the probes. */
function levelFigures(
  streams: number,
  ratePerSecond: number,
  level: LevelResult,
  windowMs: number,
  loop: LoopWindow | undefined,
  cpu: { upstream: number; core: number },
): LevelFigures {
  const rows: RequestRow[] = level.requests ?? [];
  const inWindow = rows.filter((r) => r.intendedMs >= RAMP_MS && r.intendedMs < RAMP_MS + windowMs);
  const ok = rows.filter((r) => r.status === 'completed' || r.status === 'truncated');
  // The timeline counts tokens; the level's own ratio of chunks to tokens turns them into chunks.
  const chunksPerToken =
    ok.reduce((a, r) => a + r.chunks, 0) /
    Math.max(
      1,
      ok.reduce((a, r) => a + r.outputTokens, 0),
    );
  const timeline = level.charts.timeline;
  const tokensPerSecond = windowMean(
    timeline.outputTokensPerSecond,
    timeline.bucketMs,
    RAMP_MS,
    RAMP_MS + windowMs,
  );
  const perStream = inWindow.filter((r) => r.tpotMs !== undefined && r.tpotMs > 0);
  const lags = inWindow.map((r) => r.lagMs);
  const counts = level.counts;
  const wallMs = loop === undefined ? Number.NaN : loop.endMonoMs - loop.startMonoMs;
  const benchCpu = (loop?.cpuMs ?? Number.NaN) / wallMs;
  return {
    streams,
    ratePerSecond,
    inFlight: windowMean(timeline.concurrency, timeline.bucketMs, RAMP_MS, RAMP_MS + windowMs),
    completed: counts.completed + counts.truncated,
    notOk: counts.incomplete + counts.failed,
    sendsInWindow: inWindow.length,
    chunksPerSecond: tokensPerSecond * chunksPerToken,
    streamTokensPerSecondP50: quantile(
      perStream.map((r) => 1000 / (r.tpotMs as number)),
      0.5,
    ),
    benchCpu,
    benchSystemCpu: (loop?.systemCpuMs ?? Number.NaN) / wallMs,
    upstreamCpu: cpu.upstream,
    otherOnCore: Math.max(0, cpu.core - benchCpu),
    lagP50Ms: quantile(lags, 0.5),
    lagP99Ms: quantile(lags, 0.99),
    cliLagP99Ms: level.metrics.lag.p99 ?? Number.NaN,
    loop,
  };
}

function readLoopWindow(file: string): LoopWindow | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as LoopWindow;
  } catch {
    return undefined;
  }
}

/** CPU counters sampled through every level: the upstream process, and the bench's core as a whole. */
interface Samplers {
  upstream: CpuSampler;
  core: CpuSampler | undefined;
}

/** One level: the CLI in its own pinned process against the upstream, at `streams` in flight. */
async function runLevelProcess(
  pin: boolean,
  baseUrl: string,
  streams: number,
  windowMs: number,
  samplers: Samplers,
  dir: string,
): Promise<LevelFigures | undefined> {
  const ratePerSecond = Math.round((streams * 1000 * 100) / STREAM_MS) / 100;
  const durationMs = RAMP_MS + windowMs;
  const probe: ProbeConfig = { outFile: `${dir}/loop-${streams}.json`, skipMs: RAMP_MS, windowMs };
  const cliArgs = [
    'bench',
    `${baseUrl}/v1/chat/completions`,
    '--rate',
    String(ratePerSecond),
    '--duration',
    `${durationMs}ms`,
    '--output-tokens',
    String(OUTPUT_TOKENS),
    '--no-progress',
    '--json',
  ];
  log(`${streams} streams: --rate ${ratePerSecond} --duration ${durationMs}ms`);
  const { stdout, code } = await runNode(
    pin,
    ['--import', self, cliBin, ...cliArgs],
    { ...process.env, [PROBE_ENV]: JSON.stringify(probe) },
    durationMs + 4 * STREAM_MS + 30_000,
  );
  let level: LevelResult | undefined;
  try {
    level = (JSON.parse(stdout) as { levels: LevelResult[] }).levels[0];
  } catch {
    log(`${streams} streams: the CLI exited ${code} without JSON`);
    return undefined;
  }
  if (level === undefined) return undefined;
  const loop = readLoopWindow(probe.outFile);
  const share = (sampler: CpuSampler | undefined) =>
    loop === undefined || sampler === undefined
      ? Number.NaN
      : sampler.share(loop.startMonoMs, loop.endMonoMs);
  const figures = levelFigures(streams, ratePerSecond, level, windowMs, loop, {
    upstream: share(samplers.upstream),
    core: share(samplers.core),
  });
  log(
    `${streams} streams: in flight ${fmt(figures.inFlight, 0)}, ${fmt(figures.chunksPerSecond, 0)} chunks/s, CPU ${fmt(figures.benchCpu * 100, 0)} %, lag p99 ${fmt(figures.lagP99Ms)} ms, loop delay p99 ${fmt(loop?.delayP99Ms ?? Number.NaN)} ms`,
  );
  return figures;
}

const pct = (share: number) => `${fmt(share * 100, 0)} %`;

function levelRow(f: LevelFigures): string {
  const cells = [
    f.streams,
    fmt(f.ratePerSecond, 1),
    fmt(f.inFlight, 0),
    `${f.completed} / ${f.notOk}`,
    fmt(f.chunksPerSecond, 0),
    fmt(f.streamTokensPerSecondP50, 1),
    `${pct(f.benchCpu)} (${pct(f.benchSystemCpu)})`,
    pct(f.upstreamCpu),
    pct(f.otherOnCore),
    f.sendsInWindow,
    fmt(f.lagP50Ms),
    fmt(f.lagP99Ms),
    fmt(f.cliLagP99Ms),
    fmt(f.loop?.delayP99Ms ?? Number.NaN),
    fmt(f.loop?.delayMaxMs ?? Number.NaN),
  ];
  return `| ${cells.join(' | ')} |`;
}

/** Other work on the bench's core above which a failed level may be the machine's doing, not the bench's. */
const NOISY_SHARE = 0.1;

/**
 * The highest level that, like every level below it, sent with lag p99 under the limit and lost no
 * stream; and a warning when the first level that failed shared its core with other work.
 */
function verdict(levels: readonly LevelFigures[]): string {
  let best: LevelFigures | undefined;
  let failed: LevelFigures | undefined;
  for (const f of levels) {
    if (!(f.lagP99Ms < LAG_LIMIT_MS) || f.notOk > 0) {
      failed = f;
      break;
    }
    best = f;
  }
  const limit = `schedule lag p99 < ${LAG_LIMIT_MS} ms`;
  const noisy =
    failed !== undefined && failed.otherOnCore > NOISY_SHARE
      ? ` The first level over the limit (${failed.streams} streams, lag p99 ${fmt(failed.lagP99Ms)} ms) shared the core with ${pct(failed.otherOnCore)} other work: on a quiet machine the limit may be higher.`
      : '';
  if (best === undefined) return `**Verdict:** no level met ${limit}.${noisy}`;
  const top = best === levels.at(-1) ? ' (the highest level tried)' : '';
  return `**Verdict:** \`tokenwire bench\` sustains ${best.streams} concurrent streams${top} (${fmt(best.inFlight, 0)} in flight on average, ${fmt(best.chunksPerSecond, 0)} content chunks/s, ${pct(best.benchCpu)} of the core) on one core with ${limit} (measured ${fmt(best.lagP99Ms)} ms; event-loop delay p99 ${fmt(best.loop?.delayP99Ms ?? Number.NaN)} ms).${noisy}`;
}

function markdown(
  levels: readonly LevelFigures[],
  skipped: readonly number[],
  baseline: Baseline,
  pin: boolean,
  windowMs: number,
  load: { before: number[]; after: number[] },
): string {
  const where = pin
    ? `the CLI pinned to core ${BENCH_CORE} and the upstream to core ${UPSTREAM_CORE} with \`taskset\``
    : '**not pinned** (`taskset` missing or fewer than 2 cores): the CLI and the upstream share the machine, so the CPU figures are of the process, not of a core it owns';
  const loads = (l: number[]) => l.map((x) => x.toFixed(2)).join(' / ');
  return [
    `The real CLI, \`node .build/src/cli/bin.js bench URL --rate R --duration D --output-tokens ${OUTPUT_TOKENS} --json\` (the sources of \`dist/cli/bin.js\`), one process per level, against the simulator in another process (${TOKENS_PER_SECOND} tokens/s ±10 %, ${TTFT_MS} ms to the first token, ${OUTPUT_TOKENS}-token answers: ${fmt(STREAM_MS / 1000, 1)} s streams, openai-chat over loopback HTTP); ${where}.`,
    '',
    `Each level is an **open loop**: Poisson arrivals at the rate that keeps the target number of streams in flight (rate = streams / ${fmt(STREAM_MS / 1000, 1)} s). **Schedule lag** is the CLI's own figure, actual send − scheduled send, per request; with a schedule fixed in advance it shows how late the busy process gets to each send, which is the honest reading of "scheduling lag". (In a closed loop, \`-c N\`, the next send is due when the slot's stream ended and goes out in the same event-loop turn, so the lag there is only the start-up burst of N sends and near zero after it, however busy the process is.) Only the steady part counts: sends scheduled from ${fmt(RAMP_MS / 1000, 1)} s (one stream's length + 0.5 s, when the streams in flight have built up) to ${fmt((RAMP_MS + windowMs) / 1000, 1)} s, when sending stops; "CLI lag p99" is what the CLI itself reports over the whole level, start-up included. **Loop delay** is \`perf_hooks.monitorEventLoopDelay\` (1 ms resolution, the resolution subtracted) inside the CLI process over the same window, loaded with \`node --import\` (the CLI code unchanged), as is bench CPU (\`process.cpuUsage\`, share of one core, all its threads; in brackets the kernel's part). Upstream CPU: \`/proc/<pid>/stat\` over the window; other work on the bench's core: that core's busy time in \`/proc/stat\` (steal included) minus the bench's CPU (the machine is shared: other processes, not pinned, run there too). Content chunks/s: the chunks the CLI read in the window (its timeline). Tok/s per stream: p50 of 1000 / TPOT of the streams sent in the window (the simulator's pace is ${TOKENS_PER_SECOND}: lower means a process fell behind).`,
    '',
    '| streams (target) | arrivals/s | in flight (mean) | ok / not ok | content chunks/s | tok/s per stream p50 | bench CPU (kernel) | upstream CPU | other work on the bench core | sends in window | lag p50 ms | lag p99 ms | CLI lag p99 ms (whole level) | loop delay p99 ms | loop delay max ms |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...levels.map(levelRow),
    '',
    verdict(levels),
    '',
    baseline === undefined
      ? '- Baseline: not measured.'
      : `- Baseline: an idle Node process${pin ? ` pinned to core ${BENCH_CORE}` : ''}, same probe, ${fmt(windowMs / 1000, 1)} s: event-loop delay p50 ${fmt(baseline.loop.delayP50Ms)} ms, p99 ${fmt(baseline.loop.delayP99Ms)} ms, max ${fmt(baseline.loop.delayMaxMs)} ms (${baseline.loop.samples} samples); the probe's own CPU ${pct(baseline.cpu)}; other work on the core meanwhile ${pct(baseline.otherOnCore)}. The machine is shared: this is the floor a bare timer sees here.`,
    `- Load average (1/5/15 min) before: ${loads(load.before)}; after: ${loads(load.after)}; ${os.availableParallelism()} CPUs.`,
    ...(skipped.length > 0 ? [`- Not run (time budget): ${skipped.join(', ')} streams.`] : []),
  ].join('\n');
}

/** `--name 1,2,3` or the default. */
function listFlag(name: string, fallback: number[]): number[] {
  const at = process.argv.indexOf(name);
  return at === -1 ? fallback : (process.argv[at + 1] ?? '').split(',').map(Number);
}

/** The idle baseline: the probe alone in a pinned process, with the other work on its core meanwhile. */
async function idleBaseline(pin: boolean, windowMs: number, core: CpuSampler | undefined): Promise<Baseline> {
  log(`baseline: idle node, ${windowMs} ms`);
  const idle = await runNode(
    pin,
    [fileURLToPath(import.meta.url), '--idle-baseline', String(windowMs)],
    process.env,
    windowMs + 10_000,
  );
  try {
    const loop = JSON.parse(idle.stdout) as LoopWindow;
    const cpu = loop.cpuMs / (loop.endMonoMs - loop.startMonoMs);
    const busy = core === undefined ? Number.NaN : core.share(loop.startMonoMs, loop.endMonoMs);
    return { loop, cpu, otherOnCore: Math.max(0, busy - cpu) };
  } catch {
    return undefined;
  }
}

async function main(): Promise<void> {
  const quick = process.argv.includes('--quick');
  const levels = listFlag('--levels', quick ? [16, 128, 512] : [16, 32, 64, 128, 192, 256, 384, 512, 1024]);
  const windowMs = listFlag('--window-ms', [quick ? 1500 : 3000])[0] as number;
  const budgetMs = quick ? 35_000 : 110_000;
  const startedMs = monoMs();
  const loadBefore = os.loadavg();
  const pin = canPin();
  if (!pin) log('taskset unusable or fewer than 2 cores: running unpinned');
  const dir = mkdtempSync(`${os.tmpdir()}/bench-cli-cost-`);
  const core = pin ? new CpuSampler(() => coreBusyMs(BENCH_CORE)) : undefined;
  let upstream: ChildProcess | undefined;
  let upstreamCpu: CpuSampler | undefined;
  const results: LevelFigures[] = [];
  const skipped: number[] = [];
  let baseline: Baseline;
  try {
    baseline = await idleBaseline(pin, windowMs, core);
    const started = await startUpstream(pin);
    upstream = started.child;
    const pid = upstream.pid ?? -1;
    upstreamCpu = new CpuSampler(() => procCpuMs(pid));
    for (const streams of levels) {
      const levelMs = RAMP_MS + windowMs + STREAM_MS + 1500;
      if (monoMs() - startedMs + levelMs > budgetMs) {
        skipped.push(streams);
        continue;
      }
      const samplers = { upstream: upstreamCpu, core };
      const figures = await runLevelProcess(pin, started.url, streams, windowMs, samplers, dir);
      if (figures !== undefined) results.push(figures);
    }
  } finally {
    core?.stop();
    upstreamCpu?.stop();
    if (upstream !== undefined) await stopUpstream(upstream);
    rmSync(dir, { recursive: true, force: true });
  }
  const md = markdown(results, skipped, baseline, pin, windowMs, { before: loadBefore, after: os.loadavg() });
  process.stdout.write(`${md}\n`);
  log(`done in ${fmt((monoMs() - startedMs) / 1000, 1)} s`);
}

/** `--idle-baseline MS`: the probe in a process doing nothing else; the window as JSON on stdout. */
async function idleProcess(): Promise<void> {
  const at = process.argv.indexOf('--idle-baseline');
  const window = await measureLoop(Number(process.argv[at + 1]), true);
  process.stdout.write(JSON.stringify(window));
}

const probeConfig = process.env[PROBE_ENV];
if (probeConfig !== undefined) {
  delete process.env[PROBE_ENV];
  installProbe(JSON.parse(probeConfig) as ProbeConfig);
} else if (process.argv.includes('--idle-baseline')) {
  await idleProcess();
} else {
  await main();
}
