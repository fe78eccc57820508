/**
 * Gateway overhead on loopback: the same simulator upstream reached directly, through a bare node:http
 * pass-through proxy (the baseline), and through the tokenwire gateway (same dialect, and translated:
 * the openai-chat upstream served as ollama-chat and as tgi), at several concurrency levels.
 * Client (this process), upstream and proxies run in separate processes.
 *
 * Method
 * - TTFT: from just before the request is written to the arrival of the first content frame. The
 *   simulator's own time to the first token (20 ms ±10 % jitter, plus its queueing under load) varies
 *   from stream to stream by more than a proxy adds, so each stream's TTFT is also taken net of it: the
 *   upstream stamps when the request reached it and when the first content frame left it, and net TTFT
 *   = TTFT - (first frame sent - request received). "Added" TTFT is a route's net TTFT minus the direct
 *   route's at the same level, in the same run (p50 from p50s, p99 from p99s).
 * - Per-chunk delivery delay: the upstream process stamps the moment each content frame leaves the
 *   simulator (keyed by `x-request-id`, which the gateway forwards); the client stamps the read that
 *   delivered it. Both use the machine-wide monotonic clock, so delay_k = arrival_k - sent_k needs no
 *   clock sync and no marker in the payload; frames are matched by their index among content frames
 *   (a translated stream has the same content frames in the same order). "Added" again subtracts the
 *   direct route's distribution.
 * - CPU per chunk: process.cpuUsage() of the proxy process across a cell, over the content chunks the
 *   upstream sent in that cell.
 * - RSS per open idle stream: 1000 streams held open before their first token (the simulator's `ttft`
 *   fault), proxy RSS (after a full GC) minus its RSS before, over 1000; on the bare and same-dialect
 *   routes also with an 8 KiB longer prompt (heap per stream: does a stream keep its request?).
 * Rounds interleave the routes (the order rotates every round); figures pool the rounds. Before the
 * first round every route runs 2000 short streams (`--warm N`), so the proxies' per-request code is
 * JIT-optimized, as in a gateway that has been serving for a while.
 */
import type { ChildProcess } from 'node:child_process';
import type http from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { askChild, type Sample, startChild, stopChild } from './bench-child.ts';
import { gatewayMarkdown } from './gateway-markdown.ts';
import type { CellResult, GatewayReport } from './gateway-report.ts';
import { ROUTES, type Route, type Via } from './gateway-routes.ts';
import { newAgent, openStream, type StreamRecord } from './open-stream.ts';
import { fmt, median, spread } from './stats.ts';

export interface GatewayBenchOptions {
  levels?: readonly number[] | undefined;
  rounds?: number | undefined;
  maxTokens?: number | undefined;
  /** Streams run one after another per client at level 1 (more TTFT samples). */
  sequentialAtOne?: number | undefined;
  /** Short streams per route before the first round, so the proxies' code is optimized (default 2000). */
  warmStreams?: number | undefined;
  /** Idle memory is also measured with this much more prompt (bare and gw-openai; default 8192; 0 = no). */
  idlePromptBytes?: number | undefined;
  idleStreams?: number | undefined;
  /** Fresh proxy processes per route for the idle-memory figure (default 3; the median counts). */
  idleRepeats?: number | undefined;
  /** Only these routes (ids); `direct` is always run, as every "added" figure needs it. */
  routes?: readonly string[] | undefined;
  /** Write a heap snapshot of each proxy holding its idle streams here (diagnosis). */
  snapshotDir?: string | undefined;
  /** Extra node flags for the proxy processes (e.g. `--cpu-prof`). */
  proxyFlags?: readonly string[] | undefined;
  log?: ((line: string) => void) | undefined;
}

export async function runGatewayBench(options: GatewayBenchOptions = {}): Promise<GatewayReport> {
  const began = Date.now();
  const levels = [...(options.levels ?? [1, 32, 128, 1000])];
  const rounds = options.rounds ?? 5;
  const maxTokens = options.maxTokens ?? 24;
  // 1000 streams of 24 tokens saturate the two cores for many seconds per cell; shorter streams keep
  // the level (connections, TTFT under load) within the time budget.
  const maxTokensAt1000 = Math.min(maxTokens, 12);
  const sequentialAtOne = options.sequentialAtOne ?? 12;
  const warmStreams = options.warmStreams ?? 2000;
  const idlePromptBytes = options.idlePromptBytes ?? 8192;
  const idleStreams = options.idleStreams ?? 1000;
  const idleRepeats = options.idleRepeats ?? 3;
  const tokensPerSecond = 50;
  const log = options.log ?? (() => {});

  const upstream = await startChild('gateway-upstream.js', [], { BENCH_TPS: String(tokensPerSecond) });
  const bare = await startChild('gateway-proxy.js', ['bare', upstream.url], {}, options.proxyFlags);
  const gateway = await startChild('gateway-proxy.js', ['gateway', upstream.url], {}, options.proxyFlags);
  const children = [upstream.child, bare.child, gateway.child];
  const via: Record<Via, { url: URL; child: ChildProcess | undefined; agent: http.Agent }> = {
    // Free sockets are dropped before the servers' 5 s keep-alive timeout, so none is reused as it closes.
    direct: { url: new URL(upstream.url), child: undefined, agent: newAgent() },
    bare: { url: new URL(bare.url), child: bare.child, agent: newAgent() },
    gateway: { url: new URL(gateway.url), child: gateway.child, agent: newAgent() },
  };
  const cells: CellResult[] = [];
  const only = options.routes;
  const routes = ROUTES.filter((r) => only === undefined || r.id === 'direct' || only.includes(r.id));
  try {
    const runCell = async (route: Route, level: number, round: number): Promise<CellResult> => {
      const target = via[route.via];
      const sequential = level === 1 ? sequentialAtOne : 1;
      const before =
        target.child === undefined
          ? undefined
          : await askChild<Sample>(target.child, { sample: true }, 'cpu');
      const records: StreamRecord[] = [];
      await Promise.all(
        Array.from({ length: level }, async (_, client) => {
          for (let s = 0; s < sequential; s++) {
            const id = `${route.id}-${level}-${round}-${client}-${s}`;
            const tokens = level >= 1000 ? maxTokensAt1000 : maxTokens;
            records.push(await openStream(target.url, route, id, tokens, target.agent).done);
          }
        }),
      );
      const after =
        target.child === undefined
          ? undefined
          : await askChild<Sample>(target.child, { sample: true }, 'cpu');
      const { logs } = await askChild<{ logs: Record<string, { received: number; sent: number[] }> }>(
        upstream.child,
        { take: true },
        'logs',
      );
      const cell: CellResult = {
        route: route.id,
        level,
        round,
        ttftMs: [],
        netTtftMs: [],
        requestLegMs: [],
        responseLegMs: [],
        delayMs: [],
        cpuUsPerChunk: undefined,
        chunks: 0,
        streams: records.length,
        failed: 0,
        mismatched: 0,
      };
      for (const record of records) {
        const log = logs[record.id];
        const sent = log?.sent ?? [];
        cell.chunks += sent.length;
        if (record.error !== undefined) {
          cell.failed += 1;
          cell.firstError ??= record.error;
          continue;
        }
        if (record.arrivals.length > 0) {
          const ttft = record.arrivals[0]! - record.sentAt;
          cell.ttftMs.push(ttft);
          if (log !== undefined && sent.length > 0) {
            cell.netTtftMs.push(ttft - (sent[0]! - log.received));
            cell.requestLegMs.push(log.received - record.sentAt);
            cell.responseLegMs.push(record.arrivals[0]! - sent[0]!);
          }
        }
        if (sent.length !== record.arrivals.length) cell.mismatched += 1;
        const n = Math.min(sent.length, record.arrivals.length);
        for (let k = 0; k < n; k++) cell.delayMs.push(record.arrivals[k]! - sent[k]!);
      }
      if (before !== undefined && after !== undefined && cell.chunks > 0) {
        const us = after.cpu.user + after.cpu.system - before.cpu.user - before.cpu.system;
        cell.cpuUsPerChunk = us / cell.chunks;
      }
      return cell;
    };

    // Warm-up, not recorded. A running gateway is warm: its per-request code is optimized by the JIT.
    // V8 optimizes a function after it has run a budget of bytecode that grows with the function's size,
    // so code run once per request needs hundreds to a few thousand requests: `--trace-opt` in the
    // gateway showed none of the request path (serve's handler, the guard, the gateway's request
    // handling, the client's run, the upstream fetch) optimized after the ~100 streams the warm-up had
    // before, and nearly all of it after 2000 short streams more. Without it, level 1 measured the
    // interpreter: the gateway's added TTFT there was 0.95–1.29 ms cold against 0.81–0.96 ms warm.
    // Each route gets the same: pools opened by 3 cells of 32 streams, then `warmStreams` 2-token streams
    // 32 at a time (the gateway process sees them once per gateway route).
    for (const route of routes) for (let i = 0; i < 3; i++) await runCell(route, 32, 0);
    for (const route of routes) {
      const target = via[route.via];
      let started = 0;
      await Promise.all(
        Array.from({ length: 32 }, async () => {
          while (started < warmStreams) {
            started += 1;
            await openStream(target.url, route, `warm-${route.id}-${started}`, 2, target.agent).done;
          }
        }),
      );
    }
    // The warm-up's streams are in the upstream's log: drop them, as every cell takes only its own.
    await askChild(upstream.child, { take: true }, 'logs');
    log(
      `warm-up done (${warmStreams} short streams per route, ${((Date.now() - began) / 1000).toFixed(0)} s)`,
    );
    for (let round = 1; round <= rounds; round++) {
      for (const level of levels) {
        const shift = round % routes.length;
        const order = [...routes.slice(shift), ...routes.slice(0, shift)];
        for (const route of order) cells.push(await runCell(route, level, round));
      }
      log(`gateway round ${round}/${rounds} done (${((Date.now() - began) / 1000).toFixed(0)} s)`);
    }

    // Idle memory, each route in a fresh proxy process (a process that relayed 1000 active streams
    // keeps that memory, which would hide what idle streams cost). RSS moves by several KiB per stream
    // from one process to the next (which pages the allocators happen to keep), so each route is
    // measured `idleRepeats` times, routes interleaved, and the median is what counts.
    // Also with a long prompt (`idlePromptBytes`, openai-chat routes): what a stream keeps of its request.
    const idleVariants = routes
      .filter((route) => route.via !== 'direct')
      .flatMap((route) =>
        idlePromptBytes > 0 && (route.id === 'bare' || route.id === 'gw-openai')
          ? [
              { route, promptBytes: 0 },
              { route, promptBytes: idlePromptBytes },
            ]
          : [{ route, promptBytes: 0 }],
      );
    const idleSamples = new Map<
      (typeof idleVariants)[number],
      { rss: number[]; heap: number[]; opened: number[] }
    >(idleVariants.map((variant) => [variant, { rss: [], heap: [], opened: [] }]));
    for (let repeat = 0; idleStreams > 0 && repeat < idleRepeats; repeat++) {
      for (const variant of idleVariants) {
        const { route, promptBytes } = variant;
        const one = await measureIdle(
          route,
          upstream.url,
          idleStreams,
          maxTokens,
          options.snapshotDir,
          promptBytes,
        );
        const samples = idleSamples.get(variant)!;
        samples.rss.push(one.rssPerStreamBytes);
        samples.heap.push(one.heapPerStreamBytes);
        samples.opened.push(one.opened);
        log(
          `idle ${route.id}${promptBytes > 0 ? `, ${promptBytes}-byte prompt` : ''} (${repeat + 1}/${idleRepeats}): ${fmt(one.rssPerStreamBytes / 1024, 1)} KiB RSS, ${fmt(one.heapPerStreamBytes / 1024, 1)} KiB heap per stream (${one.opened} open)`,
        );
        await delay(500);
        await askChild(upstream.child, { take: true }, 'logs');
      }
    }
    const idle: GatewayReport['idle'] = [...idleSamples]
      .filter(([, samples]) => samples.rss.length > 0)
      .map(([variant, samples]) => ({
        route: variant.route.id,
        promptBytes: variant.promptBytes,
        streams: idleStreams,
        opened: Math.min(...samples.opened),
        rssPerStreamBytes: median(samples.rss),
        heapPerStreamBytes: median(samples.heap),
        rss: spread(samples.rss),
        heap: spread(samples.heap),
      }));
    return {
      levels,
      sequentialAtOne,
      warmStreams,
      rounds,
      maxTokens,
      tokensPerSecond,
      routes: routes.map((r) => r.id),
      cells,
      idleRepeats,
      idle,
      wallSeconds: (Date.now() - began) / 1000,
    };
  } finally {
    for (const target of Object.values(via)) target.agent.destroy();
    await Promise.all(children.map(stopChild));
  }
}

/** One fresh proxy process holding `streams` idle streams: RSS and heap per stream after a full GC. */
async function measureIdle(
  route: Route,
  upstreamUrl: string,
  streams: number,
  maxTokens: number,
  snapshotDir: string | undefined,
  promptBytes: number,
): Promise<{ rssPerStreamBytes: number; heapPerStreamBytes: number; opened: number }> {
  const fresh = await startChild('gateway-proxy.js', [route.via, upstreamUrl]);
  const agent = newAgent();
  try {
    const url = new URL(fresh.url);
    for (let i = 0; i < 4; i++) {
      await Promise.all(
        Array.from(
          { length: 10 },
          (_, j) => openStream(url, route, `warm-${route.id}-${i}-${j}`, 2, agent).done,
        ),
      );
    }
    const base = await askChild<Sample>(fresh.child, { gc: true }, 'rss');
    const open = Array.from({ length: streams }, (_, i) =>
      openStream(url, route, `idle-${route.id}-${i}`, maxTokens, agent, 'ttft=60000', promptBytes),
    );
    await Promise.all(open.map((s) => s.headers));
    await delay(1000);
    const held = await askChild<Sample>(fresh.child, { gc: true }, 'rss');
    if (snapshotDir !== undefined) {
      const name = promptBytes > 0 ? `idle-${route.id}-prompt${promptBytes}` : `idle-${route.id}`;
      await askChild(fresh.child, { snapshot: `${snapshotDir}/${name}.heapsnapshot` }, 'snapshotFile');
    }
    const opened = open.filter((s) => s.isOpen()).length;
    for (const s of open) s.destroy();
    await Promise.all(open.map((s) => s.done));
    return {
      rssPerStreamBytes: (held.rss - base.rss) / streams,
      heapPerStreamBytes: (held.heapUsed - base.heapUsed) / streams,
      opened,
    };
  } finally {
    agent.destroy();
    await stopChild(fresh.child);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const argv = process.argv.slice(2);
  const flag = (name: string): string | undefined => {
    const at = argv.indexOf(name);
    return at === -1 ? undefined : argv[at + 1];
  };
  const levels = flag('--levels');
  const rounds = flag('--rounds');
  const report = await runGatewayBench({
    levels: levels
      ?.split(',')
      .map(Number)
      .filter((n) => n > 0),
    rounds: rounds === undefined ? undefined : Number(rounds),
    idleStreams: flag('--idle') === undefined ? undefined : Number(flag('--idle')),
    idleRepeats: flag('--idle-repeats') === undefined ? undefined : Number(flag('--idle-repeats')),
    warmStreams: flag('--warm') === undefined ? undefined : Number(flag('--warm')),
    idlePromptBytes:
      flag('--idle-prompt-bytes') === undefined ? undefined : Number(flag('--idle-prompt-bytes')),
    routes: flag('--routes')?.split(','),
    snapshotDir: flag('--heap-snapshot-dir'),
    // Node flags for both proxy processes (diagnosis: `--proxy-flags "--trace-gc"`), and a CPU profile.
    proxyFlags: [
      ...(flag('--proxy-flags')
        ?.split(' ')
        .filter((f) => f !== '') ?? []),
      ...(flag('--cpu-prof-dir') === undefined
        ? []
        : ['--cpu-prof', `--cpu-prof-dir=${flag('--cpu-prof-dir')}`]),
    ],
    log: (line) => console.error(line),
  });
  if (argv.includes('--json')) process.stdout.write(JSON.stringify(report));
  else process.stdout.write(`${gatewayMarkdown(report)}\n`);
}
