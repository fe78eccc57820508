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
import { type ChildProcess, fork } from 'node:child_process';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { fmt, fmtSpread, median, quantile, type Spread, spread } from './stats.ts';

const here = fileURLToPath(new URL('.', import.meta.url));

/** Milliseconds on the machine-wide monotonic clock (the upstream process stamps with the same). */
function monoMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** Text for longer prompts in the idle-memory measurement. */
const PROMPT_FILLER = 'The river bends past the old mill, where the water runs slow and green. ';

type Via = 'direct' | 'bare' | 'gateway';

interface Route {
  id: string;
  label: string;
  via: Via;
  path: string;
  framing: 'sse' | 'ndjson';
  body(id: string, maxTokens: number): Record<string, unknown>;
  /** Does this payload carry answer text? */
  content(payload: Record<string, unknown>): boolean;
}

interface OpenAiChunk {
  choices?: { delta?: { content?: unknown } }[];
}

const openAiBody = (id: string, maxTokens: number) => ({
  model: 'sim',
  messages: [{ role: 'user', content: `Tell me about rivers (${id}).` }],
  max_tokens: maxTokens,
  stream: true,
});
const openAiContent = (p: Record<string, unknown>) => {
  const content = (p as OpenAiChunk).choices?.[0]?.delta?.content;
  return typeof content === 'string' && content !== '';
};

export const ROUTES: readonly Route[] = [
  {
    id: 'direct',
    label: 'direct (no proxy)',
    via: 'direct',
    path: '/v1/chat/completions',
    framing: 'sse',
    body: openAiBody,
    content: openAiContent,
  },
  {
    id: 'bare',
    label: 'bare node:http proxy',
    via: 'bare',
    path: '/v1/chat/completions',
    framing: 'sse',
    body: openAiBody,
    content: openAiContent,
  },
  {
    id: 'gw-openai',
    label: 'gateway openai-chat → openai-chat',
    via: 'gateway',
    path: '/v1/chat/completions',
    framing: 'sse',
    body: openAiBody,
    content: openAiContent,
  },
  {
    id: 'gw-ollama',
    label: 'gateway ollama-chat → openai-chat',
    via: 'gateway',
    path: '/api/chat',
    framing: 'ndjson',
    body: (id, maxTokens) => ({
      model: 'sim',
      messages: [{ role: 'user', content: `Tell me about rivers (${id}).` }],
      stream: true,
      options: { num_predict: maxTokens },
    }),
    content: (p) => {
      const message = p.message as { content?: unknown } | undefined;
      return typeof message?.content === 'string' && message.content !== '';
    },
  },
  {
    id: 'gw-messages',
    label: 'gateway anthropic-messages → openai-chat',
    via: 'gateway',
    path: '/v1/messages',
    framing: 'sse',
    body: (id, maxTokens) => ({
      model: 'sim',
      max_tokens: maxTokens,
      stream: true,
      messages: [{ role: 'user', content: `Tell me about rivers (${id}).` }],
    }),
    content: (p) => {
      const delta = p.delta as { type?: unknown; text?: unknown } | undefined;
      return p.type === 'content_block_delta' && delta?.type === 'text_delta' && delta.text !== '';
    },
  },
  {
    id: 'gw-tgi',
    label: 'gateway tgi → openai-chat',
    via: 'gateway',
    path: '/generate_stream',
    framing: 'sse',
    body: (id, maxTokens) => ({
      inputs: `Tell me about rivers (${id}).`,
      parameters: { max_new_tokens: maxTokens },
    }),
    content: (p) => {
      const token = p.token as { text?: unknown; special?: unknown } | undefined;
      return (
        token !== undefined && token.special !== true && typeof token.text === 'string' && token.text !== ''
      );
    },
  },
];

interface StreamRecord {
  id: string;
  sentAt: number;
  arrivals: number[];
  error?: string | undefined;
}

interface OpenStream {
  done: Promise<StreamRecord>;
  headers: Promise<void>;
  /** The response began (200) and has not ended. */
  isOpen(): boolean;
  destroy(): void;
}

function openStream(
  base: URL,
  route: Route,
  id: string,
  maxTokens: number,
  agent: http.Agent,
  fault?: string,
  promptBytes = 0,
): OpenStream {
  const payload = route.body(id, maxTokens);
  // A longer prompt (openai-chat bodies): the last message grows by `promptBytes` of text.
  const messages = payload.messages as { content: string }[] | undefined;
  const last = messages?.at(-1);
  if (promptBytes > 0 && last !== undefined)
    last.content += ` ${PROMPT_FILLER.repeat(Math.ceil(promptBytes / PROMPT_FILLER.length)).slice(0, promptBytes)}`;
  const body = JSON.stringify(payload);
  const headers: Record<string, string | number> = {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    accept: route.framing === 'sse' ? 'text/event-stream' : 'application/x-ndjson',
    'x-request-id': id,
  };
  if (fault !== undefined) headers['x-tokenwire-fault'] = fault;
  const record: StreamRecord = { id, sentAt: 0, arrivals: [] };
  const delimiter = route.framing === 'sse' ? '\n\n' : '\n';
  let onHeaders: () => void = () => {};
  const headersSeen = new Promise<void>((resolve) => {
    onHeaders = resolve;
  });
  let request: http.ClientRequest | undefined;
  let open = false;
  const done = new Promise<StreamRecord>((resolve) => {
    const fail = (message: string) => {
      open = false;
      record.error ??= message;
      onHeaders();
      resolve(record);
    };
    record.sentAt = monoMs();
    request = http.request({
      host: base.hostname,
      port: base.port,
      method: 'POST',
      path: route.path,
      headers,
      agent,
    });
    request.on('socket', (socket) => socket.setNoDelay(true));
    request.on('error', (error) => fail(error.message));
    request.on('response', (response) => {
      onHeaders();
      if (response.statusCode !== 200) {
        response.resume();
        fail(`HTTP ${response.statusCode}`);
        return;
      }
      open = true;
      response.setEncoding('utf8');
      let carry = '';
      response.on('data', (text: string) => {
        const at = monoMs();
        carry += text;
        let pos = 0;
        for (;;) {
          const end = carry.indexOf(delimiter, pos);
          if (end === -1) break;
          if (isContent(route, carry.slice(pos, end))) record.arrivals.push(at);
          pos = end + delimiter.length;
        }
        carry = carry.slice(pos);
      });
      response.on('end', () => {
        open = false;
        resolve(record);
      });
      response.on('error', (error) => fail(error.message));
      response.on('aborted', () => fail('aborted'));
    });
    request.end(body);
  });
  return { done, headers: headersSeen, isOpen: () => open, destroy: () => request?.destroy() };
}

function isContent(route: Route, block: string): boolean {
  let payload = block;
  if (route.framing === 'sse') {
    const at = block.lastIndexOf('data:');
    if (at === -1) return false;
    payload = block.slice(at + 5).trimStart();
  }
  if (!payload.startsWith('{')) return false;
  return route.content(JSON.parse(payload) as Record<string, unknown>);
}

/** Sends an IPC message and waits for the child's next message that has `key`. */
function ask<T>(child: ChildProcess, message: object, key: string): Promise<T> {
  return new Promise((resolve) => {
    const listener = (reply: Record<string, unknown>) => {
      if (key in reply) {
        child.off('message', listener);
        resolve(reply as T);
      }
    };
    child.on('message', listener);
    child.send(message);
  });
}

function start(
  script: string,
  args: string[],
  env: Record<string, string> = {},
  flags: readonly string[] = [],
): Promise<{ child: ChildProcess; url: string }> {
  const child = fork(`${here}${script}`, args, {
    execArgv: ['--expose-gc', ...flags],
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
    child.on('message', (message: { ready?: boolean; url?: string }) => {
      if (message.ready === true && message.url !== undefined) resolve({ child, url: message.url });
    });
  });
}

interface Sample {
  cpu: { user: number; system: number };
  rss: number;
  heapUsed: number;
}

interface CellResult {
  route: string;
  level: number;
  round: number;
  ttftMs: number[];
  /** TTFT minus the upstream's own time from request to first content frame, per stream. */
  netTtftMs: number[];
  /** The two legs of the net TTFT, per stream: request written -> upstream received it, and first content frame sent by the upstream -> read by the client. */
  requestLegMs: number[];
  responseLegMs: number[];
  delayMs: number[];
  cpuUsPerChunk: number | undefined;
  chunks: number;
  streams: number;
  failed: number;
  mismatched: number;
  firstError?: string | undefined;
}

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

export interface GatewayReport {
  levels: number[];
  sequentialAtOne: number;
  warmStreams: number;
  routes: string[];
  rounds: number;
  maxTokens: number;
  tokensPerSecond: number;
  cells: CellResult[];
  idleRepeats: number;
  idle: {
    route: string;
    /** Extra prompt text per request (0: the short default prompt). */
    promptBytes: number;
    streams: number;
    opened: number;
    /** Medians over the repeats. */
    rssPerStreamBytes: number;
    heapPerStreamBytes: number;
    rss: Spread;
    heap: Spread;
  }[];
  wallSeconds: number;
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

  const upstream = await start('gateway-upstream.js', [], { BENCH_TPS: String(tokensPerSecond) });
  const bare = await start('gateway-proxy.js', ['bare', upstream.url], {}, options.proxyFlags);
  const gateway = await start('gateway-proxy.js', ['gateway', upstream.url], {}, options.proxyFlags);
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
        target.child === undefined ? undefined : await ask<Sample>(target.child, { sample: true }, 'cpu');
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
        target.child === undefined ? undefined : await ask<Sample>(target.child, { sample: true }, 'cpu');
      const { logs } = await ask<{ logs: Record<string, { received: number; sent: number[] }> }>(
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
    await ask(upstream.child, { take: true }, 'logs');
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
        await ask(upstream.child, { take: true }, 'logs');
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
    await Promise.all(children.map(stop));
  }
}

/** Asks a child to exit cleanly (so a --cpu-prof profile is written), and kills it if it does not. */
async function stop(child: ChildProcess): Promise<void> {
  child.removeAllListeners('exit');
  if (child.exitCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.send({ exit: true });
  await Promise.race([exited, delay(5000)]);
  if (child.exitCode === null) child.kill();
}

function newAgent(): http.Agent {
  return new http.Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY, timeout: 4000 });
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

interface RouteLevel {
  route: string;
  level: number;
  ttftP50: number;
  ttftP99: number;
  netTtftP50: number;
  netTtftP99: number;
  delayP50: number;
  delayP99: number;
  cpu: Spread;
  /** Each round's own figures, in round order (see `addedByRound`). */
  byRound: { netTtftP50: number[]; requestLegP50: number[]; responseLegP50: number[]; delayP99: number[] };
  streams: number;
  failed: number;
  mismatched: number;
  firstError?: string | undefined;
}

/**
 * A route's added figure (route − direct) taken within each round, then median (min–max) over the
 * rounds. Rounds interleave the routes, so the routes of one round ran minutes apart at most, under the
 * same load from the rest of this shared machine; a pooled p99 is instead set by the slowest few
 * chunks of whichever round was the unluckiest, which is what moved the bare proxy's pooled added p99
 * at 128 streams from 0.8 to 8.6 ms between runs of the same code.
 */
export function addedByRound(
  rows: readonly RouteLevel[],
  route: string,
  level: number,
  figure: keyof RouteLevel['byRound'],
): Spread {
  const find = (id: string) => rows.find((r) => r.route === id && r.level === level)!;
  const own = find(route).byRound[figure];
  const direct = find('direct').byRound[figure];
  return spread(own.map((value, k) => value - direct[k]!));
}

export function summarize(report: GatewayReport): RouteLevel[] {
  const out: RouteLevel[] = [];
  for (const level of report.levels) {
    for (const route of ROUTES.filter((r) => report.routes.includes(r.id))) {
      const cells = report.cells.filter((c) => c.route === route.id && c.level === level);
      const ttft = cells.flatMap((c) => c.ttftMs);
      const netTtft = cells.flatMap((c) => c.netTtftMs);
      const delays = cells.flatMap((c) => c.delayMs);
      const cpu = cells.map((c) => c.cpuUsPerChunk).filter((v): v is number => v !== undefined);
      const roundCells = [...new Set(cells.map((c) => c.round))]
        .sort((a, b) => a - b)
        .map((round) => cells.filter((c) => c.round === round));
      /** Each round's quantile of one per-stream series, in round order. */
      const perRound = (series: 'netTtftMs' | 'requestLegMs' | 'responseLegMs' | 'delayMs', q: number) =>
        roundCells.map((one) =>
          quantile(
            one.flatMap((c) => c[series]),
            q,
          ),
        );
      out.push({
        route: route.id,
        level,
        ttftP50: quantile(ttft, 0.5),
        ttftP99: quantile(ttft, 0.99),
        netTtftP50: quantile(netTtft, 0.5),
        netTtftP99: quantile(netTtft, 0.99),
        delayP50: quantile(delays, 0.5),
        delayP99: quantile(delays, 0.99),
        cpu: spread(cpu),
        byRound: {
          netTtftP50: perRound('netTtftMs', 0.5),
          requestLegP50: perRound('requestLegMs', 0.5),
          responseLegP50: perRound('responseLegMs', 0.5),
          delayP99: perRound('delayMs', 0.99),
        },
        streams: cells.reduce((a, c) => a + c.streams, 0),
        failed: cells.reduce((a, c) => a + c.failed, 0),
        mismatched: cells.reduce((a, c) => a + c.mismatched, 0),
        firstError: cells.find((c) => c.firstError !== undefined)?.firstError,
      });
    }
  }
  return out;
}

/** The Markdown section (tables, then the per-target verdicts are made by run-all). */
/** One fresh proxy process holding `streams` idle streams: RSS and heap per stream after a full GC. */
async function measureIdle(
  route: Route,
  upstreamUrl: string,
  streams: number,
  maxTokens: number,
  snapshotDir: string | undefined,
  promptBytes: number,
): Promise<{ rssPerStreamBytes: number; heapPerStreamBytes: number; opened: number }> {
  const fresh = await start('gateway-proxy.js', [route.via, upstreamUrl]);
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
    const base = await ask<Sample>(fresh.child, { gc: true }, 'rss');
    const open = Array.from({ length: streams }, (_, i) =>
      openStream(url, route, `idle-${route.id}-${i}`, maxTokens, agent, 'ttft=60000', promptBytes),
    );
    await Promise.all(open.map((s) => s.headers));
    await delay(1000);
    const held = await ask<Sample>(fresh.child, { gc: true }, 'rss');
    if (snapshotDir !== undefined) {
      const name = promptBytes > 0 ? `idle-${route.id}-prompt${promptBytes}` : `idle-${route.id}`;
      await ask(fresh.child, { snapshot: `${snapshotDir}/${name}.heapsnapshot` }, 'snapshotFile');
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
    await stop(fresh.child);
  }
}

export function gatewayMarkdown(report: GatewayReport): string {
  const rows = summarize(report);
  const find = (route: string, level: number) => rows.find((r) => r.route === route && r.level === level)!;
  const label = (id: string) => ROUTES.find((r) => r.id === id)!.label;
  const lines: string[] = [
    `Simulator upstream at ${report.tokensPerSecond} tokens/s (±10 % jitter, 20 ms TTFT), ${report.maxTokens} tokens per stream (${Math.min(report.maxTokens, 12)} at level 1000); level 1 runs ${report.sequentialAtOne} streams back to back; ${report.warmStreams} short streams per route first (warm-up, not recorded); ${report.rounds} rounds, routes interleaved, samples pooled, except in the *by round* columns: there each round's added figure (route − direct in that round), median (min–max) over the rounds. Added = route − direct at the same level; added TTFT compares TTFT net of the simulator's own time to its first token, per stream (see bench/README.md). Times in ms.`,
    '',
    '| level | route | TTFT p50 | TTFT p99 | added TTFT p50 | added TTFT p50 by round | added TTFT p99 | chunk delay p50 | chunk delay p99 | added delay p50 | added delay p99 | added delay p99 by round | proxy CPU µs/chunk | streams (failed, count mismatch) |',
    '|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const level of report.levels) {
    const direct = find('direct', level);
    for (const route of ROUTES.filter((r) => report.routes.includes(r.id))) {
      const r = find(route.id, level);
      const isDirect = route.id === 'direct';
      const added = (a: number, b: number) => (isDirect ? '–' : fmt(a - b, 2));
      const byRound = (figure: keyof RouteLevel['byRound']) =>
        isDirect ? '–' : fmtSpread(addedByRound(rows, route.id, level, figure));
      lines.push(
        `| ${level} | ${label(route.id)} | ${fmt(r.ttftP50)} | ${fmt(r.ttftP99)} | ${added(r.netTtftP50, direct.netTtftP50)} | ${byRound('netTtftP50')} | ${added(r.netTtftP99, direct.netTtftP99)} | ${fmt(r.delayP50)} | ${fmt(r.delayP99)} | ${added(r.delayP50, direct.delayP50)} | ${added(r.delayP99, direct.delayP99)} | ${byRound('delayP99')} | ${isDirect ? '–' : `${fmt(r.cpu.median, 1)} (${fmt(r.cpu.min, 1)}–${fmt(r.cpu.max, 1)})`} | ${r.streams} (${r.failed}${r.failed > 0 && r.firstError !== undefined ? `: ${r.firstError}` : ''}, ${r.mismatched}) |`,
      );
    }
  }
  lines.push(
    '',
    'Where the added TTFT p50 is added, by round as above: the request leg (the client writes the request -> the upstream has read it) and the response leg (the upstream sends the first content frame -> the client has read it), each route − direct, both stamped on the shared monotonic clock. Their sum is the net TTFT; the medians of the legs need not add up to the median of the sum.',
    '',
    '| level | route | added request leg p50 by round | added response leg p50 by round |',
    '|---:|---|---:|---:|',
  );
  for (const level of report.levels) {
    for (const route of ROUTES.filter((r) => report.routes.includes(r.id) && r.id !== 'direct')) {
      lines.push(
        `| ${level} | ${label(route.id)} | ${fmtSpread(addedByRound(rows, route.id, level, 'requestLegP50'))} | ${fmtSpread(addedByRound(rows, route.id, level, 'responseLegP50'))} |`,
      );
    }
  }
  lines.push(
    '',
    `RSS per open idle stream (${report.idle[0]?.streams ?? 0} streams held before their first token, in a fresh proxy process warmed up with 40 short streams; proxy RSS and heap after a full GC, minus before; median (min–max) of ${report.idleRepeats} fresh processes per route, routes interleaved):`,
    '',
    '| route | prompt | RSS KiB/stream | heap KiB/stream | streams open when measured (fewest) |',
    '|---|---|---:|---:|---:|',
  );
  for (const idle of report.idle) {
    const prompt = idle.promptBytes > 0 ? `+${fmt(idle.promptBytes / 1024, 0)} KiB` : 'short';
    lines.push(
      `| ${label(idle.route)} | ${prompt} | ${kib(idle.rss)} | ${kib(idle.heap)} | ${idle.opened} |`,
    );
  }
  return lines.join('\n');
}

const kib = (bytes: Spread) =>
  `${fmt(bytes.median / 1024, 1)} (${fmt(bytes.min / 1024, 1)}–${fmt(bytes.max / 1024, 1)})`;

export { median };

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
