import { readFile, writeFile } from 'node:fs/promises';
import { htmlReport } from '../../bench/html-report.ts';
import type { LevelResult } from '../../bench/level-recorder.ts';
import { describeLoad, type LoadSpec } from '../../bench/load.ts';
import { type BenchTarget, runLevel } from '../../bench/run-level.ts';
import { formatLevel, formatNameNotes, formatSweep } from '../../bench/text-report.ts';
import {
  createWorkload,
  type DatasetEntry,
  type Prompt,
  parseDataset,
  parsePrompts,
  type Workload,
} from '../../bench/workload.ts';
import type { TimeoutOptions } from '../../client/timeouts.ts';
import { DIALECT_IDS, type DialectId } from '../../dialects/dialect.ts';
import { getDialect } from '../../dialects/registry.ts';
import { requirePackages } from '../../node/optional-package.ts';
import { type ServedHandler, serve } from '../../node/serve.ts';
import { createUndiciFetch, loadUndici } from '../../node/undici-fetch.ts';
import { createSim } from '../../sim/create-sim.ts';
import { BENCH_HELP, type BenchConfig, defaultRequests, parseBenchArgs } from '../bench/bench-options.ts';
import { ProgressDisplay } from '../bench/progress.ts';
import { resolveEndpoint } from '../chat/resolve-endpoint.ts';
import { type CliIo, styleFor, UsageError } from '../cli-io.ts';

export { BENCH_HELP } from '../bench/bench-options.ts';

const VERSION = '0.1.0';

interface ResolvedTarget {
  target: BenchTarget;
  model: string | undefined;
  /** The simulator this process serves, when there was no URL. */
  served?: ServedHandler | undefined;
  description: string;
}

/** `tokenwire bench`: parses, resolves the target, runs each load level, reports. */
export async function benchCommand(argv: string[], io: CliIo): Promise<number> {
  const config = parseBenchArgs(argv);
  if (config.help) {
    io.stdout.write(BENCH_HELP);
    return 0;
  }
  const errStyle = styleFor(io.stderr, io.env);

  let prompts: Prompt[] | undefined;
  if (config.promptsFile !== undefined) {
    let text: string;
    try {
      text = await readFile(config.promptsFile, 'utf8');
    } catch (error) {
      throw new UsageError(`cannot read --prompts ${config.promptsFile}: ${(error as Error).message}`);
    }
    try {
      prompts = parsePrompts(text);
    } catch (error) {
      throw new UsageError(`--prompts ${config.promptsFile}: ${(error as Error).message}`);
    }
  }

  let dataset: DatasetEntry[] | undefined;
  const datasetNotes: string[] = [];
  if (config.datasetFile !== undefined) {
    let text: string;
    try {
      text = await readFile(config.datasetFile, 'utf8');
    } catch (error) {
      throw new UsageError(`cannot read --dataset ${config.datasetFile}: ${(error as Error).message}`);
    }
    try {
      const parsed = parseDataset(text);
      dataset = parsed.entries;
      if (parsed.skipped > 0)
        datasetNotes.push(
          `--dataset: ${parsed.skipped} record(s) skipped (no user turn, or not a conversation or prompt)`,
        );
    } catch (error) {
      throw new UsageError(`--dataset ${config.datasetFile}: ${(error as Error).message}`);
    }
  }

  const resolved = await resolveTarget(config);
  const notes: string[] = [...datasetNotes];
  try {
    const workload = createWorkload({
      dialect: resolved.target.dialect,
      model: resolved.model,
      prompts,
      dataset,
      inputTokens: config.inputTokens,
      outputTokens: config.outputTokens,
      ignoreEos: config.ignoreEos,
      seed: config.seed,
    });
    notes.push(...workload.warnings);
    io.stderr.write(`${errStyle.bold('tokenwire bench')} ${resolved.description}\n`);
    for (const note of notes) io.stderr.write(`${errStyle.yellow('note:')} ${note}\n`);
    return await runLevels(config, argv, resolved, workload, notes, io);
  } finally {
    await resolved.served?.close();
  }
}

async function resolveTarget(config: BenchConfig): Promise<ResolvedTarget> {
  // Optional peer dependencies: a missing one is named before any load starts.
  await loadUndici();
  if (config.url === undefined) {
    requirePackages(
      ['gpt-tokenizer/encoding/cl100k_base'],
      'The built-in simulated model (bench without a URL)',
    );
    const timing: Record<string, number> = { loadMs: config.sim.loadMs ?? 0 };
    if (config.sim.ttftMs !== undefined) timing.ttftMs = config.sim.ttftMs;
    if (config.sim.tokensPerSecond !== undefined) timing.tokensPerSecond = config.sim.tokensPerSecond;
    if (config.sim.jitter !== undefined) timing.jitter = config.sim.jitter;
    const sim = createSim({ timing, seed: config.seed });
    // Served on loopback (not called in-process) so the bench measures a real HTTP path.
    const served = await serve(sim.fetch, { host: '127.0.0.1', port: 0 });
    const dialect = (config.dialect ?? 'openai-chat') as DialectId;
    const url = `${served.url}${getDialect(dialect).paths[0]}`;
    const speed = `${config.sim.tokensPerSecond ?? 50} tok/s${
      config.sim.ttftMs === undefined ? '' : `, TTFT ${config.sim.ttftMs} ms`
    }`;
    return {
      target: { url, dialect, headers: config.headers, fetch: benchFetch() },
      model: config.model ?? 'sim',
      served,
      description: `-> the built-in simulator (${speed}) at ${url}, served by this process (${dialect})`,
    };
  }
  const endpoint = await resolveEndpoint({
    url: config.url,
    dialect: config.dialect,
    model: config.model,
    headers: config.headers,
    fetch: (request) => fetch(request),
    findModel: true,
  });
  if (endpoint.dialect === undefined) {
    throw new UsageError(
      `cannot tell the dialect of ${safeUrl(endpoint.url)} from its path; give --dialect (${DIALECT_IDS.join(', ')})`,
    );
  }
  const shown = safeUrl(endpoint.url);
  return {
    target: { url: endpoint.url, dialect: endpoint.dialect, headers: config.headers, fetch: benchFetch() },
    model: endpoint.model,
    description: `-> ${shown} (${endpoint.dialect}${endpoint.model === undefined ? '' : `, model ${endpoint.model}`})`,
  };
}

/**
 * The load's fetch: undici's dispatch with keep-alive, its bodies read by events (node/undici-fetch.ts).
 * The bench's own allocations are what make its schedule late under load (young-generation GC pauses,
 * bench/RESULTS.md section 3); undici's fetch and Web Streams allocate several times more per chunk.
 */
function benchFetch(): BenchTarget['fetch'] {
  return createUndiciFetch();
}

async function runLevels(
  config: BenchConfig,
  argv: readonly string[],
  resolved: ResolvedTarget,
  workload: Workload,
  notes: string[],
  io: CliIo,
): Promise<number> {
  const errStyle = styleFor(io.stderr, io.env);
  const outStyle = styleFor(io.stdout, io.env);
  const progress = config.progress ? new ProgressDisplay(io.stderr, errStyle) : undefined;
  const timeouts: TimeoutOptions = {};
  if (config.timeoutMs > 0) timeouts.totalMs = config.timeoutMs;
  if (config.idleTimeoutMs > 0) timeouts.idleMs = config.idleTimeoutMs;
  const base = {
    target: resolved.target,
    workload,
    timeouts,
    slo: config.slo,
    seed: config.seed,
    signal: io.signal,
  };
  let firstIndex = 0;
  const results: LevelResult[] = [];
  try {
    const warmup = config.warmup ?? (resolved.served !== undefined ? 1 : 0);
    if (warmup > 0) {
      const first = config.loads[0] as LoadSpec;
      const load: LoadSpec =
        first.kind === 'closed'
          ? { kind: 'closed', concurrency: Math.min(first.concurrency, warmup) }
          : { kind: 'closed', concurrency: Math.min(first.maxConcurrency ?? warmup, warmup) };
      const run = runLevel({ ...base, load, requests: warmup, keepRequests: false, slo: undefined });
      progress?.start('warmup', run.progress);
      const result = await run.done;
      progress?.stop();
      firstIndex += result.counts.sent;
      if (
        result.counts.sent > 0 &&
        result.counts.completed + result.counts.truncated === 0 &&
        !io.signal.aborted
      ) {
        const error = result.errors[0];
        io.stderr.write(
          `${errStyle.red('error:')} every warmup request failed${error === undefined ? '' : ` (${error.code}: ${error.example})`}\n`,
        );
        return 1;
      }
    }
    for (let i = 0; i < config.loads.length && !io.signal.aborted; i++) {
      const load = config.loads[i] as LoadSpec;
      const requests =
        config.requests ?? (config.durationMs === undefined ? defaultRequests(load) : undefined);
      const run = runLevel({ ...base, load, requests, durationMs: config.durationMs, firstIndex });
      const label =
        config.loads.length > 1
          ? `${describeLoad(load)} (${i + 1}/${config.loads.length})`
          : describeLoad(load);
      progress?.start(label, run.progress);
      const result = await run.done;
      progress?.stop();
      results.push(result);
      firstIndex += result.counts.sent;
      if (!config.json) io.stdout.write(`${formatLevel(result, outStyle)}\n`);
    }
  } finally {
    progress?.stop();
  }

  if (!config.json) {
    if (results.length > 1) io.stdout.write(`${formatSweep(results, outStyle)}\n`);
    io.stdout.write(formatNameNotes(outStyle));
  } else {
    const output = {
      tool: 'tokenwire bench',
      version: VERSION,
      generatedAt: new Date().toISOString(),
      target: {
        url: safeUrl(resolved.target.url),
        dialect: resolved.target.dialect,
        model: resolved.model,
        simulator: resolved.served !== undefined ? config.sim : undefined,
      },
      notes,
      levels: results,
    };
    io.stdout.write(`${JSON.stringify(output)}\n`);
  }
  if (config.html !== undefined) {
    const html = htmlReport({
      target: resolved.served === undefined ? safeUrl(resolved.target.url) : 'the built-in simulator',
      command: `tokenwire bench ${redactArgs(argv)}`,
      generatedAt: new Date(),
      levels: results,
      notes,
    });
    await writeFile(config.html, html);
    io.stderr.write(`HTML report written to ${config.html}\n`);
  }

  if (io.signal.aborted) {
    io.stderr.write(`${errStyle.yellow('interrupted:')} the results above cover the requests that ended\n`);
    return 130;
  }
  let status = 0;
  for (const result of results) {
    const ok = result.counts.completed + result.counts.truncated;
    if (result.counts.sent > 0 && ok === 0) {
      const error = result.errors[0];
      io.stderr.write(
        `${errStyle.red('error:')} ${result.label}: every request failed${error === undefined ? '' : ` (${error.code}: ${error.example})`}\n`,
      );
      status = 1;
    }
    if (
      config.minGoodput !== undefined &&
      result.goodput !== undefined &&
      result.goodput.fraction < config.minGoodput
    ) {
      io.stderr.write(
        `${errStyle.red('error:')} ${result.label}: goodput ${(result.goodput.fraction * 100).toFixed(1)}% is below --min-goodput ${(config.minGoodput * 100).toFixed(1)}%\n`,
      );
      status = 1;
    }
  }
  return status;
}

/** A URL without credentials (`user:pass@` is dropped). */
function safeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.username = '';
    parsed.password = '';
    return parsed.toString();
  } catch {
    return url;
  }
}

/** The command line for the report: header values (credentials) hidden, URL schemes dropped. */
function redactArgs(argv: readonly string[]): string {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--header') {
      out.push(arg, "'<redacted>'");
      i += 1;
    } else if (arg.startsWith('--header=')) {
      out.push("--header='<redacted>'");
    } else {
      out.push(
        /^[a-z][a-z0-9+.-]*:\/\//i.test(arg) ? safeUrl(arg).replace(/^[a-z][a-z0-9+.-]*:\/\//i, '') : arg,
      );
    }
  }
  return out.join(' ');
}
