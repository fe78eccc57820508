/**
 * The gateway measured the way a user would, against a bare pipe.
 *
 * Method
 * - Three processes. The gateway is the real CLI, `node .build/src/cli/bin.js serve --upstream URL
 *   --upstream-dialect openai-chat` (the same compiled sources as dist/cli/bin.js; `--bin` for another),
 *   defaults unchanged. The bare pipe (`bare-pipe.ts`) is a node:http server forwarding each request with
 *   `http.request` on a keep-alive agent and piping the response back, nothing else. This process holds
 *   the upstream (a node:http server writing 100 OpenAI chat chunks 20 ms apart after a role chunk, then
 *   the finish chunk and `[DONE]`) and the measuring client (node:http, a keep-alive agent per subject).
 * - Subjects: direct (client → upstream), the pipe, tokenwire; rounds interleave them (the order rotates
 *   each round) at c = 1, 32, 128 (c streams at once; at c = 1 several one after another). "Added" =
 *   the subject's figure − direct's in the same round; the tables give the median over the rounds.
 * - Net TTFT: request written → first content chunk read, minus the upstream's own wait (request reached
 *   it → first chunk written), both stamped in this process on one clock. p50 and p99 over a cell's streams.
 * - Chunk delay: chunk k read − chunk k written by the upstream; p99 over every chunk of the cell.
 * - CPU per chunk: the proxy process's utime+stime from /proc/<pid>/stat (all its threads; clock ticks,
 *   usually 10 ms) across the cell, over the content chunks the upstream wrote in it.
 * - RSS: the proxy process's highest RSS (/proc/<pid>/stat) sampled every 100 ms during the cell.
 * - Warm-up, not recorded: `--warm` two-chunk streams per subject, 128 at a time (JIT, connection pools).
 *
 * stdout: the Markdown body of the RESULTS.md section (run-all prints the heading). Progress on stderr.
 * Flags: `--rounds N` (default 3), `--levels 1,32,128`, `--at-one N` (streams one after another at c = 1,
 * default 4), `--probes N` (two-chunk streams one at a time at c = 1 that count towards TTFT only, default
 * 20), `--start-rounds N` (bursts of 128 one-token streams measuring what a request start costs, default
 * 12), `--chunks N` (100), `--gap-ms N` (20), `--warm N` (2000), `--bin PATH`, `--proxy-flags "FLAGS"` (node flags for both proxies), `--gateway-flags "FLAGS"` (for
 * the gateway alone), `--quick`.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import {
  cellFigures,
  type PipeCell,
  type PipeStream,
  type PipeSubject,
  pipeMarkdown,
  pipeVerdicts,
  summarizePipeCells,
} from './gateway-vs-pipe-summary.ts';
import { fmt } from './stats.ts';

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
function flag(name: string, fallback: string): string {
  const at = argv.indexOf(name);
  return at === -1 || argv[at + 1] === undefined ? fallback : argv[at + 1]!;
}
const rounds = Number(flag('--rounds', '3'));
const levels = flag('--levels', '1,32,128').split(',').map(Number);
const atOne = Number(flag('--at-one', quick ? '2' : '4'));
const chunks = Number(flag('--chunks', '100'));
/** Node flags for both proxy processes (diagnosis, e.g. `--max-semi-space-size=4`; none by default). */
const proxyFlags = flag('--proxy-flags', '')
  .split(' ')
  .filter((f) => f !== '');
/** Node flags for the gateway alone (a V8 heap setting measured against the same pipe). */
const gatewayFlags = flag('--gateway-flags', '')
  .split(' ')
  .filter((f) => f !== '');
/** More `tokenwire serve` arguments (diagnosis, e.g. `--workers 2`: then CPU and RSS are the primary's alone). */
const serveArgs = flag('--serve-args', '')
  .split(' ')
  .filter((f) => f !== '');
const probesAtOne = Number(flag('--probes', quick ? '10' : '20'));
/** Rounds of the request-start phase: bursts of 128 one-token streams, pipe and tokenwire alternating. */
const startRounds = Number(flag('--start-rounds', quick ? '4' : '12'));
const gapMs = Number(flag('--gap-ms', '20'));
const warm = Number(flag('--warm', quick ? '300' : '2000'));
const bin = flag('--bin', fileURLToPath(new URL('../src/cli/bin.js', import.meta.url)));
const pipeScript = fileURLToPath(new URL('./bare-pipe.js', import.meta.url));
const log = (line: string) => console.error(`[gateway-vs-pipe] ${line}`);

function monoMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

function getconf(name: string, fallback: number): number {
  try {
    const value = Number(execFileSync('getconf', [name], { encoding: 'utf8' }).trim());
    return Number.isFinite(value) && value > 0 ? value : fallback;
  } catch {
    return fallback;
  }
}
const CLK_TCK = getconf('CLK_TCK', 100);
const PAGE_SIZE = getconf('PAGESIZE', 4096);

/** utime+stime (µs, every thread of the process) and RSS (bytes) from /proc/<pid>/stat. */
function procStat(pid: number): { cpuUs: number; rssBytes: number } {
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15, rss 24.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return { cpuUs: (ticks * 1e6) / CLK_TCK, rssBytes: Number(fields[21]) * PAGE_SIZE };
}

/** RSS and its anonymous part (heap, stacks: not the mapped code) from /proc/<pid>/status, bytes. */
function rssSplit(pid: number): { rss: number; anon: number } {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(text)?.[1] ?? Number.NaN) * 1024;
  return { rss: kib('VmRSS'), anon: kib('RssAnon') };
}

// ---------------------------------------------------------------- the upstream (in this process)

const sendLog = new Map<string, { receivedAt: number; sent: number[] }>();
const created = Math.floor(Date.now() / 1000);
const chunkFrame = (delta: string, finish: string | null) =>
  `data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":${created},"model":"sim","choices":[{"index":0,"delta":${delta},"logprobs":null,"finish_reason":${finish === null ? 'null' : `"${finish}"`}}]}\n\n`;

const upstream = http.createServer((req, res) => {
  const receivedAt = monoMs();
  const id = String(req.headers['x-request-id'] ?? '');
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (text: string) => {
    body += text;
  });
  req.on('end', () => {
    let n = chunks;
    try {
      const maxTokens = (JSON.parse(body) as { max_tokens?: unknown }).max_tokens;
      if (typeof maxTokens === 'number' && maxTokens > 0) n = maxTokens;
    } catch {}
    // Warm-up and request-start streams go at once; measured ones 20 ms apart, each due at a fixed time.
    const gap = id.startsWith('warm-') || id.startsWith('start-') ? 0 : gapMs;
    const sent: number[] = [];
    sendLog.set(id, { receivedAt, sent });
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.write(chunkFrame('{"role":"assistant","content":""}', null));
    let k = 0;
    const tick = () => {
      if (res.destroyed) return;
      sent.push(monoMs());
      res.write(chunkFrame(`{"content":" w${k}"}`, null));
      k += 1;
      if (k < n) {
        setTimeout(tick, gap === 0 ? 0 : Math.max(0, receivedAt + (k + 1) * gap - monoMs()));
        return;
      }
      res.write(chunkFrame('{}', 'length'));
      res.end('data: [DONE]\n\n');
    };
    setTimeout(tick, gap);
  });
});

// The proxies' upstream connections stay open between cells (both pools honour the server's timeout hint).
upstream.keepAliveTimeout = 60_000;

// ---------------------------------------------------------------- the client (in this process)

function isContent(block: string): boolean {
  const at = block.lastIndexOf('data:');
  if (at === -1) return false;
  const payload = block.slice(at + 5).trimStart();
  if (!payload.startsWith('{')) return false;
  const parsed = JSON.parse(payload) as { choices?: { delta?: { content?: unknown } }[] };
  const content = parsed.choices?.[0]?.delta?.content;
  return typeof content === 'string' && content !== '';
}

function runStream(base: URL, agent: http.Agent, id: string, maxTokens: number): Promise<PipeStream> {
  const body = JSON.stringify({
    model: 'sim',
    messages: [{ role: 'user', content: `Tell me about rivers (${id}).` }],
    max_tokens: maxTokens,
    stream: true,
  });
  const arrived: number[] = [];
  let sentAt = 0;
  return new Promise((resolve) => {
    let error: string | undefined;
    const finish = () => {
      const entry = sendLog.get(id);
      sendLog.delete(id);
      resolve({
        sentAt,
        receivedAt: entry?.receivedAt,
        chunkSent: entry?.sent ?? [],
        chunkArrived: arrived,
        error,
      });
    };
    const request = http.request({
      host: base.hostname,
      port: base.port,
      method: 'POST',
      path: '/v1/chat/completions',
      agent,
      headers: {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
        accept: 'text/event-stream',
        'x-request-id': id,
      },
    });
    let done = false;
    const fail = (message: string) => {
      if (done) return;
      done = true;
      error = message;
      finish();
    };
    request.on('error', (e) => fail(e.message));
    request.on('response', (response) => {
      if (response.statusCode !== 200) {
        response.resume();
        fail(`HTTP ${response.statusCode}`);
        return;
      }
      response.setEncoding('utf8');
      let carry = '';
      response.on('data', (text: string) => {
        const at = monoMs();
        carry += text;
        let pos = 0;
        for (;;) {
          const end = carry.indexOf('\n\n', pos);
          if (end === -1) break;
          if (isContent(carry.slice(pos, end))) arrived.push(at);
          pos = end + 2;
        }
        carry = carry.slice(pos);
      });
      response.on('end', () => {
        if (done) return;
        done = true;
        finish();
      });
      response.on('error', (e) => fail(e.message));
      response.on('aborted', () => fail('aborted'));
    });
    sentAt = monoMs();
    request.end(body);
  });
}

// ---------------------------------------------------------------- the proxies (their own processes)

const children: ChildProcess[] = [];
process.on('exit', () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
});

/** Spawns a proxy and waits for the first stdout line, which `pickUrl` reads the URL from. */
function startProxy(
  args: string[],
  pickUrl: (line: string) => string,
  flags: readonly string[] = [],
): Promise<{ child: ChildProcess; url: URL }> {
  const child = spawn(process.execPath, [...proxyFlags, ...flags, ...args], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${args[0]} exited with ${code}`)));
    const lines = createInterface({ input: child.stdout! });
    let first = true;
    lines.on('line', (line) => {
      if (!first) return;
      first = false;
      resolve({ child, url: new URL(pickUrl(line)) });
    });
  });
}

async function stopProxy(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

// ---------------------------------------------------------------- the run

interface StartFigures {
  subject: PipeSubject;
  cpuUsPerRequest: number | undefined;
  requestLegP50: number | undefined;
}

function startsMarkdown(starts: StartFigures[]): string[] {
  if (starts.length === 0) return [];
  const of = (subject: PipeSubject) => starts.find((s) => s.subject === subject);
  const pipe = of('pipe');
  const gateway = of('tokenwire');
  const direct = of('direct');
  const added = (s: StartFigures | undefined) =>
    s?.requestLegP50 === undefined || direct?.requestLegP50 === undefined
      ? undefined
      : s.requestLegP50 - direct.requestLegP50;
  const ratio = (a: number | undefined, b: number | undefined) =>
    a === undefined || b === undefined || b <= 0 ? '–' : `${fmt(a / b)}×`;
  return [
    `Request starts (${startRounds} bursts of 128 one-token streams per subject, the upstream answering at once, subjects alternating): CPU per request, start to end, over all bursts; the request leg's p50 in a burst (client → upstream), median over bursts, and what the proxy adds to direct's.`,
    '',
    '| subject | CPU per one-token request | request leg p50 in a burst of 128 | added to direct |',
    '|---|---|---|---|',
    ...[pipe, gateway].map(
      (s) =>
        `| ${s!.subject} | ${s!.cpuUsPerRequest === undefined ? '–' : `${fmt(s!.cpuUsPerRequest, 0)} µs`} | ${s!.requestLegP50 === undefined ? '–' : `${fmt(s!.requestLegP50)} ms`} | ${added(s) === undefined ? '–' : `+${fmt(added(s)!)} ms`} |`,
    ),
    `| tokenwire ÷ pipe | ${ratio(gateway?.cpuUsPerRequest, pipe?.cpuUsPerRequest)} | ${ratio(gateway?.requestLegP50, pipe?.requestLegP50)} | ${ratio(added(gateway), added(pipe))} |`,
    '',
  ];
}

/** The whole run: the section's Markdown. */
async function run(): Promise<string> {
  const began = monoMs();
  const loadBefore = os.loadavg();
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  const pipe = await startProxy([pipeScript, upstreamUrl], (line) => line.trim());
  const gateway = await startProxy(
    [
      bin,
      'serve',
      '--port',
      '0',
      '--upstream',
      upstreamUrl,
      '--upstream-dialect',
      'openai-chat',
      '--json',
      ...serveArgs,
    ],
    (line) => (JSON.parse(line) as { url: string }).url,
    gatewayFlags,
  );
  // Free sockets are dropped before the servers' 5 s keep-alive timeout, so none is reused as it closes.
  const newAgent = () =>
    new http.Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY, timeout: 4000 });
  const targets: Record<PipeSubject, { url: URL; pid: number | undefined; agent: http.Agent }> = {
    direct: { url: new URL(upstreamUrl), pid: undefined, agent: newAgent() },
    pipe: { url: pipe.url, pid: pipe.child.pid, agent: newAgent() },
    tokenwire: { url: gateway.url, pid: gateway.child.pid, agent: newAgent() },
  };
  const SUBJECTS: readonly PipeSubject[] = ['direct', 'pipe', 'tokenwire'];

  async function runCell(subject: PipeSubject, level: number, round: number): Promise<PipeCell> {
    const target = targets[subject];
    const pid = target.pid;
    const before = pid === undefined ? undefined : procStat(pid);
    let rssBytes = before?.rssBytes ?? 0;
    const sampler =
      pid === undefined
        ? undefined
        : setInterval(() => {
            rssBytes = Math.max(rssBytes, procStat(pid).rssBytes);
          }, 100);
    const sequential = level === 1 ? atOne : 1;
    const streams: PipeStream[] = [];
    await Promise.all(
      Array.from({ length: level }, async (_, client) => {
        for (let s = 0; s < sequential; s++)
          streams.push(
            await runStream(target.url, target.agent, `${subject}-${level}-${round}-${client}-${s}`, chunks),
          );
      }),
    );
    if (sampler !== undefined) clearInterval(sampler);
    let proxy: { cpuUs: number; rssBytes: number } | undefined;
    if (pid !== undefined && before !== undefined) {
      const after = procStat(pid);
      proxy = { cpuUs: after.cpuUs - before.cpuUs, rssBytes: Math.max(rssBytes, after.rssBytes) };
    }
    // At c = 1 a few full streams give a few TTFTs: short streams one at a time add more, after the CPU
    // reading (their per-request CPU would count against few chunks).
    const probes: PipeStream[] = [];
    for (let p = 0; level === 1 && p < probesAtOne; p++)
      probes.push(await runStream(target.url, target.agent, `probe-${subject}-${round}-${p}`, 2));
    return cellFigures(subject, level, round, streams, proxy, probes);
  }

  /**
   * What a request start costs each proxy: bursts of 128 one-token streams (the upstream answers at
   * once), subjects alternating; CPU over all rounds per request (request, two chunks, the end), and the
   * request leg's p50 in each burst (the median over rounds): the c = 128 TTFT is these starts queueing.
   */
  async function measureStarts(): Promise<StartFigures[]> {
    const burst = 128;
    const cpu = { pipe: 0, tokenwire: 0, direct: 0 };
    const legs: Record<PipeSubject, number[]> = { pipe: [], tokenwire: [], direct: [] };
    for (let round = 0; round < startRounds; round++) {
      const order: PipeSubject[] =
        round % 2 === 0 ? ['tokenwire', 'pipe', 'direct'] : ['direct', 'pipe', 'tokenwire'];
      for (const subject of order) {
        const target = targets[subject];
        const before = target.pid === undefined ? undefined : procStat(target.pid).cpuUs;
        const streams = await Promise.all(
          Array.from({ length: burst }, (_, i) =>
            runStream(target.url, target.agent, `start-${subject}-${round}-${i}`, 1),
          ),
        );
        if (target.pid !== undefined && before !== undefined)
          cpu[subject] += procStat(target.pid).cpuUs - before;
        const leg = streams
          .filter((st) => st.receivedAt !== undefined && st.error === undefined)
          .map((st) => st.receivedAt! - st.sentAt)
          .sort((a, b) => a - b);
        if (leg.length > 0) legs[subject].push(leg[Math.floor(leg.length / 2)]!);
      }
    }
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
    return (['pipe', 'tokenwire', 'direct'] as const).map((subject) => ({
      subject,
      cpuUsPerRequest: subject === 'direct' ? undefined : cpu[subject] / (burst * startRounds),
      requestLegP50: median(legs[subject]),
    }));
  }

  // What each process holds before any request (its code and baseline heap), and after the warm-up.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const rssAtStart = { pipe: rssSplit(pipe.child.pid!), tokenwire: rssSplit(gateway.child.pid!) };
  let rssAfterWarm = rssAtStart;
  const cells: PipeCell[] = [];
  let starts: StartFigures[] = [];
  try {
    for (const subject of SUBJECTS) {
      const target = targets[subject];
      let started = 0;
      let failed = 0;
      await Promise.all(
        Array.from({ length: 128 }, async () => {
          while (started < warm) {
            started += 1;
            const s = await runStream(target.url, target.agent, `warm-${subject}-${started}`, 2);
            if (s.error !== undefined) failed += 1;
          }
        }),
      );
      if (failed > 0) log(`warm-up: ${failed} of ${warm} ${subject} streams failed`);
    }
    rssAfterWarm = { pipe: rssSplit(pipe.child.pid!), tokenwire: rssSplit(gateway.child.pid!) };
    log(`warm-up done (${warm} two-chunk streams per subject, ${fmt((monoMs() - began) / 1000, 0)} s)`);
    for (let round = 1; round <= rounds; round++) {
      for (const level of levels) {
        const shift = round % SUBJECTS.length;
        for (const subject of [...SUBJECTS.slice(shift), ...SUBJECTS.slice(0, shift)]) {
          const cell = await runCell(subject, level, round);
          cells.push(cell);
          if (cell.failed > 0)
            log(`${subject} c=${level}: ${cell.failed} streams failed (${cell.firstError})`);
        }
      }
      log(
        `round ${round}/${rounds} done (${fmt((monoMs() - began) / 1000, 0)} s, load ${os.loadavg()[0]!.toFixed(2)})`,
      );
    }
    starts = await measureStarts();
  } finally {
    await Promise.all([stopProxy(pipe.child), stopProxy(gateway.child)]);
    upstream.close();
    upstream.closeAllConnections();
    for (const target of Object.values(targets)) target.agent.destroy();
  }
  const loadAfter = os.loadavg();

  const summary = summarizePipeCells(cells);
  const verdicts = pipeVerdicts(summary);
  const failed = cells.reduce((n, c) => n + c.failed, 0);
  const mismatched = cells.reduce((n, c) => n + c.mismatched, 0);
  const mib = (v: number | undefined) => (v === undefined ? '–' : fmt(v / 2 ** 20, 1));
  const md = [
    `Measured as issue 23's harness did: \`tokenwire serve --upstream URL --upstream-dialect openai-chat\` (defaults unchanged) in its own process; the bare pipe (\`bench/bare-pipe.ts\`: node:http, \`http.request\` on a keep-alive agent, \`pipe\`, nothing else) in its own; the upstream (${chunks} OpenAI chat chunks ${gapMs} ms apart) and the measuring client together in a third. c = ${levels.join(' / ')} streams at once (${atOne} one after another at c = 1, then ${probesAtOne} two-chunk streams one at a time that count towards the TTFT figures only); ${rounds} rounds, subjects interleaved (order rotating), after ${warm} unrecorded two-chunk streams per subject. "Added" = subject − direct in the same round; each figure is the median over the rounds of that round's figure. TTFT is net of the upstream's own wait (request in → first chunk out). CPU per chunk: the proxy's utime+stime (/proc/<pid>/stat, ${1000 / CLK_TCK} ms ticks) over the chunks relayed in the cell; RSS: the proxy's highest RSS sampled every 100 ms during the cell. The verdicts are this bench's, never \`npm test\`'s.`,
    '',
    `Load average (1/5/15 min) before: ${loadBefore.map((l) => l.toFixed(2)).join(' / ')}; after: ${loadAfter.map((l) => l.toFixed(2)).join(' / ')}. Wall time ${fmt((monoMs() - began) / 1000, 0)} s. ${failed} failed streams, ${mismatched} with a chunk count other than the upstream's.`,
    '',
    pipeMarkdown(summary),
    '',
    `RSS before any request (its anonymous part, not mapped files, in brackets): tokenwire ${mib(rssAtStart.tokenwire.rss)} (${mib(rssAtStart.tokenwire.anon)}) MiB, pipe ${mib(rssAtStart.pipe.rss)} (${mib(rssAtStart.pipe.anon)}) MiB; after the warm-up: ${mib(rssAfterWarm.tokenwire.rss)} (${mib(rssAfterWarm.tokenwire.anon)}) and ${mib(rssAfterWarm.pipe.rss)} (${mib(rssAfterWarm.pipe.anon)}) MiB.`,
    '',
    ...startsMarkdown(starts),
    '| target | measured (tokenwire vs pipe) | met |',
    '|---|---|:---:|',
    ...verdicts.map((v) => `| ${v.target} | ${v.measured} | ${v.met ? 'yes' : '**no**'} |`),
    '',
    '<details><summary>Every cell</summary>',
    '',
    '| round | c | subject | streams | net TTFT p50 ms | request leg p50 | response leg p50 | net TTFT p99 ms | chunk delay p99 ms | CPU µs/chunk | RSS MiB | failed |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...cells.map(
      (c) =>
        `| ${c.round} | ${c.level} | ${c.subject} | ${c.streams} | ${fmt(c.netTtftP50)} | ${fmt(c.requestLegP50)} | ${fmt(c.responseLegP50)} | ${fmt(c.netTtftP99)} | ${fmt(c.delayP99)} | ${c.cpuUsPerChunk === undefined ? '–' : fmt(c.cpuUsPerChunk, 0)} | ${mib(c.rssBytes)} | ${c.failed} |`,
    ),
    '',
    '</details>',
  ];
  for (const v of verdicts) log(`${v.met ? 'MET ' : 'MISS'} ${v.target}: ${v.measured}`);
  return md.join('\n');
}

// A failure prints a line in the section instead of failing `npm run bench` (and losing the other sections).
try {
  process.stdout.write(`${await run()}\n`);
} catch (error) {
  log(`failed: ${(error as Error).stack ?? String(error)}`);
  process.stdout.write(`**Failed:** ${(error as Error).message}\n`);
  process.exit(0);
}
