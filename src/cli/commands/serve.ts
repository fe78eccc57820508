import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { DIALECT_IDS } from '../../dialects/dialect.ts';
import { importOptional, requirePackages } from '../../node/optional-package.ts';
import { DEFAULT_BODY_TIMEOUT_MS, serve } from '../../node/serve.ts';
import { serveStatic } from '../../node/serve-static.ts';
import { startTelemetry } from '../../node/start-telemetry.ts';
import { createUndiciFetch, loadUndici } from '../../node/undici-fetch.ts';
import type { GatewayOptions } from '../../server/create-gateway.ts';
import { createGuardedGateway } from '../../server/guard/guard-gateway.ts';
import { LOG_LEVELS, type LogLevel } from '../../server/observability/request-log.ts';
import { BALANCE_POLICIES, type BalancePolicy } from '../../server/pool/choose-replica.ts';
import { MemoryResumeStore } from '../../server/resume/memory-resume-store.ts';
import type { ResumeStore } from '../../server/resume/resume-store.ts';
import { DEFAULT_UPSTREAM_TIMEOUT_MS, type Upstream } from '../../server/upstream/upstream.ts';
import { FAULTS, parseFaults } from '../../sim/faults.ts';
import { type CliIo, styleFor, UsageError } from '../cli-io.ts';
import { parseDialectList } from '../probe-upstream.ts';
import type { ServeConfig } from '../serve-config.ts';
import {
  resolveUpstreams,
  specsFromConfig,
  type UpstreamSpec,
  type UpstreamSummary,
  upstreamLine,
} from '../serve-upstreams.ts';
import { upstreamBaseUrl, upstreamNameFor } from '../upstream-base-url.ts';

export const SERVE_HELP = `Usage: tokenwire serve [options]

Starts the gateway. With no --upstream it fronts the built-in simulated model, so every dialect works
at once with no weights and no other server.

Options:
  --host HOST                 Address to listen on (default 127.0.0.1: loopback only)
  --port N                    Port (default 8080; 0 picks a free one)
  --upstream URL              Front a real server (vLLM, llama-server, TGI, Ollama) instead of the simulator
                              (repeatable: a pool; the URL's path is kept, e.g. http://host:9000/vllm)
  --upstream-dialect LIST     Dialects the --upstream servers speak, comma-separated (default: found by
                              probing)
  --upstream-header 'K: V'    Header sent to the --upstream servers, e.g. credentials (repeatable; never
                              echoed or logged)
  --config FILE               The upstreams as a file: JSON, or YAML when named .yaml/.yml (reading it
                              needs the optional package yaml: npm install yaml). {"upstreams":[{"name",
                              "url","dialects","headers","weight","maxStreams","models","aliases"}],
                              "balance","retries"}; header values may say \${ENV_VAR}. In a pool (a
                              config, or several --upstream), a server down at start is marked down and
                              the gateway starts anyway
  --balance POLICY            How a model's replicas share requests: least-busy (default), round-robin,
                              prefix (a conversation stays on one replica) or load (the servers' own
                              queue); over the config's "balance"
  --retries N                 Other replicas tried before the first byte reaches the client (default 2);
                              over the config's "retries"
  --continue-on-failure       When an upstream dies mid-answer (cut, a 5xx-class error in the stream, a
                              stall past --upstream-timeout-ms), another replica of the model goes on
                              from where the answer stopped, under the same client stream (a request's
                              x-tokenwire-continue: on|off wins; docs/gateway.md)
  --continue-max N            Continuations one stream may get (default 1)
  --upstream-timeout-ms N     Cut an upstream that makes no progress for N ms: no response headers, then
                              no event (keepalive comments do not count); the client gets the dialect's
                              error and an incomplete end (default 300000; 0 = never)
  --api-key KEY               Require this API key (repeatable; or TOKENWIRE_API_KEYS=k1,k2), sent as
                              "Authorization: Bearer KEY" or "X-API-Key: KEY" (default: no key asked)
  --max-streams N             Serve at most N generation requests at once; more get 429 + Retry-After
  --max-body-bytes N          Largest request body; larger gets 413 (default 4194304)
  --body-timeout-ms N         A request body must arrive within N ms of its headers, else 408
                              (default 30000; 0 = no limit)
  --max-connections N         Open client connections at most; more are closed unanswered (default 1024)
  --allowed-host HOST         Also answer to this Host name (repeatable; '*' = any). Bound to loopback,
                              only localhost, 127.0.0.1, [::1] and --host are answered (any port); bound
                              elsewhere, any Host unless this is given. Other Hosts get 421
  --trust-proxy ADDR          A reverse proxy in front (repeatable, e.g. 127.0.0.1): its
                              X-Forwarded-For names the client (the resume bounds per client); without
                              it the header is ignored
  --cors-origin ORIGIN        Let pages on ORIGIN call the API (repeatable; default: CORS off, and
                              cross-origin API requests are refused)
  --resume-store URL          Where streams are kept for Last-Event-ID resume: redis://HOST:PORT shares
                              them between replicas (default: in memory, this process only)
  --resume-max-streams N      Streams kept for resume at most, in all (default 1000 in memory; in Redis
                              no bound but the 5-minute TTL unless given). When full, the client (API
                              key, else address) holding the most loses its oldest: a flood evicts its own
  --resume-max-streams-per-client N
                              Streams kept for resume per API key (per client address without keys); a
                              client past it loses its own oldest (default: no bound of its own)
  --keepalive-ms N            SSE keepalive comment after N ms of silence (default 15000; 0 = off)
  --keep-stream-on-disconnect Keep generating when a client leaves, so it can resume (costs upstream time)
  --drop-params              Drop request fields the upstream's dialect cannot carry (named in the
                             x-tokenwire-dropped-params header) instead of answering 400; a request's
                             own "drop_params" wins
  --flush-interval-ms N       Coalesce text: write at most every N ms (default: every event)
  --flush-bytes N             Coalesce text: write once N bytes are held
  --flush-delimiter S         Coalesce text: write up to the last S (e.g. "\\n")
  --sim-faults SPEC           Faults for every simulated request (see below)
  --sim-tps N                 Simulated tokens per second (default 50)
  --sim-ttft-ms N             Simulated time to first token in ms
  --sim-seed N                Simulated text seed (default 1)
  --sim-models A,B            Models the simulator serves (default sim); other names get "model not found"
  --sim-context-tokens N      Simulated context length: a longer prompt gets the imitated server's
                              "exceeds the context" error before streaming (default 32768)
  --log                       One JSON line per request on stderr (same as --log-level info)
  --log-level LEVEL           Log requests at error, warn, info or debug and above (JSON lines on
                              stderr; default warn: failed, refused and truncated requests only)
  --log-content               Put prompts and answers in the log lines (off: they may be personal data)
  --workers N|auto            Processes serving the one port (node:cluster; auto = one per core; default
                              1), LiteLLM's --num_workers: resume (the primary holds the memory store, or
                              Redis), /metrics (summed) and --max-streams (global) span them all; a worker
                              that dies is restarted (at most 5 in 60 s, then serve stops)
  --json                      Print the start-up information as JSON
  -h, --help                  Show this help

OpenTelemetry (off by default): set OTEL_EXPORTER_OTLP_ENDPOINT (e.g. http://127.0.0.1:4318) to send
spans and GenAI metrics over OTLP/HTTP, or OTEL_TRACES_EXPORTER=console to print spans; the standard
OTEL_* variables apply (OTEL_SERVICE_NAME, OTEL_EXPORTER_OTLP_HEADERS, OTEL_METRIC_EXPORT_INTERVAL…).

Simulator faults (per server with --sim-faults, per request with the header x-tokenwire-fault or a
model-name suffix such as "sim@cut-after=5,stall=2000"):
${FAULTS.map((f) => `  ${(f.value === undefined ? f.name : `${f.name}=${f.value}`).padEnd(26)} ${f.description}`).join('\n')}
`;

export async function serveCommand(argv: string[], io: CliIo): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      host: { type: 'string', default: '127.0.0.1' },
      port: { type: 'string', default: '8080' },
      upstream: { type: 'string', multiple: true },
      config: { type: 'string' },
      balance: { type: 'string' },
      retries: { type: 'string' },
      'continue-on-failure': { type: 'boolean', default: false },
      'continue-max': { type: 'string' },
      'upstream-dialect': { type: 'string' },
      'upstream-header': { type: 'string', multiple: true },
      'upstream-timeout-ms': { type: 'string' },
      'keepalive-ms': { type: 'string' },
      'api-key': { type: 'string', multiple: true },
      'max-streams': { type: 'string' },
      'max-body-bytes': { type: 'string' },
      'body-timeout-ms': { type: 'string' },
      'max-connections': { type: 'string' },
      'allowed-host': { type: 'string', multiple: true },
      'trust-proxy': { type: 'string', multiple: true },
      'cors-origin': { type: 'string', multiple: true },
      'resume-store': { type: 'string' },
      'resume-max-streams': { type: 'string' },
      'resume-max-streams-per-client': { type: 'string' },
      'keep-stream-on-disconnect': { type: 'boolean', default: false },
      'drop-params': { type: 'boolean', default: false },
      'flush-interval-ms': { type: 'string' },
      'flush-bytes': { type: 'string' },
      'flush-delimiter': { type: 'string' },
      'sim-faults': { type: 'string' },
      'sim-tps': { type: 'string' },
      'sim-ttft-ms': { type: 'string' },
      'sim-seed': { type: 'string' },
      'sim-models': { type: 'string' },
      'sim-context-tokens': { type: 'string' },
      log: { type: 'boolean', default: false },
      'log-level': { type: 'string' },
      'log-content': { type: 'boolean', default: false },
      workers: { type: 'string', default: '1' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) {
    io.stdout.write(SERVE_HELP);
    return 0;
  }
  // Checked before anything forks or listens: a bad file or flag is exit 2 naming it.
  const config = values.config === undefined ? undefined : await readConfigFile(values.config, io.env);
  const balance = balanceOf(values.balance, config);
  const retries =
    values.retries === undefined
      ? (config?.retries ?? DEFAULT_RETRIES)
      : integer(values.retries, '--retries');
  const continueMax =
    values['continue-max'] === undefined ? 1 : integer(values['continue-max'], '--continue-max');
  // node:cluster and the cluster's code only when workers are asked for (a single process never needs them).
  const clusterServe = values.workers === '1' ? undefined : await import('../../node/cluster-serve.ts');
  const workers = clusterServe === undefined ? 1 : clusterServe.parseWorkerCount(values.workers);
  if (workers === undefined)
    throw new UsageError(`--workers needs a whole number or "auto", got ${JSON.stringify(values.workers)}`);
  // --workers: this process forks the workers and holds what they share (node/cluster-serve.ts); each
  // worker runs this command again and finds itself in the cluster.
  const worker = workers > 1 ? clusterServe?.joinCluster() : undefined;
  if (clusterServe !== undefined && workers > 1 && worker === undefined) {
    const redis = values['resume-store'] !== undefined && values['resume-store'] !== 'memory';
    return clusterServe.runClusterPrimary({
      workers,
      args: ['serve', ...argv],
      stdout: io.stdout,
      stderr: io.stderr,
      signal: io.signal,
      json: values.json,
      resumeStore: redis ? undefined : new MemoryResumeStore(resumeBounds(values)),
      maxStreams: securityOptions(values, io.env).maxStreams,
      shutdownDeadlineMs: SHUTDOWN_DEADLINE_MS,
    });
  }
  if (worker !== undefined) io = { ...io, stdout: worker.stdout };
  const style = styleFor(io.stdout, io.env);
  const port = integer(values.port, '--port');
  const upstreamHeaders: Record<string, string> = {};
  for (const header of values['upstream-header'] ?? []) {
    const colon = header.indexOf(':');
    if (colon <= 0)
      throw new UsageError(`--upstream-header needs "Name: value", got ${JSON.stringify(header)}`);
    upstreamHeaders[header.slice(0, colon).trim().toLowerCase()] = header.slice(colon + 1).trim();
  }

  const timeoutMs =
    values['upstream-timeout-ms'] === undefined
      ? DEFAULT_UPSTREAM_TIMEOUT_MS
      : integer(values['upstream-timeout-ms'], '--upstream-timeout-ms');
  // A stalled upstream is cut rather than kept open forever behind the gateway's keepalives.
  const timeouts = timeoutMs === 0 ? undefined : { connectMs: timeoutMs, idleMs: timeoutMs };
  let upstreams: Upstream[];
  let upstreamText: string;
  /** Each real upstream for the banner and the --json record (none for the simulator). */
  let summaries: UpstreamSummary[] = [];
  let downAtStart: string[] = [];
  /** The simulator's own bytes at /sim/<dialect path>: only when the simulator is the upstream. */
  let simRaw: ((request: Request) => Promise<Response> | undefined) | undefined;
  let simRawPrefix = '';
  const upstreamUrls = values.upstream ?? [];
  if (upstreamUrls.length > 0 || config !== undefined) {
    // They apply to --upstream URLs only: with a config alone they would silently do nothing.
    for (const flag of ['upstream-dialect', 'upstream-header'] as const)
      if (values[flag] !== undefined && upstreamUrls.length === 0)
        throw new UsageError(
          `--${flag} applies to --upstream URLs; for the upstreams of ${values.config} give their "${flag === 'upstream-dialect' ? 'dialects' : 'headers'}" in the file`,
        );
    const specs: UpstreamSpec[] =
      config === undefined ? [] : specsFromConfig(config.upstreams, values.config!);
    const dialects =
      values['upstream-dialect'] === undefined ? undefined : parseDialectList(values['upstream-dialect']);
    const taken = new Set(specs.map((spec) => spec.name));
    upstreamUrls.forEach((text, index) => {
      const url = upstreamBaseUrl(text, (reason) => {
        throw new UsageError(`--upstream: ${reason}`);
      });
      // host:port[/path]; upstream-N when two are the same.
      let name = upstreamNameFor(url);
      if (taken.has(name)) name = `upstream-${index + 1}`;
      taken.add(name);
      specs.push({ name, url, dialects, headers: upstreamHeaders, source: '--upstream' });
    });
    // undici's dispatch to the upstream (node/undici-fetch.ts): no Request, Response or Web Streams per
    // request or per chunk. One dispatcher for all upstreams (it pools connections per origin).
    const resolved = await resolveUpstreams(specs, {
      pool: specs.length > 1 || config !== undefined,
      probeFetch: fetch,
      upstreamFetch: createUndiciFetch(),
      timeouts,
    });
    for (const warning of resolved.warnings) io.stderr.write(`warning: ${warning}\n`);
    upstreams = resolved.upstreams;
    summaries = resolved.summaries;
    downAtStart = resolved.downAtStart;
    // undici's HTTP parser (llhttp, WebAssembly) stays on V8's baseline compiler: TurboFan's recompile
    // of it costs tens of MiB of RSS for no measurable speed. Set before the first connection compiles
    // it. Measured: bench/README.md "Why the code is shaped as it is".
    setFlagsFromString('--liftoff-only');
    // undici is an optional peer dependency: a missing one is said now, not at the first request.
    await loadUndici();
    upstreamText = summaries.map((summary) => `${summary.url} (${summary.dialects.join(', ')})`).join('; ');
  } else {
    const timing: Record<string, number> = {};
    if (values['sim-tps'] !== undefined) timing.tokensPerSecond = positive(values['sim-tps'], '--sim-tps');
    if (values['sim-ttft-ms'] !== undefined) timing.ttftMs = integer(values['sim-ttft-ms'], '--sim-ttft-ms');
    if (values['sim-faults'] !== undefined) parseFaults(values['sim-faults']);
    const simModels = (values['sim-models'] ?? 'sim')
      .split(',')
      .map((name) => name.trim())
      .filter((name) => name !== '');
    if (simModels.length === 0) throw new UsageError('--sim-models needs at least one model name');
    requirePackages(['gpt-tokenizer/encoding/cl100k_base'], 'The simulated model (serve without --upstream)');
    // The simulator's code is loaded only when it is the upstream (serve --upstream never runs it).
    const [{ createSim }, { SIM_RAW_PREFIX, simRawRoute }] = await Promise.all([
      import('../../sim/create-sim.ts'),
      import('../../sim/sim-raw-route.ts'),
    ]);
    simRawPrefix = SIM_RAW_PREFIX;
    const sim = createSim({
      models: simModels,
      // Split writes reach a browser as separate reads (the playground's raw wire view).
      splitGapMs: 2,
      timing,
      faults: values['sim-faults'],
      seed: values['sim-seed'] === undefined ? undefined : integer(values['sim-seed'], '--sim-seed'),
      contextTokens:
        values['sim-context-tokens'] === undefined
          ? undefined
          : positive(values['sim-context-tokens'], '--sim-context-tokens', true),
    });
    upstreams = [
      {
        name: 'sim',
        url: 'http://sim.tokenwire.internal',
        dialects: DIALECT_IDS,
        fetch: sim.fetch,
        models: simModels,
        timeouts,
      },
    ];
    simRaw = simRawRoute(sim.fetch);
    // Counted, not written: a number in words goes stale.
    upstreamText = `the built-in simulated model (all ${DIALECT_IDS.length} dialects)`;
  }

  const flush: GatewayOptions['flush'] = {};
  if (values['flush-interval-ms'] !== undefined)
    flush.intervalMs = integer(values['flush-interval-ms'], '--flush-interval-ms');
  if (values['flush-bytes'] !== undefined) flush.bytes = integer(values['flush-bytes'], '--flush-bytes');
  if (values['flush-delimiter'] !== undefined)
    flush.delimiter = values['flush-delimiter'].replace(/\\n/g, '\n');
  const logLevelValue = values['log-level'];
  if (logLevelValue !== undefined && !LOG_LEVELS.includes(logLevelValue as LogLevel))
    throw new UsageError(
      `--log-level must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(logLevelValue)}`,
    );
  const logLevel: LogLevel =
    (logLevelValue as LogLevel | undefined) ?? (values.log ? 'info' : DEFAULT_LOG_LEVEL);
  const security = securityOptions(values, io.env);
  const resumeStore =
    worker !== undefined && (values['resume-store'] === undefined || values['resume-store'] === 'memory')
      ? worker.resumeStore
      : await openResumeStore(values['resume-store'], io, resumeBounds(values));
  const telemetry = await startTelemetry(io.env, { log: (line) => io.stderr.write(`${line}\n`) });
  for (const warning of telemetry?.warnings ?? []) io.stderr.write(`warning: ${warning}\n`);
  // Hardening: DNS rebinding (allowed hosts), slow bodies and connection floods.
  const allowedHosts = allowedHostsFor(values.host, values['allowed-host'] ?? []);
  const bodyTimeoutMs =
    values['body-timeout-ms'] === undefined
      ? DEFAULT_BODY_TIMEOUT_MS
      : integer(values['body-timeout-ms'], '--body-timeout-ms');
  const maxConnections =
    values['max-connections'] === undefined
      ? DEFAULT_MAX_CONNECTIONS
      : integer(values['max-connections'], '--max-connections');
  if (maxConnections === 0) throw new UsageError('--max-connections must be at least 1');
  const { gateway, fetch: handler } = createGuardedGateway({
    ...security,
    streamSlots: security.maxStreams === undefined ? undefined : worker?.streamSlots,
    allowedHosts,
    resumeStore,
    upstreams,
    balance,
    retries,
    continueOnFailure: values['continue-on-failure'],
    continueMax,
    downAtStart,
    keepaliveMs:
      values['keepalive-ms'] === undefined ? undefined : integer(values['keepalive-ms'], '--keepalive-ms'),
    keepStreamOnDisconnect: values['keep-stream-on-disconnect'],
    dropParams: values['drop-params'],
    flush,
    // The playground page at GET / (the gateway routes POST / to TGI before any fallback), and with the
    // simulator as upstream its raw bytes under /sim/ (the page's wire view).
    fallback: simRaw === undefined ? serveStatic() : chainFallbacks(simRaw, serveStatic()),
    // Failed and refused requests (warn and above) are logged by default, so the request id a 502
    // names can be found; --log / --log-level show more.
    onLog: (record) => io.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), ...record })}\n`),
    logLevel,
    logContent: values['log-content'],
    telemetry:
      telemetry === undefined
        ? undefined
        : { tracer: telemetry.tracer, meter: telemetry.meter, propagator: telemetry.propagator },
  });
  let served: Awaited<ReturnType<typeof serve>>;
  try {
    served = await serve(
      worker === undefined ? handler : worker.handler(handler, () => gateway.metrics.render()),
      { host: values.host, port, bodyTimeoutMs, maxConnections, trustProxy: values['trust-proxy'] },
    );
  } catch (error) {
    await gateway.close();
    const code = (error as { code?: string }).code;
    if (code === 'EADDRINUSE')
      throw new UsageError(`port ${port} on ${values.host} is in use; pick another with --port`);
    throw error;
  }
  const loopback = values.host === '127.0.0.1' || values.host === 'localhost' || values.host === '::1';
  if (values.json) {
    io.stdout.write(
      `${JSON.stringify({ url: served.url, host: served.host, port: served.port, upstream: upstreamText, upstreams: summaries, balance, retries, continueOnFailure: values['continue-on-failure'], continueMax, loopbackOnly: loopback, logLevel, allowedHosts: allowedHosts ?? '*', bodyTimeoutMs, maxConnections, ...securitySummary(security, values['resume-store']) })}\n`,
    );
  } else {
    io.stdout.write(`${style.bold('tokenwire gateway')} listening on ${style.cyan(served.url)}\n`);
    io.stdout.write(
      loopback
        ? style.dim(
            `  bound to ${values.host} only: not reachable from other machines (use --host to change that)\n`,
          )
        : style.yellow(`  bound to ${values.host}: reachable from other machines\n`),
    );
    if (summaries.length === 0) io.stdout.write(`  upstream: ${upstreamText}\n`);
    else {
      io.stdout.write(
        `  upstreams (balance ${balance}, ${retries} ${retries === 1 ? 'retry' : 'retries'} before the first byte${values['continue-on-failure'] ? ', answers continued on a sibling when a server dies mid-answer' : ''}):\n`,
      );
      for (const summary of summaries) io.stdout.write(`    ${upstreamLine(summary)}\n`);
      for (const summary of summaries)
        if (summary.down !== undefined)
          io.stdout.write(style.yellow(`  down at start: ${summary.name} (${summary.down})\n`));
    }
    if (simRaw !== undefined)
      io.stdout.write(
        `  raw simulator (its own bytes, faults and all): ${served.url}${simRawPrefix}/<dialect path>\n`,
      );
    io.stdout.write(`  ${securityLine(security, values['resume-store'])}\n`);
    io.stdout.write(
      `  try:  curl -N ${served.url}/v1/chat/completions -H 'content-type: application/json' \\\n`,
    );
    // The model the upstream lists first ("sim" for the simulator); a placeholder when it lists none.
    const tryModel = JSON.stringify(
      upstreams.find((u) => (u.models?.length ?? 0) > 0)?.models?.[0] ?? '<model>',
    ).replace(/'/g, "'\\''");
    io.stdout.write(
      `          -d '{"model":${tryModel},"stream":true,"messages":[{"role":"user","content":"hello"}]}'\n`,
    );
    io.stdout.write(`  log: ${logLine(logLevel)}\n`);
    io.stdout.write(`  metrics: ${served.url}/metrics   Ctrl-C stops\n`);
    for (const line of telemetry?.description ?? []) io.stdout.write(`  opentelemetry ${line}\n`);
  }
  worker?.ready();
  await new Promise<void>((resolve) => {
    if (io.signal.aborted) resolve();
    io.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  io.stderr.write('shutting down: ending open streams with an error event\n');
  // A deadline: whatever is still busy (a stuck upstream, a slow exporter), SIGTERM ends the command.
  let deadline: ReturnType<typeof setTimeout> | undefined;
  const closed = await Promise.race([
    (async () => {
      await gateway.close();
      await served.close();
      await telemetry?.shutdown();
      return true;
    })(),
    new Promise<false>((resolve) => {
      deadline = setTimeout(() => resolve(false), SHUTDOWN_DEADLINE_MS);
    }),
  ]);
  clearTimeout(deadline);
  if (!closed) {
    io.stderr.write(`shutdown did not finish within ${SHUTDOWN_DEADLINE_MS} ms: leaving anyway\n`);
    return 1;
  }
  return 0;
}

/** `--retries` when neither the flag nor the config gives it. */
const DEFAULT_RETRIES = 2;

/** `--balance`, else the config's `balance`, else least-busy. */
function balanceOf(flag: string | undefined, config: ServeConfig | undefined): BalancePolicy {
  if (flag === undefined) return config?.balance ?? 'least-busy';
  if (!BALANCE_POLICIES.includes(flag as BalancePolicy))
    throw new UsageError(
      `--balance must be one of ${BALANCE_POLICIES.join(', ')}, got ${JSON.stringify(flag)}`,
    );
  return flag as BalancePolicy;
}

/** A `--config` file read and checked; serve-config.ts (and the yaml package) loaded only for it. */
async function readConfigFile(file: string, env: Record<string, string | undefined>): Promise<ServeConfig> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as { code?: string }).code;
    throw new UsageError(
      `cannot read --config ${file}: ${code === 'ENOENT' ? 'no such file' : (error as Error).message}`,
    );
  }
  const { readServeConfig } = await importOptional(
    'yaml',
    'The --config file',
    () => import('../serve-config.ts'),
  );
  return readServeConfig(text, file, env);
}

/** What is logged when neither --log nor --log-level is given: failed and refused requests. */
const DEFAULT_LOG_LEVEL: LogLevel = 'warn';

/** The banner's log line: what is written to stderr, and how to see more. */
function logLine(level: LogLevel): string {
  switch (level) {
    case 'error':
      return 'failed requests (level error) as JSON lines on stderr; --log for every request';
    case 'warn':
      return 'failed, refused and truncated requests (warn and above) as JSON lines on stderr; --log for every request, --log-level debug for upstream detail';
    case 'info':
      return 'every request as a JSON line on stderr; --log-level debug for upstream detail';
    default:
      return 'every request as a JSON line on stderr, with upstream detail (debug)';
  }
}

/** How long the shutdown may take before the command returns anyway (bin.ts then exits the process). */
export const SHUTDOWN_DEADLINE_MS = 5000;

function integer(value: string, flag: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0)
    throw new UsageError(`${flag} needs a whole number, got ${JSON.stringify(value)}`);
  return n;
}

function positive(value: string, flag: string, whole = false): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0 || (whole && !Number.isSafeInteger(n)))
    throw new UsageError(
      `${flag} needs a positive ${whole ? 'whole ' : ''}number, got ${JSON.stringify(value)}`,
    );
  return n;
}

interface SecurityFlags {
  'api-key'?: string[] | undefined;
  'max-streams'?: string | undefined;
  'max-body-bytes'?: string | undefined;
  'cors-origin'?: string[] | undefined;
}

interface Security {
  apiKeys: string[];
  maxStreams: number | undefined;
  maxBodyBytes: number | undefined;
  corsOrigins: string[];
}

/** --api-key (repeatable) and TOKENWIRE_API_KEYS (comma-separated) add up; --cors-origin must be an origin. */
function securityOptions(values: SecurityFlags, env: Record<string, string | undefined>): Security {
  const apiKeys = [...(values['api-key'] ?? []), ...(env.TOKENWIRE_API_KEYS ?? '').split(',')]
    .map((key) => key.trim())
    .filter((key) => key !== '');
  const corsOrigins = (values['cors-origin'] ?? []).map((origin) => {
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      throw new UsageError(
        `--cors-origin needs an origin such as https://example.com, got ${JSON.stringify(origin)}`,
      );
    }
    if (url.origin !== origin.replace(/\/+$/, '') || url.origin === 'null')
      throw new UsageError(
        `--cors-origin needs an origin (scheme://host[:port], no path), got ${JSON.stringify(origin)}`,
      );
    return url.origin;
  });
  const maxStreams =
    values['max-streams'] === undefined ? undefined : integer(values['max-streams'], '--max-streams');
  if (maxStreams === 0) throw new UsageError('--max-streams must be at least 1');
  return {
    apiKeys,
    maxStreams,
    maxBodyBytes:
      values['max-body-bytes'] === undefined
        ? undefined
        : integer(values['max-body-bytes'], '--max-body-bytes'),
    corsOrigins,
  };
}

function securitySummary(security: Security, resumeStore: string | undefined): Record<string, unknown> {
  return {
    apiKeyRequired: security.apiKeys.length > 0,
    maxStreams: security.maxStreams ?? null,
    corsOrigins: security.corsOrigins,
    resumeStore: resumeStore === undefined ? 'memory' : redactUrl(resumeStore),
  };
}

function securityLine(security: Security, resumeStore: string | undefined): string {
  const keys = security.apiKeys.length;
  return [
    keys > 0 ? `API key required (${keys} accepted)` : 'no API key required',
    security.maxStreams === undefined ? 'no stream limit' : `at most ${security.maxStreams} streams`,
    security.corsOrigins.length > 0 ? `CORS for ${security.corsOrigins.join(', ')}` : 'CORS off',
    `resume store: ${resumeStore === undefined ? 'memory' : redactUrl(resumeStore)}`,
  ].join('; ');
}

/** The Redis store is loaded only when asked for (it brings ioredis and its connection). */
/** --resume-max-streams and --resume-max-streams-per-client (one client cannot evict all). */
function resumeBounds(values: {
  'resume-max-streams'?: string | undefined;
  'resume-max-streams-per-client'?: string | undefined;
}): { maxStreams?: number; maxStreamsPerClient?: number } {
  const bounds: { maxStreams?: number; maxStreamsPerClient?: number } = {};
  const total = values['resume-max-streams'];
  const perClient = values['resume-max-streams-per-client'];
  if (total !== undefined) bounds.maxStreams = positive(total, '--resume-max-streams', true);
  if (perClient !== undefined)
    bounds.maxStreamsPerClient = positive(perClient, '--resume-max-streams-per-client', true);
  return bounds;
}

async function openResumeStore(
  url: string | undefined,
  io: CliIo,
  bounds: { maxStreams?: number; maxStreamsPerClient?: number },
): Promise<ResumeStore | undefined> {
  if (url === undefined || url === 'memory') return new MemoryResumeStore(bounds);
  if (!/^rediss?:\/\//.test(url))
    throw new UsageError(
      `--resume-store takes redis://HOST:PORT (or "memory"), got ${JSON.stringify(redactUrl(url))}`,
    );
  const { RedisResumeStore } = await importOptional(
    'ioredis',
    'The Redis resume store (--resume-store redis://…)',
    () => import('../../node/redis-resume-store.ts'),
  );
  let reported = false;
  const store = new RedisResumeStore({
    url,
    ...bounds,
    onError: (error) => {
      // Once: a Redis outage would otherwise print a line per frame.
      if (reported) return;
      reported = true;
      io.stderr.write(`warning: the resume store (${redactUrl(url)}) failed: ${(error as Error).message}\n`);
    },
  });
  try {
    await store.ready();
  } catch (error) {
    await store.shutdown().catch(() => {});
    throw new UsageError(`cannot reach the resume store ${redactUrl(url)}: ${(error as Error).message}`);
  }
  return store;
}

/** A URL without its password, for printing. */
function redactUrl(text: string): string {
  try {
    const url = new URL(text);
    if (url.password !== '') url.password = '***';
    return url.toString().replace(/\/$/, '');
  } catch {
    return text;
  }
}

/** The first fallback that answers. */
function chainFallbacks(
  ...handlers: ((request: Request) => Promise<Response | undefined> | Response | undefined)[]
): (request: Request) => Promise<Response | undefined> {
  return async (request) => {
    for (const handler of handlers) {
      const response = await handler(request);
      if (response !== undefined) return response;
    }
    return undefined;
  };
}

/**
 * The default of --max-connections. Each client connection is a socket (a file descriptor), and a
 * stream holds an upstream one too: 1024 keeps a flood at about 2k descriptors, well under common
 * `ulimit -n` hard limits, and above the concurrency one Node process relays well; raise it for more.
 */
const DEFAULT_MAX_CONNECTIONS = 1024;

const LOOPBACK_HOSTS = ['localhost', '127.0.0.1', '[::1]'];

/**
 * The Host names answered (DNS rebinding): bound to loopback, the loopback names, the bound
 * address and any --allowed-host; bound elsewhere, any Host (undefined) unless --allowed-host is given,
 * then the same list. A rebinding page sends its own domain as Host, never a loopback name.
 */
function allowedHostsFor(host: string, extra: readonly string[]): string[] | undefined {
  const loopback =
    host === 'localhost' || host === '::1' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);
  if (!loopback && extra.length === 0) return undefined;
  const bound = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return [
    ...new Set([...LOOPBACK_HOSTS, bound.toLowerCase(), ...extra.map((name) => name.trim().toLowerCase())]),
  ];
}
