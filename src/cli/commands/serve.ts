import { parseArgs } from 'node:util';
import type { DialectId } from '../../dialects/dialect.ts';
import { DIALECT_IDS } from '../../dialects/dialect.ts';
import { serve } from '../../node/serve.ts';
import { createGateway, type GatewayOptions } from '../../server/create-gateway.ts';
import type { Upstream } from '../../server/upstream.ts';
import { createSim } from '../../sim/create-sim.ts';
import { FAULTS, parseFaults } from '../../sim/faults.ts';
import { type CliIo, styleFor, UsageError } from '../cli-io.ts';
import { parseDialectList, probeUpstream } from '../probe-upstream.ts';

export const SERVE_HELP = `Usage: tokenwire serve [options]

Starts the gateway. With no --upstream it fronts the built-in simulated model, so every dialect works
at once with no weights and no other server.

Options:
  --host HOST                 Address to listen on (default 127.0.0.1: loopback only)
  --port N                    Port (default 8080; 0 picks a free one)
  --upstream URL              Front a real server (vLLM, llama-server, TGI, Ollama) instead of the simulator
  --upstream-dialect LIST     Dialects the upstream speaks, comma-separated (default: found by probing)
  --upstream-header 'K: V'    Header sent upstream, e.g. credentials (repeatable; never echoed or logged)
  --keepalive-ms N            SSE keepalive comment after N ms of silence (default 15000; 0 = off)
  --keep-stream-on-disconnect Keep generating when a client leaves, so it can resume (costs upstream time)
  --flush-interval-ms N       Coalesce text: write at most every N ms (default: every event)
  --flush-bytes N             Coalesce text: write once N bytes are held
  --flush-delimiter S         Coalesce text: write up to the last S (e.g. "\\n")
  --sim-faults SPEC           Faults for every simulated request (see below)
  --sim-tps N                 Simulated tokens per second (default 50)
  --sim-ttft-ms N             Simulated time to first token in ms
  --sim-seed N                Simulated text seed (default 1)
  --log                       One JSON line per request on stderr
  --json                      Print the start-up information as JSON
  -h, --help                  Show this help

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
      upstream: { type: 'string' },
      'upstream-dialect': { type: 'string' },
      'upstream-header': { type: 'string', multiple: true },
      'keepalive-ms': { type: 'string' },
      'keep-stream-on-disconnect': { type: 'boolean', default: false },
      'flush-interval-ms': { type: 'string' },
      'flush-bytes': { type: 'string' },
      'flush-delimiter': { type: 'string' },
      'sim-faults': { type: 'string' },
      'sim-tps': { type: 'string' },
      'sim-ttft-ms': { type: 'string' },
      'sim-seed': { type: 'string' },
      log: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) {
    io.stdout.write(SERVE_HELP);
    return 0;
  }
  const style = styleFor(io.stdout, io.env);
  const port = integer(values.port, '--port');
  const upstreamHeaders: Record<string, string> = {};
  for (const header of values['upstream-header'] ?? []) {
    const colon = header.indexOf(':');
    if (colon <= 0)
      throw new UsageError(`--upstream-header needs "Name: value", got ${JSON.stringify(header)}`);
    upstreamHeaders[header.slice(0, colon).trim().toLowerCase()] = header.slice(colon + 1).trim();
  }

  let upstream: Upstream;
  let upstreamText: string;
  if (values.upstream !== undefined) {
    let url: URL;
    try {
      url = new URL(values.upstream);
    } catch {
      throw new UsageError(`--upstream is not a URL: ${values.upstream}`);
    }
    let dialects: DialectId[];
    let models: string[] = [];
    if (values['upstream-dialect'] !== undefined) {
      dialects = parseDialectList(values['upstream-dialect']);
    } else {
      const probe = await probeUpstream(url.origin, fetch, upstreamHeaders);
      if (probe.dialects.length === 0) {
        throw new UsageError(
          `could not tell what server ${url.origin} is (no /api/tags, /props, /info or /v1/models); pass --upstream-dialect`,
        );
      }
      dialects = probe.dialects;
      models = probe.models;
    }
    upstream = { name: url.host, url: url.origin, dialects, headers: upstreamHeaders, models };
    upstreamText = `${url.origin} (${dialects.join(', ')})`;
  } else {
    const timing: Record<string, number> = {};
    if (values['sim-tps'] !== undefined) timing.tokensPerSecond = positive(values['sim-tps'], '--sim-tps');
    if (values['sim-ttft-ms'] !== undefined) timing.ttftMs = integer(values['sim-ttft-ms'], '--sim-ttft-ms');
    if (values['sim-faults'] !== undefined) parseFaults(values['sim-faults']);
    const sim = createSim({
      timing,
      faults: values['sim-faults'],
      seed: values['sim-seed'] === undefined ? undefined : integer(values['sim-seed'], '--sim-seed'),
    });
    upstream = {
      name: 'sim',
      url: 'http://sim.tokenwire.internal',
      dialects: DIALECT_IDS,
      fetch: sim.fetch,
      models: ['sim'],
    };
    upstreamText = 'the built-in simulated model (all six dialects)';
  }

  const flush: GatewayOptions['flush'] = {};
  if (values['flush-interval-ms'] !== undefined)
    flush.intervalMs = integer(values['flush-interval-ms'], '--flush-interval-ms');
  if (values['flush-bytes'] !== undefined) flush.bytes = integer(values['flush-bytes'], '--flush-bytes');
  if (values['flush-delimiter'] !== undefined)
    flush.delimiter = values['flush-delimiter'].replace(/\\n/g, '\n');
  const gateway = createGateway({
    upstreams: [upstream],
    keepaliveMs:
      values['keepalive-ms'] === undefined ? undefined : integer(values['keepalive-ms'], '--keepalive-ms'),
    keepStreamOnDisconnect: values['keep-stream-on-disconnect'],
    flush,
    onLog: values.log
      ? (record) => io.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), ...record })}\n`)
      : undefined,
  });
  let served: Awaited<ReturnType<typeof serve>>;
  try {
    served = await serve(gateway.fetch, { host: values.host, port });
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'EADDRINUSE')
      throw new UsageError(`port ${port} on ${values.host} is in use; pick another with --port`);
    throw error;
  }
  const loopback = values.host === '127.0.0.1' || values.host === 'localhost' || values.host === '::1';
  if (values.json) {
    io.stdout.write(
      `${JSON.stringify({ url: served.url, host: served.host, port: served.port, upstream: upstreamText, loopbackOnly: loopback })}\n`,
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
    io.stdout.write(`  upstream: ${upstreamText}\n`);
    io.stdout.write(
      `  try:  curl -N ${served.url}/v1/chat/completions -H 'content-type: application/json' \\\n`,
    );
    io.stdout.write(
      `          -d '{"model":"sim","stream":true,"messages":[{"role":"user","content":"hello"}]}'\n`,
    );
    io.stdout.write(`  metrics: ${served.url}/metrics   Ctrl-C stops\n`);
  }
  await new Promise<void>((resolve) => {
    if (io.signal.aborted) resolve();
    io.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  io.stderr.write('shutting down: ending open streams with an error event\n');
  await gateway.close();
  await served.close();
  return 0;
}

function integer(value: string, flag: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0)
    throw new UsageError(`${flag} needs a whole number, got ${JSON.stringify(value)}`);
  return n;
}

function positive(value: string, flag: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0)
    throw new UsageError(`${flag} needs a positive number, got ${JSON.stringify(value)}`);
  return n;
}
