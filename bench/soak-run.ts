import { type ChildProcess, fork } from 'node:child_process';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { seededRandom } from '../src/bench/arrivals.ts';
import { HttpError } from '../src/client/client-errors.ts';
import { runStream } from '../src/client/run-stream.ts';
import type { DialectId } from '../src/dialects/dialect.ts';
import type { StreamOutcome } from '../src/server/observability/gateway-metrics.ts';
import type { SoakCommand, SoakMemory, SoakServerConfig, SoakSettled } from './soak-server.ts';

export interface SoakOptions {
  /** Streams kept open at once. */
  concurrency: number;
  /** How long new streams keep starting, ms. */
  durationMs: number;
  /** Warm-up before the RSS baseline: this many streams at once for `warmupMs`. */
  warmupConcurrency: number;
  warmupMs: number;
  /** Simulated tokens per second per stream. */
  tokensPerSecond: number;
  seed: number;
  /** Compare RSS after the load with the baseline (needs a GC: the server runs with --expose-gc). */
  checkRss: boolean;
  /** Allowed RSS growth after the load, as a fraction of the baseline. */
  rssTolerance: number;
  /** How long RSS may take to come back after the load (allocators return pages lazily). */
  rssSettleMs: number;
  /** Called with progress lines. */
  log?: ((line: string) => void) | undefined;
}

type Scenario = 'clean' | 'wire-faults' | 'disconnect' | 'cut' | 'error-event' | 'status-500' | 'status-429';

/** What each scenario must end as, in /metrics and as the client saw it. */
const EXPECTED: Record<Scenario, StreamOutcome> = {
  clean: 'completed',
  'wire-faults': 'completed',
  disconnect: 'cancelled',
  cut: 'incomplete',
  'error-event': 'error',
  'status-500': 'error',
  'status-429': 'error',
};

const SCENARIOS: [Scenario, number][] = [
  ['clean', 45],
  ['wire-faults', 10],
  ['disconnect', 15],
  ['cut', 10],
  ['error-event', 10],
  ['status-500', 5],
  ['status-429', 5],
];

const ROUTES: [DialectId, string][] = [
  ['openai-chat', '/v1/chat/completions'],
  ['openai-completions', '/v1/completions'],
  ['ollama-chat', '/api/chat'],
  ['ollama-generate', '/api/generate'],
  ['llamacpp', '/completion'],
  ['tgi', '/generate_stream'],
];

export interface SoakReport {
  ok: boolean;
  failures: string[];
  streams: number;
  durationMs: number;
  concurrency: number;
  /** What the clients saw, by outcome. */
  clientOutcomes: Record<StreamOutcome, number>;
  /** tokenwire_streams_total by outcome (all routes). */
  metricOutcomes: Record<StreamOutcome, number>;
  metricRequests: number;
  /** Streams whose client saw something other than its scenario called for. */
  mismatches: string[];
  settled: SoakSettled;
  clientUncaught: string[];
  rssBaselineBytes: number | undefined;
  rssAfterBytes: number | undefined;
  /** How long after the load RSS took to come back within the tolerance (undefined: it did not). */
  rssSettledMs: number | undefined;
  rssPeakBytes: number | undefined;
  heapBaselineBytes: number | undefined;
  heapAfterBytes: number | undefined;
  heapCommittedBaselineBytes: number | undefined;
  heapCommittedAfterBytes: number | undefined;
  /** RSS of the server process before any load (the warm-up raises it to its working level). */
  rssColdBytes: number | undefined;
}

const API_KEY = 'soak-key-0123456789';

/**
 * The soak: `concurrency` streams at once through the guarded gateway for `durationMs`, over loopback,
 * with random client disconnects and random upstream faults; then checks that every stream is counted
 * once in /metrics as the client saw it, that no upstream connection was left open, that nothing was
 * left unhandled, and (optionally) that RSS came back to its starting level.
 */
export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const log = options.log ?? (() => {});
  const clientUncaught: string[] = [];
  const onUncaught = (error: unknown) => clientUncaught.push(String((error as Error)?.stack ?? error));
  process.on('uncaughtException', onUncaught);
  process.on('unhandledRejection', onUncaught);
  const server = await startServer({
    tokensPerSecond: options.tokensPerSecond,
    apiKey: API_KEY,
    maxStreams: options.concurrency + options.warmupConcurrency + 100,
  });
  try {
    const random = seededRandom(options.seed);
    const counts = emptyOutcomes();
    const mismatches: string[] = [];
    let started = 0;

    const load = async (concurrency: number, durationMs: number, record: boolean) => {
      const end = Date.now() + durationMs;
      const worker = async () => {
        while (Date.now() < end) {
          const scenario = pick(random);
          const [dialect, path] = ROUTES[Math.floor(random() * ROUTES.length)]!;
          if (record) started += 1;
          let detail = '';
          const seen = await oneStream(server.url, dialect, path, scenario, random, (text) => {
            detail = text;
          });
          if (!record) continue;
          counts[seen] += 1;
          if (seen !== EXPECTED[scenario])
            mismatches.push(`${scenario} on ${dialect}: the client saw ${seen} (${detail.slice(0, 160)})`);
        }
      };
      await Promise.all(Array.from({ length: concurrency }, worker));
    };

    let baseline: SoakMemory | undefined;
    const cold = options.checkRss ? ((await server.call({ cmd: 'memory' })) as SoakMemory) : undefined;
    if (options.warmupMs > 0) {
      log(`warm-up: ${options.warmupConcurrency} streams at once for ${options.warmupMs} ms`);
      await load(options.warmupConcurrency, options.warmupMs, false);
      await server.call({ cmd: 'settle', timeoutMs: 30000 });
    }
    const metricsBefore = await readMetrics(server.url);
    if (options.checkRss) baseline = (await server.call({ cmd: 'memory' })) as SoakMemory;
    if (baseline !== undefined)
      log(`baseline RSS ${mb(baseline.rssBytes)}, heap ${mb(baseline.heapUsedBytes)}`);

    log(`load: ${options.concurrency} streams at once for ${options.durationMs} ms`);
    const loadStarted = Date.now();
    let peak = 0;
    const sampler = setInterval(() => {
      void server
        .call({ cmd: 'rss' })
        .then((m) => {
          peak = Math.max(peak, (m as SoakMemory).rssBytes);
        })
        .catch(() => {});
    }, 2000);
    try {
      await load(options.concurrency, options.durationMs, true);
    } finally {
      clearInterval(sampler);
    }
    const durationMs = Date.now() - loadStarted;
    log(`load done: ${started} streams in ${durationMs} ms; settling`);

    const settled = (await server.call({ cmd: 'settle', timeoutMs: 30000 })) as SoakSettled;
    const metricsAfter = await readMetrics(server.url);
    const metricOutcomes = emptyOutcomes();
    for (const outcome of Object.keys(metricOutcomes) as StreamOutcome[])
      metricOutcomes[outcome] = metricsAfter.outcomes[outcome] - metricsBefore.outcomes[outcome];
    const metricRequests = metricsAfter.requests - metricsBefore.requests;
    // "Back within 10 %" is judged after the allocator had time to hand freed pages back: glibc and
    // jemalloc both return them lazily (jemalloc on a ~10 s decay), so a reading right at the end of the
    // load measures the allocator's timing, not a leak. Poll (with a GC each time) for up to
    // `rssSettleMs`; the JS heap check below stays the sharp, immediate one.
    let after: SoakMemory | undefined;
    let rssSettledMs: number | undefined;
    if (options.checkRss && baseline !== undefined) {
      const pollStarted = Date.now();
      for (;;) {
        after = (await server.call({ cmd: 'memory' })) as SoakMemory;
        if (after.rssBytes <= baseline.rssBytes * (1 + options.rssTolerance)) {
          rssSettledMs = Date.now() - pollStarted;
          break;
        }
        if (Date.now() - pollStarted >= options.rssSettleMs) break;
        await new Promise((resolve) => setTimeout(resolve, 2000));
      }
    }

    const failures: string[] = [];
    if (settled.simSocketsLeft !== 0) failures.push(`${settled.simSocketsLeft} upstream sockets left open`);
    if (settled.simOpenResponses !== 0 || settled.simActive !== 0)
      failures.push(
        `${settled.simOpenResponses} upstream responses still open (${settled.simActive} sim requests)`,
      );
    if (settled.gatewayActive !== 0) failures.push(`${settled.gatewayActive} gateway streams still active`);
    if (settled.gatewayOpenResponses !== 0)
      failures.push(`${settled.gatewayOpenResponses} client responses still open`);
    if (settled.uncaught.length > 0)
      failures.push(`gateway process: ${settled.uncaught.length} uncaught errors`);
    if (clientUncaught.length > 0) failures.push(`client process: ${clientUncaught.length} uncaught errors`);
    if (mismatches.length > 0) failures.push(`${mismatches.length} streams ended other than their scenario`);
    const total = sum(metricOutcomes);
    if (total !== started) failures.push(`/metrics counts ${total} streams, the clients ran ${started}`);
    if (metricRequests !== started)
      failures.push(`/metrics counts ${metricRequests} requests, the clients sent ${started}`);
    for (const outcome of Object.keys(counts) as StreamOutcome[]) {
      if (counts[outcome] !== metricOutcomes[outcome])
        failures.push(
          `${outcome}: the clients saw ${counts[outcome]}, /metrics counts ${metricOutcomes[outcome]}`,
        );
    }
    // The JS heap (live objects after a compacting GC) is the sharp leak test; RSS adds what the native
    // allocator keeps, which moves by tens of MiB from run to run.
    if (
      baseline !== undefined &&
      after !== undefined &&
      after.heapUsedBytes > baseline.heapUsedBytes * (1 + options.rssTolerance) + 2 * 1024 * 1024
    )
      failures.push(
        `JS heap ${mb(after.heapUsedBytes)} after the load is over the ${mb(baseline.heapUsedBytes)} baseline`,
      );
    if (
      baseline !== undefined &&
      after !== undefined &&
      after.rssBytes > baseline.rssBytes * (1 + options.rssTolerance)
    )
      failures.push(
        `RSS ${mb(after.rssBytes)} ${options.rssSettleMs / 1000} s after the load is over ${Math.round(options.rssTolerance * 100)} % above the ${mb(baseline.rssBytes)} baseline`,
      );
    return {
      ok: failures.length === 0,
      failures,
      streams: started,
      durationMs,
      concurrency: options.concurrency,
      clientOutcomes: counts,
      metricOutcomes,
      metricRequests,
      mismatches,
      settled,
      clientUncaught,
      rssBaselineBytes: baseline?.rssBytes,
      rssAfterBytes: after?.rssBytes,
      rssSettledMs,
      rssPeakBytes: peak === 0 ? undefined : peak,
      heapBaselineBytes: baseline?.heapUsedBytes,
      heapAfterBytes: after?.heapUsedBytes,
      heapCommittedBaselineBytes: baseline?.heapTotalBytes,
      heapCommittedAfterBytes: after?.heapTotalBytes,
      rssColdBytes: cold?.rssBytes,
    };
  } finally {
    await server.close();
    process.off('uncaughtException', onUncaught);
    process.off('unhandledRejection', onUncaught);
  }
}

/** One stream as a client runs it; returns the outcome the client saw. */
async function oneStream(
  baseUrl: string,
  dialect: DialectId,
  path: string,
  scenario: Scenario,
  random: () => number,
  why: (text: string) => void,
): Promise<StreamOutcome> {
  const controller = new AbortController();
  const headers: Record<string, string> = { authorization: `Bearer ${API_KEY}` };
  let maxTokens = 10 + Math.floor(random() * 30);
  let leaveAfter = Number.POSITIVE_INFINITY;
  switch (scenario) {
    case 'wire-faults':
      headers['x-tokenwire-fault'] = random() < 0.5 ? 'split=random' : 'batch=3,split-utf8';
      break;
    case 'disconnect':
      maxTokens = 400;
      leaveAfter = 1 + Math.floor(random() * 5);
      break;
    case 'cut':
      headers['x-tokenwire-fault'] = `cut-after=${1 + Math.floor(random() * 8)}`;
      break;
    case 'error-event':
      headers['x-tokenwire-fault'] = `error-after=${1 + Math.floor(random() * 8)}`;
      break;
    case 'status-500':
      headers['x-tokenwire-fault'] = 'status=500';
      break;
    case 'status-429':
      headers['x-tokenwire-fault'] = 'status=429';
      break;
  }
  const chat = dialect === 'openai-chat' || dialect === 'ollama-chat';
  let texts = 0;
  let left = false;
  try {
    const result = await runStream(
      {
        url: `${baseUrl}${path}`,
        dialect,
        request: {
          model: 'sim',
          ...(chat ? { messages: [{ role: 'user' as const, content: 'soak' }] } : { prompt: 'soak' }),
          maxTokens,
        },
        headers,
      },
      { signal: controller.signal },
      {
        onEvent: (event) => {
          if (event.type !== 'text') return;
          texts += 1;
          if (texts >= leaveAfter && !left) {
            left = true;
            controller.abort();
          }
        },
      },
    );
    if (left) return 'cancelled';
    if (result.complete) return 'completed';
    why(`${result.incomplete}: ${result.error?.message ?? ''}`);
    // The gateway ends a failed upstream with the dialect's error event; what the upstream did (cut or
    // error) is the scenario's, so the client's "failed" is split by it.
    return scenario === 'cut' ? 'incomplete' : 'error';
  } catch (error) {
    if (left) return 'cancelled';
    why(
      error instanceof HttpError
        ? `HTTP ${error.status}: ${error.message}`
        : `${(error as Error).name}: ${(error as Error).message}`,
    );
    return 'error';
  }
}

interface ServerHandle {
  url: string;
  child: ChildProcess;
  call(command: SoakCommand): Promise<unknown>;
  close(): Promise<void>;
}

async function startServer(config: SoakServerConfig): Promise<ServerHandle> {
  const self = fileURLToPath(import.meta.url);
  const script = fileURLToPath(new URL(`./soak-server${extname(self)}`, import.meta.url));
  // SOAK_SERVER_ARGS: extra node flags for the server process (e.g. "--cpu-prof" to see where it spends).
  const extra = (process.env.SOAK_SERVER_ARGS ?? '').split(' ').filter((a) => a !== '');
  const execArgv = ['--expose-gc', ...extra, ...(script.endsWith('.ts') ? ['--import', 'tsx'] : [])];
  const child = fork(script, [], {
    execArgv,
    env: { ...process.env, SOAK_CONFIG: JSON.stringify(config) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const pending = new Map<number, (value: unknown) => void>();
  let ready: (url: string) => void = () => {};
  const url = new Promise<string>((resolve, reject) => {
    ready = resolve;
    child.once('exit', (code) => reject(new Error(`the soak server exited (${code}) before it was ready`)));
  });
  child.on('message', (message: { id: number; result: unknown }) => {
    if (message.id === 0) ready((message.result as { url: string }).url);
    pending.get(message.id)?.(message.result);
    pending.delete(message.id);
  });
  let next = 1;
  const call = (command: SoakCommand) =>
    new Promise<unknown>((resolve, reject) => {
      const id = next++;
      pending.set(id, resolve);
      child.send({ ...command, id }, (error) => {
        if (error !== null) reject(error);
      });
    });
  return {
    url: await url,
    child,
    call,
    close: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      await Promise.race([call({ cmd: 'close' }), new Promise((resolve) => setTimeout(resolve, 10000))]);
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

async function readMetrics(
  url: string,
): Promise<{ outcomes: Record<StreamOutcome, number>; requests: number }> {
  const text = await (
    await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${API_KEY}` } })
  ).text();
  const outcomes = emptyOutcomes();
  let requests = 0;
  for (const line of text.split('\n')) {
    const streams = /^tokenwire_streams_total\{(.*)\} (\d+)$/.exec(line);
    const outcome = streams?.[1] !== undefined ? /outcome="([a-z]+)"/.exec(streams[1])?.[1] : undefined;
    if (streams !== null && outcome !== undefined && outcome in outcomes)
      outcomes[outcome as StreamOutcome] += Number(streams[2]);
    const request = /^tokenwire_requests_total\{.*\} (\d+)$/.exec(line);
    if (request !== null) requests += Number(request[1]);
  }
  return { outcomes, requests };
}

function pick(random: () => number): Scenario {
  const total = SCENARIOS.reduce((n, [, weight]) => n + weight, 0);
  let roll = random() * total;
  for (const [scenario, weight] of SCENARIOS) {
    roll -= weight;
    if (roll < 0) return scenario;
  }
  return 'clean';
}

function emptyOutcomes(): Record<StreamOutcome, number> {
  return { completed: 0, cancelled: 0, incomplete: 0, error: 0 };
}

function sum(outcomes: Record<StreamOutcome, number>): number {
  return outcomes.completed + outcomes.cancelled + outcomes.incomplete + outcomes.error;
}

export function mb(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/** The report as the lines `npm run soak` prints. */
export function formatSoakReport(report: SoakReport): string {
  const lines = [
    `soak: ${report.streams} streams, ${report.concurrency} at once, ${(report.durationMs / 1000).toFixed(1)} s`,
    `  outcomes (clients / metrics): ${(Object.keys(report.clientOutcomes) as StreamOutcome[])
      .map((o) => `${o} ${report.clientOutcomes[o]}/${report.metricOutcomes[o]}`)
      .join(', ')}; requests in /metrics ${report.metricRequests}`,
    `  upstream: ${report.settled.simSocketsLeft} sockets left open (${report.settled.simSocketsIdleIncluded} incl. idle keep-alive), ${report.settled.simOpenResponses} responses open; sim saw ${report.settled.simStats.requests} requests, ${report.settled.simStats.cancelled} cancelled`,
    `  gateway: ${report.settled.gatewayOpenResponses} responses open, ${report.settled.gatewaySockets} client sockets (idle keep-alive included); settled in ${report.settled.waitedMs} ms; event-loop delay p99 ${report.settled.loopDelayP99Ms.toFixed(0)} ms, max ${report.settled.loopDelayMaxMs.toFixed(0)} ms`,
    `  uncaught errors: gateway ${report.settled.uncaught.length}, clients ${report.clientUncaught.length}`,
  ];
  if (report.rssBaselineBytes !== undefined && report.rssAfterBytes !== undefined) {
    const change = ((report.rssAfterBytes / report.rssBaselineBytes - 1) * 100).toFixed(1);
    lines.push(
      `  RSS: ${mb(report.rssBaselineBytes)} before (after the warm-up; ${mb(report.rssColdBytes ?? 0)} cold), ${report.rssPeakBytes === undefined ? '?' : mb(report.rssPeakBytes)} peak, ${mb(report.rssAfterBytes)} after (${change} %${report.rssSettledMs === undefined ? '' : `, back within the tolerance ${(report.rssSettledMs / 1000).toFixed(0)} s after the load`})`,
      `  JS heap after GC: ${mb(report.heapBaselineBytes ?? 0)} used / ${mb(report.heapCommittedBaselineBytes ?? 0)} committed before, ${mb(report.heapAfterBytes ?? 0)} used / ${mb(report.heapCommittedAfterBytes ?? 0)} committed after`,
    );
  }
  for (const mismatch of report.mismatches.slice(0, 10)) lines.push(`  mismatch: ${mismatch}`);
  for (const error of [...report.settled.uncaught, ...report.clientUncaught].slice(0, 5))
    lines.push(`  ${error}`);
  lines.push(report.ok ? 'soak: OK' : `soak: FAILED\n${report.failures.map((f) => `  - ${f}`).join('\n')}`);
  return lines.join('\n');
}
