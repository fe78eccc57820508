/**
 * Decode throughput: tokenwire's client full path (bytes -> events -> Result) beside the libraries users
 * would use instead, and two floors, on one large stream held in memory.
 *
 * `node .build/bench/decode-throughput.js` runs every dialect and read size, one worker process per
 * (dialect, read size, subject group), and prints the Markdown section. A worker (`--worker`) runs its
 * subjects in interleaved rounds (the order rotates each round, after one unrecorded warm-up round on a
 * tenth of the stream) and prints JSON.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import type { DialectId } from '../src/dialects/dialect.ts';
import { DIALECTS } from '../src/dialects/registry.ts';
import { answerPieces, type DecodeStream, encodeStream } from './decode-data.ts';
import {
  memoryFetch,
  type Subject,
  type SubjectGroup,
  type SubjectOutput,
  subjectsFor,
} from './decode-subjects.ts';
import { fmt, fmtSpread, type Spread, spread } from './stats.ts';

export const READ_SIZES = [16 * 1024, 64 * 1024] as const;
export const DEFAULT_EVENTS = 200_000;
/**
 * Recorded rounds. The fast group of the two dialects with targets is cheap, so it gets more (a steadier
 * median on a busy machine); everything else gets the 5 the issue asks for.
 */
export function defaultRounds(dialect: DialectId, group: SubjectGroup): number {
  return group === 'fast' && isHeadline(dialect) ? 7 : 5;
}

/** The two dialects of the SDK comparisons: more rounds for a steadier median. */
export function isHeadline(dialect: DialectId): boolean {
  return dialect === 'openai-chat' || dialect === 'ollama-chat';
}

/** Read sizes per dialect: both, for every dialect. */
export function readSizesFor(_dialect: DialectId): readonly number[] {
  return READ_SIZES;
}

/** One recorded run of one subject. */
interface RunRecord {
  round: number;
  ms: number;
  /** CPU time of this process (user + system) during the run. */
  cpuMs: number;
  /** Peak heap used during the run minus the heap after a full GC before it, in bytes. */
  heapPeakBytes: number;
  /** Heap still used after a full GC with the subject's output held, minus the baseline. */
  heapRetainedBytes: number;
}

export interface SubjectReport {
  id: string;
  label: string;
  /** Why the output is wrong (text differs, incomplete), or undefined when every run was right. */
  broken?: string | undefined;
  runs: RunRecord[];
  ms: Spread;
  cpuMs: Spread;
  eventsPerSecond: Spread;
  mbPerSecond: Spread;
  /** This subject's wall time over the scan+JSON.parse floor's wall time in the same round. */
  ratioToFloor: Spread;
  /** The same with CPU time: insensitive to the process waiting for a core on a busy machine. */
  cpuRatioToFloor: Spread;
  heapPeakMb: Spread;
  heapRetainedMb: Spread;
}

export interface WorkerReport {
  dialect: DialectId;
  group: SubjectGroup;
  readBytes: number;
  bytes: number;
  contentEvents: number;
  frames: number;
  rounds: number;
  subjects: SubjectReport[];
  /** Set when the worker process failed (no subjects then): one dialect's failure does not end the run. */
  failure?: string | undefined;
}

declare const gc: (() => void) | undefined;

function collect(): void {
  if (typeof gc === 'function') {
    gc();
    gc();
  }
}

/** One run: wall and CPU time, and the peak heap V8 recorded before each GC of the run and at its end. */
async function measure(
  subject: Subject,
  data: DecodeStream,
  readBytes: number,
): Promise<{ ms: number; cpuMs: number; heapPeak: number; heapRetained: number; output: SubjectOutput }> {
  const fetch = memoryFetch(data, readBytes);
  collect();
  const before = process.memoryUsage().heapUsed;
  const profiler = new v8.GCProfiler();
  profiler.start();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const output = await subject.run(fetch);
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const endHeap = process.memoryUsage().heapUsed;
  const profile = profiler.stop() as {
    statistics: { beforeGC: { heapStatistics: { usedHeapSize: number } } }[];
  };
  let peak = endHeap;
  for (const record of profile.statistics) peak = Math.max(peak, record.beforeGC.heapStatistics.usedHeapSize);
  collect();
  const retained = process.memoryUsage().heapUsed;
  // Keep the output alive across the measurement of what it retains.
  if (output.text === '\u0000never') throw new Error('unreachable');
  return {
    ms,
    cpuMs: (cpu.user + cpu.system) / 1000,
    heapPeak: peak - before,
    heapRetained: retained - before,
    output,
  };
}

function check(output: SubjectOutput, data: DecodeStream): string | undefined {
  if (output.problem !== undefined) return output.problem;
  if (output.text === undefined) {
    if (output.frames !== data.frames) return `counted ${output.frames} frames, expected ${data.frames}`;
    return undefined;
  }
  if (output.text === data.expectedText) return undefined;
  const a = output.text;
  const b = data.expectedText;
  let at = 0;
  while (at < a.length && at < b.length && a[at] === b[at]) at += 1;
  return `text differs at char ${at} (got ${a.length} chars, expected ${b.length}): ${JSON.stringify(a.slice(at, at + 20))} vs ${JSON.stringify(b.slice(at, at + 20))}`;
}

/** Runs one (dialect, read size, group) in this process. */
export async function runWorker(
  dialect: DialectId,
  group: SubjectGroup,
  readBytes: number,
  rounds: number,
  events: number,
  only?: readonly string[],
): Promise<WorkerReport> {
  const pieces = await answerPieces(events);
  const data = encodeStream(dialect, pieces);
  // The warm-up round reads a tenth of the stream: enough for the JIT, without paying a whole
  // round of the slowest subjects.
  const warmup = encodeStream(dialect, pieces.slice(0, Math.ceil(events / 10)));
  let subjects = subjectsFor(dialect, group);
  if (only !== undefined && only.length > 0) subjects = subjects.filter((s) => only.includes(s.id));
  const records = new Map<string, RunRecord[]>(subjects.map((s) => [s.id, []]));
  const broken = new Map<string, string>();
  for (let round = 0; round <= rounds; round++) {
    // Round 0 warms up the JIT (on the short stream) and is not recorded; then the order rotates,
    // A B C / B C A / ...
    const shift = round % subjects.length;
    const order = [...subjects.slice(shift), ...subjects.slice(0, shift)];
    for (const subject of order) {
      if (broken.has(subject.id)) continue;
      const input = round === 0 ? warmup : data;
      let run: Awaited<ReturnType<typeof measure>>;
      try {
        run = await measure(subject, input, readBytes);
      } catch (error) {
        broken.set(subject.id, `threw: ${(error as Error).message ?? String(error)}`);
        continue;
      }
      const problem = check(run.output, input);
      if (problem !== undefined) {
        broken.set(subject.id, problem);
        continue;
      }
      if (round > 0) {
        records.get(subject.id)!.push({
          round,
          ms: run.ms,
          cpuMs: run.cpuMs,
          heapPeakBytes: run.heapPeak,
          heapRetainedBytes: run.heapRetained,
        });
      }
    }
  }
  const floorByRound = new Map<number, RunRecord>();
  for (const r of records.get('floor-parse') ?? []) floorByRound.set(r.round, r);
  const mb = 1e6;
  return {
    dialect,
    group,
    readBytes,
    bytes: data.bytes.length,
    contentEvents: data.contentEvents,
    frames: data.frames,
    rounds,
    subjects: subjects.map((subject) => {
      const runs = records.get(subject.id)!;
      const paired = runs.filter((r) => floorByRound.has(r.round));
      return {
        id: subject.id,
        label: subject.label,
        broken: broken.get(subject.id),
        runs,
        ms: spread(runs.map((r) => r.ms)),
        cpuMs: spread(runs.map((r) => r.cpuMs)),
        eventsPerSecond: spread(runs.map((r) => data.contentEvents / (r.ms / 1000))),
        mbPerSecond: spread(runs.map((r) => data.bytes.length / mb / (r.ms / 1000))),
        ratioToFloor: spread(paired.map((r) => r.ms / floorByRound.get(r.round)!.ms)),
        cpuRatioToFloor: spread(paired.map((r) => r.cpuMs / floorByRound.get(r.round)!.cpuMs)),
        heapPeakMb: spread(runs.map((r) => r.heapPeakBytes / mb)),
        heapRetainedMb: spread(runs.map((r) => r.heapRetainedBytes / mb)),
      };
    }),
  };
}

export interface DecodeBenchOptions {
  dialects?: readonly DialectId[] | undefined;
  readSizes?: readonly number[] | undefined;
  groups?: readonly SubjectGroup[] | undefined;
  /** Recorded rounds for every group (default: `defaultRounds`). */
  rounds?: number | undefined;
  events?: number | undefined;
  /** Extra node flags for the workers (e.g. `--cpu-prof`). */
  nodeFlags?: readonly string[] | undefined;
  only?: readonly string[] | undefined;
  log?: ((line: string) => void) | undefined;
}

/** Runs every (dialect, read size, group) in its own worker process, one after another. */
export function runDecodeBench(options: DecodeBenchOptions = {}): WorkerReport[] {
  const self = fileURLToPath(import.meta.url);
  const reports: WorkerReport[] = [];
  // The registry, so a dialect joins the bench when it is registered.
  for (const dialect of options.dialects ?? (Object.keys(DIALECTS) as DialectId[])) {
    for (const readBytes of options.readSizes ?? readSizesFor(dialect)) {
      for (const group of options.groups ?? (['fast', 'sdk'] as const)) {
        if (subjectsFor(dialect, group).length === 0) continue;
        const started = Date.now();
        const args = [
          '--expose-gc',
          ...(options.nodeFlags ?? []),
          self,
          '--worker',
          dialect,
          group,
          String(readBytes),
          String(options.rounds ?? defaultRounds(dialect, group)),
          String(options.events ?? DEFAULT_EVENTS),
          (options.only ?? []).join(','),
        ];
        let report: WorkerReport;
        try {
          const out = execFileSync(process.execPath, args, {
            encoding: 'utf8',
            maxBuffer: 64 * 1024 * 1024,
            stdio: ['ignore', 'pipe', 'inherit'],
          });
          report = JSON.parse(out) as WorkerReport;
        } catch (error) {
          const failure = (error as Error).message.split('\n')[0] ?? String(error);
          report = {
            dialect,
            group,
            readBytes,
            bytes: 0,
            contentEvents: 0,
            frames: 0,
            rounds: 0,
            subjects: [],
            failure,
          };
        }
        reports.push(report);
        options.log?.(
          `decode ${dialect} ${readBytes / 1024} KiB ${group}: ${report.subjects
            .map(
              (s) =>
                `${s.id} ${s.broken === undefined ? `${fmt(s.cpuRatioToFloor.median)}x cpu, ${fmt(s.ratioToFloor.median)}x wall` : 'BROKEN'}`,
            )
            .join('; ')} (${((Date.now() - started) / 1000).toFixed(1)} s)`,
        );
      }
    }
  }
  return reports;
}

/** The Markdown tables for the decode section of RESULTS.md. */
export function decodeMarkdown(reports: readonly WorkerReport[]): string {
  const lines: string[] = [];
  for (const report of reports) {
    if (report.failure !== undefined) {
      lines.push(
        `### ${report.dialect}, ${report.readBytes / 1024} KiB reads${report.group === 'sdk' ? ', SDKs' : ''}`,
        '',
        `**The worker failed**: ${report.failure}`,
        '',
      );
      continue;
    }
    lines.push(
      `### ${report.dialect}, ${report.readBytes / 1024} KiB reads${report.group === 'sdk' ? ', SDKs' : ''}`,
      '',
      `${report.contentEvents.toLocaleString('en-US')} content events, ${report.frames.toLocaleString('en-US')} frames, ${(report.bytes / 1e6).toFixed(1)} MB; ${report.rounds} rounds, median (min–max).`,
      '',
      '| subject | wall ms | CPU ms | events/s | MB/s | × floor (CPU) | × floor (wall) | heap peak +MB | retained +MB |',
      '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    );
    for (const s of report.subjects) {
      if (s.broken !== undefined) {
        lines.push(`| ${s.label} | **broken**: ${s.broken.replaceAll('|', '\\|')} | | | | | | | |`);
        continue;
      }
      lines.push(
        `| ${s.label} | ${fmtSpread(s.ms, 0)} | ${fmtSpread(s.cpuMs, 0)} | ${fmtSpread(s.eventsPerSecond, 0)} | ${fmtSpread(s.mbPerSecond, 1)} | ${fmtSpread(s.cpuRatioToFloor, 2, 'x')} | ${fmtSpread(s.ratioToFloor, 2, 'x')} | ${fmtSpread(s.heapPeakMb, 0)} | ${fmtSpread(s.heapRetainedMb, 1)} |`,
      );
    }
    lines.push('');
  }
  return lines.join('\n');
}

if (process.argv[2] === '--worker') {
  const [, , , dialect, group, readBytes, rounds, events, only] = process.argv;
  const report = await runWorker(
    dialect as DialectId,
    group as SubjectGroup,
    Number(readBytes),
    Number(rounds),
    Number(events),
    only === undefined || only === '' ? undefined : only.split(','),
  );
  process.stdout.write(JSON.stringify(report));
} else if (process.argv[1] === fileURLToPath(import.meta.url)) {
  // Standalone: `node .build/bench/decode-throughput.js [dialect...] [--rounds N] [--events N]
  //   [--only a,b] [--read 64] [--group fast|sdk] [--cpu-prof-dir dir]`
  const argv = process.argv.slice(2);
  const flag = (name: string): string | undefined => {
    const at = argv.indexOf(name);
    if (at === -1) return undefined;
    const value = argv[at + 1];
    argv.splice(at, 2);
    return value;
  };
  const rounds = flag('--rounds');
  const events = flag('--events');
  const only = flag('--only');
  const read = flag('--read');
  const group = flag('--group');
  const profile = flag('--cpu-prof-dir');
  const reports = runDecodeBench({
    dialects: argv.length > 0 ? (argv as DialectId[]) : undefined,
    rounds: rounds === undefined ? undefined : Number(rounds),
    events: events === undefined ? undefined : Number(events),
    only: only?.split(','),
    groups: group === undefined ? undefined : [group as SubjectGroup],
    readSizes: read === undefined ? undefined : [Number(read) * 1024],
    nodeFlags: profile === undefined ? undefined : ['--cpu-prof', `--cpu-prof-dir=${profile}`],
    log: (line) => console.error(line),
  });
  process.stdout.write(`${decodeMarkdown(reports)}\n`);
}
