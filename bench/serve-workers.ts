/**
 * `tokenwire serve --workers 2` against `--workers 1` at saturation.
 *
 * Method
 * - Two gateways, the real CLI (`node .build/src/cli/bin.js serve --upstream URL --upstream-dialect
 *   openai-chat --workers N`), started once each and idle while the other is measured. This process holds
 *   the upstream (node:http, answering every stream at once with a role chunk, `--chunks` content chunks,
 *   the finish chunk and `[DONE]` in one write) and the client (node:http, a keep-alive agent of c
 *   sockets per cell: node:cluster hands each new connection to the next worker).
 * - Closed loop: c clients each start a stream as soon as their last one ended, for `--seconds` after a
 *   warm-up of as long. Streams/s = streams completed in the window / its length. TTFB: request written
 *   → first body bytes read (the role and first content chunks), p50 and p99 over the window's streams.
 *   Gateway CPU per stream: utime + stime (/proc) of the primary and its workers across the window, over
 *   the streams completed; the primary's part apart (what the shared store, slots and metrics cost).
 *   This process's own CPU per stream beside it: the load it puts on the same cores.
 * - Cells interleaved (the order of the two gateways alternates each round); medians over `--rounds`.
 * - On a 2-core machine the client and upstream share the cores with the workers: the ratio is what a
 *   second core gives here, not the ceiling of a bigger machine.
 *
 * stdout: the Markdown body of the RESULTS.md section. Progress on stderr. Flags: `--rounds N` (3),
 * `--levels 32,128`, `--seconds S` (4), `--chunks N` (20), `--bin PATH`, `--quick`.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { fmt } from './stats.ts';

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
function flag(name: string, fallback: string): string {
  const at = argv.indexOf(name);
  return at === -1 || argv[at + 1] === undefined ? fallback : argv[at + 1]!;
}
const rounds = Number(flag('--rounds', quick ? '1' : '3'));
const levels = flag('--levels', '32,128').split(',').map(Number);
const seconds = Number(flag('--seconds', quick ? '2' : '4'));
const chunks = Number(flag('--chunks', '20'));
const bin = flag('--bin', fileURLToPath(new URL('../src/cli/bin.js', import.meta.url)));
const log = (line: string) => console.error(`[serve-workers] ${line}`);

function upstreamBody(): string {
  const chunk = (delta: Record<string, unknown>, finish: string | null) =>
    `data: ${JSON.stringify({ id: 'chatcmpl-b', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  let body = chunk({ role: 'assistant', content: '' }, null);
  for (let i = 0; i < chunks; i++) body += chunk({ content: ` word${i}` }, null);
  return `${body}${chunk({}, 'stop')}data: [DONE]\n\n`;
}

async function startUpstream(): Promise<{ url: string; close(): void }> {
  const body = upstreamBody();
  const server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => server.close() };
}

async function startGateway(
  workers: number,
  upstream: string,
): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(
    process.execPath,
    [
      bin,
      'serve',
      '--port',
      '0',
      '--json',
      '--workers',
      String(workers),
      '--upstream',
      upstream,
      '--upstream-dialect',
      'openai-chat',
      '--max-connections',
      '4096',
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`serve --workers ${workers} exited (${code})`)));
  });
  return { url: String((JSON.parse(line) as { url: string }).url), child };
}

/** CPU ms (utime + stime, /proc, 100 ticks a second) of a process and of its children: [own, children]. */
function cpuMs(pid: number): [number, number] {
  const of = (id: number) => {
    try {
      const fields = readFileSync(`/proc/${id}/stat`, 'utf8').split(') ')[1]!.split(' ');
      return (Number(fields[11]) + Number(fields[12])) * 10;
    } catch {
      return 0;
    }
  };
  let children: number[] = [];
  try {
    children = execFileSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .map(Number);
  } catch {
    // none
  }
  return [of(pid), children.reduce((sum, id) => sum + of(id), 0)];
}

const REQUEST = JSON.stringify({
  model: 'm',
  stream: true,
  max_tokens: chunks,
  messages: [{ role: 'user', content: 'bench' }],
});

interface Cell {
  workers: number;
  level: number;
  streamsPerSecond: number;
  ttfbP50: number;
  ttfbP99: number;
  failed: number;
  /** Gateway CPU per completed stream, µs: all its processes, and the primary's part of it. */
  cpuPerStreamUs: number;
  primaryPerStreamUs: number;
  /** This process's (client and upstream) CPU per completed stream, µs: it shares the cores. */
  benchPerStreamUs: number;
}

/** c closed-loop clients for a warm-up and a measured window of `seconds` each. */
async function runCell(url: string, pid: number, level: number): Promise<Omit<Cell, 'workers' | 'level'>> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: level });
  const target = new URL('/v1/chat/completions', url);
  let measuring = false;
  let stop = false;
  let completed = 0;
  let failed = 0;
  const ttfb: number[] = [];
  const one = () =>
    new Promise<void>((resolve) => {
      const started = performance.now();
      const counted = measuring;
      const req = http.request(
        target,
        { method: 'POST', agent, headers: { 'content-type': 'application/json' } },
        (res) => {
          let first = true;
          res.on('data', () => {
            if (first && counted) ttfb.push(performance.now() - started);
            first = false;
          });
          res.on('end', () => {
            if (counted && measuring) {
              if (res.statusCode === 200) completed += 1;
              else failed += 1;
            }
            resolve();
          });
          res.on('error', () => resolve());
        },
      );
      req.on('error', () => {
        if (counted) failed += 1;
        resolve();
      });
      req.end(REQUEST);
    });
  const loops = Array.from({ length: level }, async () => {
    while (!stop) await one();
  });
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  measuring = true;
  const from = performance.now();
  const cpuFrom = cpuMs(pid);
  const benchFrom = process.cpuUsage();
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  measuring = false;
  const cpuTo = cpuMs(pid);
  const bench = process.cpuUsage(benchFrom);
  const window = (performance.now() - from) / 1000;
  stop = true;
  await Promise.all(loops);
  agent.destroy();
  ttfb.sort((a, b) => a - b);
  const at = (q: number) => ttfb[Math.min(ttfb.length - 1, Math.floor(q * ttfb.length))] ?? Number.NaN;
  const own = cpuTo[0] - cpuFrom[0];
  const all = own + cpuTo[1] - cpuFrom[1];
  return {
    streamsPerSecond: completed / window,
    ttfbP50: at(0.5),
    ttfbP99: at(0.99),
    failed,
    cpuPerStreamUs: (all * 1000) / Math.max(1, completed),
    primaryPerStreamUs: (own * 1000) / Math.max(1, completed),
    benchPerStreamUs: (bench.user + bench.system) / Math.max(1, completed),
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

const upstream = await startUpstream();
const gateways = new Map<number, { url: string; child: ChildProcess }>();
try {
  for (const workers of [1, 2]) gateways.set(workers, await startGateway(workers, upstream.url));
  const cells: Cell[] = [];
  for (let round = 0; round < rounds; round++) {
    for (const level of levels) {
      const order = round % 2 === 0 ? [1, 2] : [2, 1];
      for (const workers of order) {
        const gateway = gateways.get(workers)!;
        const figures = await runCell(gateway.url, gateway.child.pid!, level);
        log(
          `round ${round + 1}, c = ${level}, --workers ${workers}: ${fmt(figures.streamsPerSecond, 0)} streams/s, TTFB p50 ${fmt(figures.ttfbP50)} ms, p99 ${fmt(figures.ttfbP99)} ms, CPU ${fmt(figures.cpuPerStreamUs, 0)} µs/stream (primary ${fmt(figures.primaryPerStreamUs, 0)}), client+upstream ${fmt(figures.benchPerStreamUs, 0)} µs/stream${figures.failed > 0 ? `, ${figures.failed} failed` : ''}`,
        );
        cells.push({ workers, level, ...figures });
      }
    }
  }
  const rows: string[] = [
    `Closed loop, ${chunks}-chunk streams from an upstream that answers at once; ${rounds} round(s) of ${seconds} s per cell after a ${seconds} s warm-up, cells interleaved; medians over the rounds (min–max of streams/s). TTFB: request written → first body bytes. Method: \`bench/serve-workers.ts\`.`,
    '',
    '| c | --workers | streams/s | TTFB p50 (ms) | TTFB p99 (ms) | gateway CPU µs/stream (primary’s part) | client+upstream CPU µs/stream | failed |',
    '|---|---|---|---|---|---|---|---|',
  ];
  const ratios: string[] = [];
  for (const level of levels) {
    const figure = (workers: number) => {
      const mine = cells.filter((c) => c.level === level && c.workers === workers);
      const rate = mine.map((c) => c.streamsPerSecond);
      return {
        rate: median(rate),
        min: Math.min(...rate),
        max: Math.max(...rate),
        p50: median(mine.map((c) => c.ttfbP50)),
        p99: median(mine.map((c) => c.ttfbP99)),
        failed: mine.reduce((sum, c) => sum + c.failed, 0),
        cpu: median(mine.map((c) => c.cpuPerStreamUs)),
        primary: median(mine.map((c) => c.primaryPerStreamUs)),
        bench: median(mine.map((c) => c.benchPerStreamUs)),
      };
    };
    for (const workers of [1, 2]) {
      const f = figure(workers);
      rows.push(
        `| ${level} | ${workers} | ${fmt(f.rate, 0)} (${fmt(f.min, 0)}–${fmt(f.max, 0)}) | ${fmt(f.p50)} | ${fmt(f.p99)} | ${fmt(f.cpu, 0)} (${fmt(f.primary, 0)}) | ${fmt(f.bench, 0)} | ${f.failed} |`,
      );
    }
    const one = figure(1);
    const two = figure(2);
    ratios.push(
      `- c = ${level}: --workers 2 serves **${fmt(two.rate / one.rate)}×** the streams/s of --workers 1; TTFB p50 ${fmt(two.p50 / one.p50)}×, p99 ${fmt(two.p99 / one.p99)}×.`,
    );
  }
  process.stdout.write(`${[...rows, '', ...ratios].join('\n')}\n`);
} finally {
  for (const { child } of gateways.values()) child.kill('SIGTERM');
  await Promise.all(
    [...gateways.values()].map(
      ({ child }) =>
        new Promise((resolve) => (child.exitCode === null ? child.once('exit', resolve) : resolve(0))),
    ),
  );
  upstream.close();
}
