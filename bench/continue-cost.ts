/**
 * Continuation (issue 32): the seam's gap when a replica dies mid-answer, and what continuation costs a
 * stream that never fails.
 *
 * Method
 * - Seam gap: 2 simulator replicas of one model over HTTP on loopback (`createSim` served by
 *   `src/node/serve.ts`, the same seed, so the sibling's answer is the dying one's), `--tps` (2000)
 *   tokens/s, no jitter, the first token at once (`ttftMs: 0`, so the gap is not a model's prefill);
 *   one dies after 8 tokens (`die-after=8`: every stream it serves is cut). One in-process gateway
 *   (`createGateway` + `serve`, undici's upstream fetch, `round-robin`, `continueOnFailure: true`, no
 *   health checks) takes OpenAI chat streams (`max_tokens` 32, temperature 0, tokenwire `complete()`)
 *   one after another; a cut stream cools its replica at once (the pool counts it unreachable), so a
 *   fresh gateway takes over after each continued stream, until `--streams` (200) streams were continued or `--seconds` (30) passed. The gap is each log record's `continuations[0].gapMs`:
 *   from the gateway seeing the cut to the continuation's first token written to the client. Once with
 *   llama.cpp upstreams (`/completion`, the token-exact path) and once with OpenAI chat upstreams (the
 *   assistant-prefill path).
 * - Cost on streams that never fail: 2 healthy replicas (same timing), the gateway in a child process
 *   (this file with `--child`), which holds two gateways in front of them, `continueOnFailure` off and
 *   on (otherwise the defaults: `least-busy`, health checks), served by `serve()`. Cells alternate off and
 *   on in `--pairs` (10) pairs (the order flipping each pair), after an unrecorded warm-up pair; a cell is
 *   `--serial` (60) streams of 4 tokens one after another (TTFT p50, one at a time), then `--requests`
 *   (120) streams of `--tokens` (64) tokens sent by 4 clients (TTFT p50, 4 at once; CPU per chunk: the
 *   child's `process.cpuUsage` across this load over the content chunks the clients received). TTFT is
 *   the client's (`Result.metrics.ttftMs`). "on × off" is the ratio within a pair; the table
 *   gives the median (min–max) over the pairs. Both upstream paths again (llama.cpp and OpenAI chat).
 *
 * stdout: the Markdown body of the RESULTS.md section. Progress on stderr. Flags: `--streams N`,
 * `--seconds S`, `--tps N`, `--pairs N`, `--serial N`, `--requests N`, `--tokens N`, `--quick`.
 * Alone: `node .build/bench/continue-cost.js` (or `npx tsx bench/continue-cost.ts`).
 */

import { type ChildProcess, fork } from 'node:child_process';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { complete } from '../src/client/token-stream.ts';
import type { DialectId } from '../src/dialects/dialect.ts';
import type { Result } from '../src/events/result.ts';
import { type ServedHandler, serve } from '../src/node/serve.ts';
import { createUndiciFetch, loadUndici } from '../src/node/undici-fetch.ts';
import { createGateway } from '../src/server/create-gateway.ts';
import type { RequestLog } from '../src/server/observability/request-log.ts';
import type { Upstream } from '../src/server/upstream/upstream.ts';
import { createSim } from '../src/sim/create-sim.ts';
import { askChild } from './bench-child.ts';
import { fmt, fmtSpread, quantile, spread } from './stats.ts';

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
function flag(name: string, fallback: string): string {
  const at = argv.indexOf(name);
  return at === -1 || argv[at + 1] === undefined ? fallback : argv[at + 1]!;
}
const tps = Number(flag('--tps', '2000'));
const DIE_AFTER = 8;
const PATHS: { path: 'tokens' | 'prefill'; dialect: DialectId; label: string }[] = [
  { path: 'tokens', dialect: 'llamacpp', label: 'token-exact (llama.cpp `/completion` upstreams)' },
  { path: 'prefill', dialect: 'openai-chat', label: 'assistant prefill (OpenAI chat upstreams)' },
];
const simTiming = () => ({ tokensPerSecond: tps, ttftMs: 0, loadMs: 0, jitter: 0 });
const log = (line: string) => console.error(`[continue-cost] ${line}`);

function chatBody(tokens: number, n: number) {
  return {
    model: 'sim',
    stream: true,
    max_tokens: tokens,
    temperature: 0,
    messages: [{ role: 'user', content: `Question ${n % 16}: tell me about the rivers of Europe.` }],
  };
}

async function serveSims(faults: (string | undefined)[]): Promise<ServedHandler[]> {
  const served: ServedHandler[] = [];
  for (const fault of faults) {
    const sim = createSim(
      Object.assign({ models: ['sim'], timing: simTiming() }, fault === undefined ? {} : { faults: fault }),
    );
    served.push(await serve(sim.fetch));
  }
  return served;
}

function upstreamsOf(urls: readonly string[], dialect: DialectId): Upstream[] {
  const fetch = createUndiciFetch();
  return urls.map((url, i) => ({ name: `r${i}`, url, dialects: [dialect], models: ['sim'], fetch }));
}

// ---------------------------------------------------------------------------------------------------
// The child: two gateways (continuation off, on) in front of the given replicas.
if (argv[0] === '--child') {
  const [, dialect, ...urls] = argv;
  await loadUndici();
  const upstreams = upstreamsOf(urls, dialect as DialectId);
  const off = await serve(createGateway({ upstreams, continueOnFailure: false }).fetch);
  const on = await serve(createGateway({ upstreams, continueOnFailure: true }).fetch);
  process.on('message', (message: { sample?: boolean; exit?: boolean; heap?: boolean }) => {
    if (message.exit === true) process.exit(0);
    if (message.sample === true) process.send?.({ cpu: process.cpuUsage() });
    if (message.heap === true) {
      globalThis.gc?.();
      globalThis.gc?.();
      process.send?.({ heapUsed: process.memoryUsage().heapUsed });
    }
  });
  process.send?.({ ready: true, off: off.url, on: on.url });
} else {
  await main();
}

// ---------------------------------------------------------------------------------------------------
// The seam's gap.

interface GapRun {
  gaps: number[];
  /** The same streams' own TTFT at the gateway (log `ttftMs`): what a fresh request to a replica takes. */
  ttfts: number[];
  /** The continuation paths the log records name. */
  paths: string;
  continued: number;
  notContinued: number;
  streams: number;
  gateways: number;
  incomplete: number;
  seconds: number;
}

/**
 * A cut stream cools its replica at once (call-outcome.ts: `unreachable`), and `createGateway` takes no
 * health options: so each gateway here takes streams one after another until one was continued, and a
 * fresh one takes over, until `want` streams were continued or the time is up. The upstream fetch (its
 * connections) is shared.
 */
async function seamGap(dialect: DialectId, want: number, seconds: number): Promise<GapRun> {
  const sims = await serveSims([`die-after=${DIE_AFTER}`, undefined]);
  const upstreams = upstreamsOf(
    sims.map((s) => s.url),
    dialect,
  );
  const logs: RequestLog[] = [];
  const continuedSoFar = () => logs.filter((l) => l.continuations?.[0]?.result === 'continued').length;
  let streams = 0;
  let incomplete = 0;
  let gateways = 0;
  const started = performance.now();
  const deadline = started + seconds * 1000;
  while (performance.now() < deadline && continuedSoFar() < want) {
    const gateway = createGateway({
      upstreams,
      balance: 'round-robin',
      healthIntervalMs: 0,
      continueOnFailure: true,
      onLog: (record) => logs.push(record),
    });
    const served = await serve(gateway.fetch);
    gateways += 1;
    const before = continuedSoFar();
    const from = logs.length;
    // Round-robin: the first or the second stream starts on the dying replica.
    for (let i = 0; i < 3 && continuedSoFar() === before; i++) {
      const result = await complete({
        url: `${served.url}/v1/chat/completions`,
        body: chatBody(32, streams),
      });
      streams += 1;
      if (!result.complete) incomplete += 1;
    }
    await served.close();
    await gateway.close();
    if (logs.length === from) throw new Error('a gateway logged nothing');
  }
  const took = (performance.now() - started) / 1000;
  for (const s of sims) await s.close();
  const firsts = logs.map((l) => l.continuations?.[0]).filter((c) => c !== undefined);
  const continued = firsts.filter((c) => c.result === 'continued');
  return {
    gaps: continued.map((c) => c.gapMs).filter((g) => g !== undefined),
    ttfts: logs
      .filter((l) => l.continuations?.[0]?.result === 'continued')
      .map((l) => l.ttftMs)
      .filter((t) => t !== undefined),
    paths: [...new Set(continued.map((c) => c.path))].join(', '),
    continued: continued.length,
    notContinued: firsts.length - continued.length,
    streams,
    gateways,
    incomplete,
    seconds: took,
  };
}

// ---------------------------------------------------------------------------------------------------
// The cost on streams that never fail.

/** Forks this file as the gateway process (under tsx too: the child gets this process's loader flags). */
function startChild(
  dialect: DialectId,
  urls: string[],
): Promise<{ child: ChildProcess; off: string; on: string }> {
  const child = fork(fileURLToPath(import.meta.url), ['--child', dialect, ...urls], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    execArgv: [...process.execArgv, '--expose-gc'],
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`gateway child exited with ${code}`)));
    child.on('message', (m: { ready?: boolean; off?: string; on?: string }) => {
      if (m.ready === true && m.off !== undefined && m.on !== undefined)
        resolve({ child, off: m.off, on: m.on });
    });
  });
}

interface CostCell {
  /** TTFT p50 of short streams sent one at a time. */
  serialTtftP50Ms: number;
  /** TTFT p50 of the cell's load (4 streams at once). */
  ttftP50Ms: number;
  cpuPerChunkUs: number;
  chunks: number;
  incomplete: number;
}

async function costCell(
  child: ChildProcess,
  url: string,
  requests: number,
  tokens: number,
  serialRequests: number,
): Promise<CostCell> {
  // TTFT one at a time first (short streams), so no other stream of the cell shares the gateway.
  const serial: number[] = [];
  for (let i = 0; i < serialRequests; i++) {
    const result = await complete({ url: `${url}/v1/chat/completions`, body: chatBody(4, i) });
    if (result.metrics.ttftMs !== undefined) serial.push(result.metrics.ttftMs);
  }
  const results: Result[] = [];
  let next = 0;
  const before = (await askChild<{ cpu: NodeJS.CpuUsage }>(child, { sample: true }, 'cpu')).cpu;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < requests) {
        const n = next++;
        results.push(await complete({ url: `${url}/v1/chat/completions`, body: chatBody(tokens, n) }));
      }
    }),
  );
  const after = (await askChild<{ cpu: NodeJS.CpuUsage }>(child, { sample: true }, 'cpu')).cpu;
  const chunks = results.reduce((a, r) => a + r.metrics.chunkCount, 0);
  const ttft = results.map((r) => r.metrics.ttftMs).filter((t) => t !== undefined);
  return {
    serialTtftP50Ms: quantile(serial, 0.5),
    ttftP50Ms: quantile(ttft, 0.5),
    cpuPerChunkUs: (after.user - before.user + after.system - before.system) / chunks,
    chunks,
    incomplete: results.filter((r) => !r.complete).length,
  };
}

async function neverFails(
  dialect: DialectId,
  pairs: number,
  requests: number,
  tokens: number,
  serialRequests: number,
) {
  const sims = await serveSims([undefined, undefined]);
  const { child, off, on } = await startChild(
    dialect,
    sims.map((s) => s.url),
  );
  await costCell(child, off, Math.ceil(requests / 4), tokens, serialRequests);
  await costCell(child, on, Math.ceil(requests / 4), tokens, serialRequests);
  const cells: { off: CostCell; on: CostCell }[] = [];
  for (let pair = 0; pair < pairs; pair++) {
    let offCell: CostCell;
    let onCell: CostCell;
    if (pair % 2 === 0) {
      offCell = await costCell(child, off, requests, tokens, serialRequests);
      onCell = await costCell(child, on, requests, tokens, serialRequests);
    } else {
      onCell = await costCell(child, on, requests, tokens, serialRequests);
      offCell = await costCell(child, off, requests, tokens, serialRequests);
    }
    cells.push({ off: offCell, on: onCell });
    log(
      `${dialect} pair ${pair + 1}: TTFT p50 one at a time off ${fmt(offCell.serialTtftP50Ms)} / on ${fmt(onCell.serialTtftP50Ms)} ms, 4 at once off ${fmt(offCell.ttftP50Ms)} / on ${fmt(onCell.ttftP50Ms)} ms, CPU per chunk off ${fmt(offCell.cpuPerChunkUs, 1)} / on ${fmt(onCell.cpuPerChunkUs, 1)} µs`,
    );
  }
  child.removeAllListeners('exit');
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.send({ exit: true });
  await exited;
  for (const s of sims) await s.close();
  return cells;
}

// ---------------------------------------------------------------------------------------------------
// Memory: what a stream that may be continued keeps while it is open mid-answer.

/**
 * The gateway child's heap per open stream mid-answer (each has its first tokens and waits for more),
 * continuation off and on, `pairs` interleaved pairs: the streams' prompts are `promptBytes` long (a
 * stream that may be continued keeps its request: the prompt). Slow replicas (1 token/s) keep them open.
 */
async function heapPerStream(dialect: DialectId, pairs: number, streams: number, promptBytes: number) {
  const sims: ServedHandler[] = [];
  for (let i = 0; i < 2; i++) {
    const sim = createSim({
      models: ['sim'],
      timing: { tokensPerSecond: 1, ttftMs: 0, loadMs: 0, jitter: 0 },
    });
    sims.push(await serve(sim.fetch));
  }
  const { child, off, on } = await startChild(
    dialect,
    sims.map((s) => s.url),
  );
  const prompt = 'The river runs to the sea. '.repeat(Math.ceil(promptBytes / 27)).slice(0, promptBytes);
  const cell = async (url: string): Promise<number> => {
    const before = (await askChild<{ heapUsed: number }>(child, { heap: true }, 'heapUsed')).heapUsed;
    const aborts: AbortController[] = [];
    await Promise.all(
      Array.from({ length: streams }, async (_, i) => {
        const abort = new AbortController();
        aborts.push(abort);
        const response = await fetch(`${url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            model: 'sim',
            stream: true,
            max_tokens: 500,
            messages: [{ role: 'user', content: `${i} ${prompt}` }],
          }),
          signal: abort.signal,
        });
        // Read until the first token arrived: the stream is mid-answer from then on.
        const reader = response.body!.getReader();
        let seen = '';
        while (!seen.includes('"content":"') || !/"content":"[^"]/.test(seen)) {
          const read = await reader.read();
          if (read.done) break;
          seen += new TextDecoder().decode(read.value);
        }
      }),
    );
    const held = (await askChild<{ heapUsed: number }>(child, { heap: true }, 'heapUsed')).heapUsed;
    for (const abort of aborts) abort.abort();
    await new Promise((resolve) => setTimeout(resolve, 300));
    return (held - before) / streams;
  };
  await cell(off);
  await cell(on);
  const results: { off: number; on: number }[] = [];
  for (let pair = 0; pair < pairs; pair++) {
    const first = pair % 2 === 0 ? off : on;
    const a = await cell(first);
    const b = await cell(first === off ? on : off);
    results.push(first === off ? { off: a, on: b } : { off: b, on: a });
    log(
      `${dialect} heap per open stream, pair ${pair + 1}: off ${fmt(results.at(-1)!.off / 1024, 1)} KiB, on ${fmt(results.at(-1)!.on / 1024, 1)} KiB`,
    );
  }
  child.removeAllListeners('exit');
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.send({ exit: true });
  await exited;
  for (const s of sims) await s.close();
  return results;
}

async function main(): Promise<void> {
  const want = Number(flag('--streams', quick ? '50' : '200'));
  const seconds = Number(flag('--seconds', quick ? '10' : '30'));
  const pairs = Number(flag('--pairs', quick ? '2' : '10'));
  const requests = Number(flag('--requests', quick ? '60' : '120'));
  const tokens = Number(flag('--tokens', '64'));
  const serialRequests = Number(flag('--serial', quick ? '20' : '60'));
  await loadUndici();
  const started = performance.now();
  const loadBefore = os.loadavg()[0]!;

  const gapRows: string[] = [];
  for (const p of PATHS) {
    const run = await seamGap(p.dialect, want, seconds);
    log(
      `seam gap, ${p.path}: ${run.continued} continued (path ${run.paths}) of ${run.streams} streams (${run.gateways} gateways) in ${fmt(run.seconds, 1)} s, p50 ${fmt(quantile(run.gaps, 0.5))} ms, p99 ${fmt(quantile(run.gaps, 0.99))} ms`,
    );
    gapRows.push(
      `| ${p.label} | \`${run.paths}\` | ${run.continued} | ${fmt(quantile(run.gaps, 0.5))} | ${fmt(quantile(run.gaps, 0.9))} | ${fmt(quantile(run.gaps, 0.99))} | ${fmt(Math.max(...run.gaps))} | ${fmt(quantile(run.ttfts, 0.5))} | ${fmt(quantile(run.ttfts, 0.99))} | ${run.notContinued} | ${run.incomplete} |`,
    );
  }

  const costRows: string[] = [];
  for (const p of PATHS) {
    const cells = await neverFails(p.dialect, pairs, requests, tokens, serialRequests);
    const added = (key: 'serialTtftP50Ms' | 'ttftP50Ms') =>
      spread(cells.map((c) => (c.on[key] - c.off[key]) * 1000));
    const ratio = (key: 'serialTtftP50Ms' | 'ttftP50Ms' | 'cpuPerChunkUs') =>
      spread(cells.map((c) => c.on[key] / c.off[key]));
    const of = (side: 'off' | 'on', key: 'serialTtftP50Ms' | 'ttftP50Ms' | 'cpuPerChunkUs') =>
      spread(cells.map((c) => c[side][key]));
    const incomplete = cells.reduce((a, c) => a + c.off.incomplete + c.on.incomplete, 0);
    costRows.push(
      `| ${p.label} | TTFT p50, one at a time (ms) | ${fmtSpread(of('off', 'serialTtftP50Ms'))} | ${fmtSpread(of('on', 'serialTtftP50Ms'))} | ${fmtSpread(added('serialTtftP50Ms'), 0, ' µs')} | ${fmtSpread(ratio('serialTtftP50Ms'), 2, '×')} | ${incomplete} |`,
      `| | TTFT p50, 4 at once (ms) | ${fmtSpread(of('off', 'ttftP50Ms'))} | ${fmtSpread(of('on', 'ttftP50Ms'))} | ${fmtSpread(added('ttftP50Ms'), 0, ' µs')} | ${fmtSpread(ratio('ttftP50Ms'), 2, '×')} | |`,
      `| | gateway CPU per chunk (µs) | ${fmtSpread(of('off', 'cpuPerChunkUs'), 1)} | ${fmtSpread(of('on', 'cpuPerChunkUs'), 1)} | ${fmtSpread(spread(cells.map((c) => c.on.cpuPerChunkUs - c.off.cpuPerChunkUs)), 1, ' µs')} | ${fmtSpread(ratio('cpuPerChunkUs'), 2, '×')} | |`,
    );
  }
  const memoryRows: string[] = [];
  const heapStreams = Number(flag('--heap-streams', quick ? '50' : '200'));
  const heapPairs = Number(flag('--heap-pairs', quick ? '1' : '3'));
  for (const promptBytes of [0, 8192]) {
    const cells = await heapPerStream('openai-chat', heapPairs, heapStreams, promptBytes);
    const kib = (side: 'off' | 'on') => spread(cells.map((c) => c[side] / 1024));
    memoryRows.push(
      `| ${promptBytes === 0 ? 'a short prompt' : `a prompt of ${promptBytes / 1024} KiB`} | ${fmtSpread(kib('off'), 1)} | ${fmtSpread(kib('on'), 1)} | ${fmtSpread(spread(cells.map((c) => (c.on - c.off) / 1024)), 1)} |`,
    );
  }
  const took = (performance.now() - started) / 1000;
  log(`done in ${fmt(took, 0)} s`);

  console.log(
    [
      `2 simulator replicas of one model over HTTP on loopback, the same seed, ${tps} tokens/s (a token every ${fmt(1000 / tps)} ms), no jitter, the first token at once (\`ttftMs: 0\`: no prefill in the figures). Gateways: \`createGateway\` + \`serve\`, undici's upstream fetch.`,
      '',
      `**The seam's gap.** One replica dies after ${DIE_AFTER} tokens (\`die-after=${DIE_AFTER}\`: every stream it serves is cut), the other is healthy; the gateway in process, \`round-robin\`, \`continueOnFailure: true\`, no health checks. A cut stream puts its replica out of rotation at once (the pool counts it unreachable and cools it; \`createGateway\` takes no health options), so each gateway takes OpenAI chat streams one after another (32 tokens, temperature 0, tokenwire \`complete()\`) until one was continued (the first or second: round-robin) and a fresh gateway takes over (the upstream connections shared), until ${want} streams were continued or ${seconds} s passed: every gap is a gateway's first continuation. The gap is each continued stream's \`continuations[0].gapMs\` in the request log (also \`tokenwire_continuation_gap_seconds\`): from the gateway seeing the cut to the continuation's first token written to the client; it includes the continuation request to the sibling (token path: the first attempt's prompt followed by the generated token ids, a mixed \`/completion\` prompt; prefill path: the text so far as the assistant's last message) and its first token over loopback, no prefill. Beside it, the same streams' own TTFT at the gateway (the log's \`ttftMs\`, the first attempt: a fresh request to a replica in the same run). ms.`,
      '',
      '| upstreams | logged path | continued | gap p50 | gap p90 | gap p99 | max | own TTFT p50 (first attempt) | TTFT p99 | not continued | client incomplete |',
      '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
      ...gapRows,
      '',
      `**What continuation costs a stream that never fails.** Both replicas healthy; the gateway in its own process holds two gateways in front of them, \`continueOnFailure\` off and on (else the defaults: \`least-busy\`, health checks). ${pairs} pairs of cells, off and on alternating (the order flipping each pair) after an unrecorded warm-up; a cell is ${serialRequests} streams of 4 tokens one after another (TTFT p50, one at a time), then ${requests} OpenAI chat streams of ${tokens} tokens from 4 clients (TTFT p50, 4 at once; CPU per chunk: the gateway process's \`process.cpuUsage\` across this load over the content chunks the clients received). TTFT as the client measured it (\`Result.metrics.ttftMs\`). "on − off" and "on × off" are within a pair; median (min–max) over the pairs.`,
      '',
      '| upstreams | figure | off | on | on − off | on × off | incomplete |',
      '|---|---|---:|---:|---:|---:|---:|',
      ...costRows,
      '',
      `**What it keeps while a stream is open.** A stream that may be continued keeps its request (the prompt) and the text so far until it ends; without continuation the request goes at the stream's first event. The gateway child's heap (after two full GCs) per stream open mid-answer (its first token read, the next one a second away: replicas at 1 token/s), ${heapStreams} streams, OpenAI chat upstreams, off and on alternating in ${heapPairs} pairs; KiB, median (min–max).`,
      '',
      '| prompt | off | on | on − off |',
      '|---|---:|---:|---:|',
      ...memoryRows,
      '',
      `Run on ${new Date().toISOString().slice(0, 16)} UTC in ${fmt(took, 0)} s; load average (1 min) before ${loadBefore.toFixed(2)}, after ${os.loadavg()[0]!.toFixed(2)} on ${os.availableParallelism()} CPUs.`,
    ].join('\n'),
  );
}
