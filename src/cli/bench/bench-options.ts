import { parseArgs } from 'node:util';
import type { LoadSpec } from '../../bench/load.ts';
import { parseSlo, type Slo } from '../../bench/slo.ts';
import { parseTokenRange, type TokenRange } from '../../bench/workload.ts';
import { DIALECT_IDS } from '../../dialects/dialect.ts';
import { isDialectId } from '../../dialects/registry.ts';
import { parseHeaders } from '../chat/parse-headers.ts';
import { UsageError } from '../cli-io.ts';

export const BENCH_HELP = `Usage: tokenwire bench [URL] [options]

Load-tests a streaming endpoint and reports TTFT, inter-chunk gaps (ITL), TPOT, end-to-end latency
and throughput (p50/p90/p95/p99/max from HDR histograms), with each metric's name in vLLM bench,
AIPerf and GuideLLM. Every latency counts from the INTENDED send time (the open-loop arrival, or when
the closed-loop slot freed), so a late send by the bench is never hidden; the bench's own lateness is
reported as "schedule lag".

URL is an endpoint whose path names the dialect (http://localhost:8000/v1/chat/completions,
http://localhost:11434/api/chat, http://localhost:8080/completion, .../generate_stream ...) or a bare
server address, which is probed. With no URL the built-in simulated model is benchmarked, served on
127.0.0.1 by this process (it then shares this process's CPU).

Load (closed loop unless --rate is given):
  -c, --concurrency N[,N...]  Streams kept in flight; each sends its next request when one ends.
                              A list runs one level per value (a sweep). Default 1
  --ramp-up S                 Start the closed-loop streams over S seconds instead of all at once
  -r, --rate R[,R...]         Open loop: R requests/s arriving on their own schedule ("inf": all at
                              once); a list sweeps
  --burstiness B              Open loop: gamma shape of the gaps between arrivals, as in vLLM bench:
                              1 = Poisson (default), under 1 burstier, over 1 steadier, "inf" even
  --max-concurrency N         Open loop: at most N in flight; later arrivals wait (the wait counts)
  -n, --requests N            Requests per level (default: 4 x concurrency, at least 50; open loop 100)
  -d, --duration S            Stop sending S seconds into each level (with -n: whichever comes first);
                              requests in flight then finish
  --warmup N                  Send N requests first, not counted (default 0; 1 for the simulator)

Workload:
  --prompts FILE              One prompt per line, or JSONL: "text", {"prompt": "..."} or
                              {"messages": [{"role": "user", "content": "..."}]}. Default: built-in set
  --dataset FILE              Your own traffic, as vLLM bench and GuideLLM take it: a JSON array or
                              JSONL of ShareGPT conversations ({"conversations": [{"from": "human",
                              "value": "..."}, {"from": "gpt", ...}]}: the first human turn is sent,
                              the reply's length (~4 characters a token) is the output cap unless
                              --output-tokens says), prompts ({"prompt": "..."}, "text") or lines
  --input-tokens N|MIN-MAX    Synthetic prompts of about N tokens (common one-token words), different
                              for every request so no prefix cache answers them
  --output-tokens N|MIN-MAX   The output cap per request (max_tokens, num_predict, n_predict...)
  --ignore-eos                Ask the server to keep going to the cap (ignore_eos: vLLM, SGLang,
                              llama-server). TGI and Ollama have no such option: said so, not sent
  --dialect D                 Force the dialect: ${DIALECT_IDS.join(', ')}
  --model NAME                Model name (default: the first the server lists; "sim" for the simulator)
  --header 'K: V'             Request header, e.g. credentials (repeatable; never printed)
  --timeout S                 A request taking longer in all ends incomplete (default 600)
  --idle-timeout S            No event for S seconds ends a request incomplete (default 60)
  --seed N                    Seeds arrivals, synthetic prompts and output lengths (default 1)

Results:
  --slo SPEC                  Goodput: share and rate of requests that completed within every bound,
                              e.g. ttft=500ms,tpot=50ms (metrics ttft, ttfb, tpot, e2e; units ms, s)
  --min-goodput F             Exit 1 when goodput is below F (0.95 or 95%) at any level; needs --slo
  --json                      Full results (every level, every request) as JSON on stdout
  --html FILE                 Self-contained HTML report with charts (TTFT and inter-chunk
                              distributions, throughput over time); nothing in it is fetched
  --no-progress               No progress display on stderr

Built-in simulator (no URL):
  --sim-ttft-ms N             Time to first token (default: from the prompt length)
  --sim-tps N                 Tokens per second per stream (default 50)
  --sim-jitter F              Spread of each token gap, 0 to <1 (default 0.1)
  --sim-load-ms N             Cold start of the model, paid by the first request (default 0)

  -h, --help                  Show this help

Output: the results table on stdout (or JSON with --json); progress on stderr (a bar on a terminal,
a line every few seconds otherwise; colours off with NO_COLOR).
Exit status: 0 done; 1 every request of a level failed, or goodput below --min-goodput; 2 usage
error; 130 interrupted with Ctrl-C (the results so far are still printed).
`;

/** Everything the command line asked for, checked. */
export interface BenchConfig {
  url: string | undefined;
  dialect: string | undefined;
  model: string | undefined;
  headers: Record<string, string>;
  loads: LoadSpec[];
  requests: number | undefined;
  durationMs: number | undefined;
  warmup: number | undefined;
  promptsFile: string | undefined;
  datasetFile: string | undefined;
  inputTokens: TokenRange | undefined;
  outputTokens: TokenRange | undefined;
  ignoreEos: boolean;
  timeoutMs: number;
  idleTimeoutMs: number;
  seed: number;
  slo: Slo | undefined;
  minGoodput: number | undefined;
  json: boolean;
  html: string | undefined;
  progress: boolean;
  sim: { ttftMs?: number; tokensPerSecond?: number; jitter?: number; loadMs?: number };
  help: boolean;
}

/** Parses `tokenwire bench` arguments; throws UsageError (exit 2) on anything wrong. */
export function parseBenchArgs(argv: string[]): BenchConfig {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      concurrency: { type: 'string', short: 'c' },
      'ramp-up': { type: 'string' },
      rate: { type: 'string', short: 'r' },
      burstiness: { type: 'string' },
      'max-concurrency': { type: 'string' },
      requests: { type: 'string', short: 'n' },
      duration: { type: 'string', short: 'd' },
      warmup: { type: 'string' },
      prompts: { type: 'string' },
      dataset: { type: 'string' },
      'input-tokens': { type: 'string' },
      'output-tokens': { type: 'string' },
      'ignore-eos': { type: 'boolean', default: false },
      dialect: { type: 'string' },
      model: { type: 'string' },
      header: { type: 'string', multiple: true },
      timeout: { type: 'string' },
      'idle-timeout': { type: 'string' },
      seed: { type: 'string' },
      slo: { type: 'string' },
      'min-goodput': { type: 'string' },
      json: { type: 'boolean', default: false },
      html: { type: 'string' },
      'no-progress': { type: 'boolean', default: false },
      'sim-ttft-ms': { type: 'string' },
      'sim-tps': { type: 'string' },
      'sim-jitter': { type: 'string' },
      'sim-load-ms': { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (positionals.length > 1)
    throw new UsageError(`one URL at most, got ${positionals.length}: ${positionals.join(' ')}`);
  if (values.dialect !== undefined && !isDialectId(values.dialect))
    throw new UsageError(
      `unknown dialect ${JSON.stringify(values.dialect)}; known: ${DIALECT_IDS.join(', ')}`,
    );
  if (values.concurrency !== undefined && values.rate !== undefined)
    throw new UsageError('give --concurrency (closed loop) or --rate (open loop), not both');
  if (values['input-tokens'] !== undefined && values.prompts !== undefined)
    throw new UsageError('--input-tokens makes synthetic prompts; it cannot be combined with --prompts');
  if (values.dataset !== undefined && (values.prompts !== undefined || values['input-tokens'] !== undefined))
    throw new UsageError(
      '--dataset gives the prompts; it cannot be combined with --prompts or --input-tokens',
    );

  const loads: LoadSpec[] = [];
  if (values.rate !== undefined) {
    const burstiness = values.burstiness === undefined ? 1 : positiveOrInf(values.burstiness, '--burstiness');
    const maxConcurrency =
      values['max-concurrency'] === undefined
        ? undefined
        : whole(values['max-concurrency'], '--max-concurrency', 1);
    for (const item of list(values.rate, '--rate')) {
      const rate = positiveOrInf(item, '--rate');
      loads.push({ kind: 'open', rate, burstiness, maxConcurrency });
    }
    if (values['ramp-up'] !== undefined)
      throw new UsageError('--ramp-up is for the closed loop (--concurrency)');
  } else {
    if (values.burstiness !== undefined || values['max-concurrency'] !== undefined)
      throw new UsageError('--burstiness and --max-concurrency are for the open loop (--rate)');
    const rampUpMs = values['ramp-up'] === undefined ? undefined : seconds(values['ramp-up'], '--ramp-up');
    for (const item of list(values.concurrency ?? '1', '--concurrency')) {
      loads.push({ kind: 'closed', concurrency: whole(item, '--concurrency', 1), rampUpMs });
    }
  }

  let slo: Slo | undefined;
  if (values.slo !== undefined) {
    try {
      slo = parseSlo(values.slo);
    } catch (error) {
      throw new UsageError(`--slo: ${(error as Error).message}`);
    }
  }
  let minGoodput: number | undefined;
  if (values['min-goodput'] !== undefined) {
    if (slo === undefined)
      throw new UsageError('--min-goodput needs --slo (the bounds a good request meets)');
    const text = values['min-goodput'].trim();
    const percent = text.endsWith('%');
    const n = Number(percent ? text.slice(0, -1) : text);
    minGoodput = percent ? n / 100 : n;
    if (!(minGoodput >= 0 && minGoodput <= 1))
      throw new UsageError(
        `--min-goodput needs a fraction 0..1 or a percentage, got ${JSON.stringify(text)}`,
      );
  }

  const range = (value: string | undefined, flag: string): TokenRange | undefined => {
    if (value === undefined) return undefined;
    try {
      return parseTokenRange(value, flag);
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
  };

  const sim: BenchConfig['sim'] = {};
  if (values['sim-ttft-ms'] !== undefined) sim.ttftMs = number(values['sim-ttft-ms'], '--sim-ttft-ms', 0);
  if (values['sim-tps'] !== undefined) {
    sim.tokensPerSecond = number(values['sim-tps'], '--sim-tps', 0);
    if (sim.tokensPerSecond === 0) throw new UsageError('--sim-tps must be above 0');
  }
  if (values['sim-jitter'] !== undefined) {
    sim.jitter = number(values['sim-jitter'], '--sim-jitter', 0);
    if (sim.jitter >= 1) throw new UsageError('--sim-jitter must be below 1');
  }
  if (values['sim-load-ms'] !== undefined) sim.loadMs = number(values['sim-load-ms'], '--sim-load-ms', 0);
  const url = positionals[0];
  if (url !== undefined && Object.keys(sim).length > 0)
    throw new UsageError('the --sim-* options are for the built-in simulator (no URL)');

  return {
    url,
    dialect: values.dialect,
    model: values.model,
    headers: parseHeaders(values.header),
    loads,
    requests: values.requests === undefined ? undefined : whole(values.requests, '--requests', 1),
    durationMs: values.duration === undefined ? undefined : seconds(values.duration, '--duration'),
    warmup: values.warmup === undefined ? undefined : whole(values.warmup, '--warmup', 0),
    promptsFile: values.prompts,
    datasetFile: values.dataset,
    inputTokens: range(values['input-tokens'], '--input-tokens'),
    outputTokens: range(values['output-tokens'], '--output-tokens'),
    ignoreEos: values['ignore-eos'],
    timeoutMs: values.timeout === undefined ? 600_000 : seconds(values.timeout, '--timeout'),
    idleTimeoutMs:
      values['idle-timeout'] === undefined ? 60_000 : seconds(values['idle-timeout'], '--idle-timeout'),
    seed: values.seed === undefined ? 1 : whole(values.seed, '--seed', 0),
    slo,
    minGoodput,
    json: values.json,
    html: values.html,
    progress: !values['no-progress'],
    sim,
    help: values.help,
  };
}

/** The requests a level sends when neither -n nor -d is given. */
export function defaultRequests(load: LoadSpec): number {
  return load.kind === 'closed' ? Math.max(50, 4 * load.concurrency) : 100;
}

function list(value: string, flag: string): string[] {
  const items = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (items.length === 0) throw new UsageError(`${flag} needs a value`);
  return items;
}

function number(value: string, flag: string, min: number): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < min)
    throw new UsageError(`${flag} needs a number >= ${min}, got ${JSON.stringify(value)}`);
  return n;
}

function whole(value: string, flag: string, min: number): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isInteger(n) || n < min)
    throw new UsageError(`${flag} needs a whole number >= ${min}, got ${JSON.stringify(value)}`);
  return n;
}

function positiveOrInf(value: string, flag: string): number {
  if (/^(inf|infinity)$/i.test(value.trim())) return Number.POSITIVE_INFINITY;
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n <= 0)
    throw new UsageError(`${flag} needs a positive number or "inf", got ${JSON.stringify(value)}`);
  return n;
}

/** Seconds (a plain number, or with s / ms / m) -> ms. */
function seconds(value: string, flag: string): number {
  const match = /^\s*([0-9]*\.?[0-9]+)\s*(ms|s|m|min)?\s*$/i.exec(value);
  if (match === null)
    throw new UsageError(`${flag} needs seconds (e.g. 30, 1.5s, 500ms, 2m), got ${JSON.stringify(value)}`);
  const n = Number(match[1]);
  const unit = (match[2] ?? 's').toLowerCase();
  return unit === 'ms' ? n : unit === 's' ? n * 1000 : n * 60_000;
}
