/**
 * Balancing under skew (issue 31): 4 simulator replicas of one model over HTTP, one 4× slower, behind
 * the gateway; `least-busy`, `load` and `prefix` against `round-robin` in the same run.
 *
 * Method
 * - 4 simulators (`createSim`, served by `src/node/serve.ts` on loopback), `r0`–`r2` at `--ttft-ms`
 *   (40) to the first token and `--tps` (100) tokens/s, `r3` 4× slower in both. Each sits behind
 *   `--slots` (4) slots, as llama-server with `-np 4`: a request beyond them waits for one (the
 *   simulator alone runs any number at once at full speed, so nothing would ever queue).
 * - The simulator publishes no `/metrics`. The slot wrapper answers `GET /metrics` with llama-server's
 *   gauges from its live counts (`llamacpp:requests_processing`, `llamacpp:requests_deferred`), so `load`
 *   reads the servers' own signal (scraped every 250 ms, the health interval of every gateway here) and
 *   not only the gateway's own in-flight counts.
 * - One gateway per policy (`createGateway({ balance })`, undici's upstream fetch as `tokenwire serve`
 *   uses, served by `serve()`), all in front of the same 4 servers, started once; only one is loaded at a
 *   time. Rounds interleave the policies (the order rotates each round), after an unrecorded warm-up.
 * - Closed loop: `--clients` (16) clients each send an OpenAI chat stream (`max_tokens` `--tokens`, 24)
 *   through tokenwire's `complete()` as soon as their last one ended, for `--seconds` (6) per cell; the
 *   streams still open at the end are waited for and counted. The requests are conversations: 32
 *   openings (a system prompt and a first user turn), each request one to three turns deep, the same
 *   seeded sequence per client for every policy (what `prefix` keys on).
 * - TTFT and end-to-end are the client's (`Result.metrics.ttftMs`, `totalMs`); p50, p90 and p99 per cell;
 *   the table gives the median (min–max) over the rounds, and p99 TTFT "× round-robin" is the ratio to
 *   round-robin's in the same round.
 *
 * stdout: the Markdown body of the RESULTS.md section. Progress on stderr. Flags: `--rounds N` (3),
 * `--seconds S` (6), `--clients N` (16), `--gateways N` (1: gateways per policy, each its own pool, as
 * `--workers N`), `--tokens N` (24), `--ttft-ms N` (40), `--tps N` (100),
 * `--slots N` (4), `--policies a,b` (round-robin first: the ratios are to it), `--no-gauges` (`/metrics`
 * answers 404, so `load` falls back to in-flight counts), `--quick`.
 */
import { seededRandom } from '../src/bench/arrivals.ts';
import { complete } from '../src/client/token-stream.ts';
import { type ServedHandler, serve } from '../src/node/serve.ts';
import { createUndiciFetch, loadUndici } from '../src/node/undici-fetch.ts';
import { createGateway, type Gateway } from '../src/server/create-gateway.ts';
import type { BalancePolicy } from '../src/server/pool/choose-replica.ts';
import type { Upstream } from '../src/server/upstream/upstream.ts';
import { createSim } from '../src/sim/create-sim.ts';
import { fmt, fmtSpread, quantile, type Spread, spread } from './stats.ts';

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
function flag(name: string, fallback: string): string {
  const at = argv.indexOf(name);
  return at === -1 || argv[at + 1] === undefined ? fallback : argv[at + 1]!;
}
const rounds = Number(flag('--rounds', quick ? '1' : '3'));
const seconds = Number(flag('--seconds', quick ? '3' : '6'));
const clients = Number(flag('--clients', '16'));
/** Gateways per policy, each with its own pool, the clients spread over them: what `--workers N` does. */
const gatewayCount = Number(flag('--gateways', '1'));
const tokens = Number(flag('--tokens', '24'));
const ttftMs = Number(flag('--ttft-ms', '40'));
const tps = Number(flag('--tps', '100'));
const slots = Number(flag('--slots', '4'));
const log = (line: string) => console.error(`[pool-balance] ${line}`);
const POLICIES = flag('--policies', 'round-robin,least-busy,load,prefix').split(',') as BalancePolicy[];
// `--no-gauges`: the servers answer `/metrics` with 404, as the bare simulator does; `load` then has no
// signal and falls back to the gateway's in-flight counts.
const gaugesOn = !argv.includes('--no-gauges');
const SLOW = 'r3';

/**
 * A simulator behind `slots` slots, as llama-server with `-np N`: a request beyond them waits (deferred)
 * until one is free. It answers `GET /metrics` as llama-server does, from the live counts.
 */
function withSlots(handler: (request: Request) => Promise<Response> | Response, slots: number) {
  const state = { processing: 0, answered: 0, deferredPeak: 0 };
  const queue: (() => void)[] = [];
  const gauges = () =>
    `# HELP llamacpp:requests_processing Number of requests processing.\n# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing ${state.processing}\n# HELP llamacpp:requests_deferred Number of requests deferred.\n# TYPE llamacpp:requests_deferred gauge\nllamacpp:requests_deferred ${queue.length}\n`;
  const release = () => {
    state.processing -= 1;
    const next = queue.shift();
    if (next !== undefined) {
      state.processing += 1;
      next();
    }
  };
  const fetch = async (request: Request): Promise<Response> => {
    if (request.method === 'GET' && new URL(request.url).pathname === '/metrics') {
      if (!gaugesOn) return new Response('Not Found', { status: 404 });
      return new Response(gauges(), { headers: { 'content-type': 'text/plain; version=0.0.4' } });
    }
    if (request.method !== 'POST') return handler(request);
    state.answered += 1;
    if (state.processing < slots) state.processing += 1;
    else {
      // Its slot is taken for it by `release` before it runs, so the count never exceeds the slots.
      await new Promise<void>((resolve) => {
        queue.push(resolve);
        state.deferredPeak = Math.max(state.deferredPeak, queue.length);
      });
    }
    let done = false;
    const finish = () => {
      if (!done) {
        done = true;
        release();
      }
    };
    let response: Response;
    try {
      response = await handler(request);
    } catch (error) {
      finish();
      throw error;
    }
    if (response.body === null) {
      finish();
      return response;
    }
    const reader = response.body.getReader();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { done: ended, value } = await reader.read();
        if (ended) {
          finish();
          controller.close();
        } else controller.enqueue(value);
      },
      cancel(reason) {
        finish();
        return reader.cancel(reason);
      },
    });
    return new Response(body, { status: response.status, headers: response.headers });
  };
  return { fetch, state };
}

function conversation(random: () => number) {
  const opening = Math.floor(random() * 32);
  const depth = 1 + Math.floor(random() * 3);
  const messages: { role: string; content: string }[] = [
    { role: 'system', content: `You are assistant number ${opening}. Answer briefly and precisely.` },
    { role: 'user', content: `Conversation ${opening}: tell me about rivers.` },
  ];
  for (let turn = 1; turn < depth; turn++) {
    messages.push({ role: 'assistant', content: `Rivers, part ${turn}, of conversation ${opening}.` });
    messages.push({ role: 'user', content: `And then, turn ${turn + 1}?` });
  }
  return { model: 'sim', stream: true, max_tokens: tokens, messages };
}

interface Cell {
  ttft: number[];
  e2e: number[];
  incomplete: number;
  slowShare: number;
  requests: number;
  wallSeconds: number;
}

async function runCell(
  urls: readonly string[],
  sims: ReturnType<typeof withSlots>[],
  cellSeconds: number,
): Promise<Cell> {
  const before = sims.map((sim) => sim.state.answered);
  const ttft: number[] = [];
  const e2e: number[] = [];
  let incomplete = 0;
  const started = performance.now();
  const deadline = started + cellSeconds * 1000;
  await Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      const random = seededRandom(1000 + client);
      while (performance.now() < deadline) {
        const url = urls[client % urls.length]!;
        const result = await complete({ url: `${url}/v1/chat/completions`, body: conversation(random) });
        if (!result.complete || result.metrics.ttftMs === undefined || result.metrics.totalMs === undefined) {
          incomplete += 1;
          continue;
        }
        ttft.push(result.metrics.ttftMs);
        e2e.push(result.metrics.totalMs);
      }
    }),
  );
  const wallSeconds = (performance.now() - started) / 1000;
  const answered = sims.map((sim, i) => sim.state.answered - before[i]!);
  const total = answered.reduce((a, b) => a + b, 0);
  return {
    ttft,
    e2e,
    incomplete,
    slowShare: total === 0 ? Number.NaN : answered[3]! / total,
    requests: ttft.length + incomplete,
    wallSeconds,
  };
}

await loadUndici();
const upstreamFetch = createUndiciFetch();
const sims = [0, 1, 2, 3].map((i) => {
  const slow = i === 3;
  const sim = createSim({
    seed: i + 1,
    models: ['sim'],
    timing: { ttftMs: slow ? ttftMs * 4 : ttftMs, tokensPerSecond: slow ? tps / 4 : tps },
  });
  return withSlots(sim.fetch, slots);
});
const servedSims: ServedHandler[] = [];
for (const sim of sims) servedSims.push(await serve(sim.fetch));
const upstreams: Upstream[] = servedSims.map((served, i) => ({
  name: `r${i}`,
  url: served.url,
  dialects: ['openai-chat'],
  models: ['sim'],
  fetch: upstreamFetch,
}));
const gateways: { policy: BalancePolicy; gateways: Gateway[]; served: ServedHandler[]; urls: string[] }[] =
  [];
for (const policy of POLICIES) {
  const entry = { policy, gateways: [] as Gateway[], served: [] as ServedHandler[], urls: [] as string[] };
  for (let i = 0; i < gatewayCount; i++) {
    const gateway = createGateway({ upstreams, balance: policy, healthIntervalMs: 250 });
    const served = await serve(gateway.fetch);
    entry.gateways.push(gateway);
    entry.served.push(served);
    entry.urls.push(served.url);
  }
  gateways.push(entry);
}

log(
  `4 replicas (${SLOW} 4× slower), ${slots} slots each, ${clients} clients, ${tokens} tokens; warm-up, then ${rounds} rounds × ${POLICIES.length} policies × ${seconds} s`,
);
for (const g of gateways) await runCell(g.urls, sims, Math.min(1.5, seconds));
const cells = new Map<BalancePolicy, Cell[]>(POLICIES.map((p) => [p, []]));
for (let round = 0; round < rounds; round++) {
  const order = [...gateways.slice(round % gateways.length), ...gateways.slice(0, round % gateways.length)];
  for (const g of order) {
    const cell = await runCell(g.urls, sims, seconds);
    cells.get(g.policy)!.push(cell);
    log(
      `round ${round + 1} ${g.policy}: ${cell.requests} requests, TTFT p50 ${fmt(quantile(cell.ttft, 0.5), 0)} p99 ${fmt(quantile(cell.ttft, 0.99), 0)} ms, e2e p99 ${fmt(quantile(cell.e2e, 0.99), 0)} ms, ${fmt(cell.slowShare * 100, 1)} % on ${SLOW}${cell.incomplete > 0 ? `, ${cell.incomplete} incomplete` : ''}`,
    );
  }
}
for (const g of gateways) {
  for (const served of g.served) await served.close();
  for (const gateway of g.gateways) await gateway.close();
}
for (const served of servedSims) await served.close();

const rr = cells.get('round-robin') ?? [];
const perCell = (policy: BalancePolicy, figure: (cell: Cell) => number): Spread =>
  spread(cells.get(policy)!.map(figure));
const vsRr = (policy: BalancePolicy, figure: (cell: Cell) => number): Spread =>
  spread(
    cells.get(policy)!.map((cell, i) => (rr[i] === undefined ? Number.NaN : figure(cell) / figure(rr[i]!))),
  );
const ttftP99 = (cell: Cell) => quantile(cell.ttft, 0.99);
const e2eP99 = (cell: Cell) => quantile(cell.e2e, 0.99);
const ms = (s: Spread) => fmtSpread(s, 0);
console.log(
  [
    `4 simulator replicas of one model over HTTP on loopback, \`r0\`–\`r2\` ${ttftMs} ms to the first token and ${tps} tokens/s, \`${SLOW}\` 4× slower in both, each behind ${slots} slots as llama-server \`-np ${slots}\` (a request beyond them waits for one) and answering \`GET /metrics\` with llama-server's gauges from its live counts (\`llamacpp:requests_processing\`, \`requests_deferred\`), which \`load\` scrapes every 250 ms (the simulator alone has neither slots nor \`/metrics\`)${gaugesOn ? '' : '; **this run: `--no-gauges`, `/metrics` answers 404 and `load` falls back to in-flight counts**'}. ${gatewayCount === 1 ? 'One in-process gateway' : `${gatewayCount} in-process gateways, each with its own pool, the clients spread over them (as \`--workers ${gatewayCount}\` would),`} per policy (\`createGateway\` + \`serve\`, undici's upstream fetch), one policy loaded at a time. Closed loop: ${clients} clients, each an OpenAI chat stream of ${tokens} tokens after the last (tokenwire \`complete()\`), ${seconds} s per cell; the requests are 1–3-turn conversations over 32 openings, the same seeded sequence for every policy. ${rounds} rounds, the policies' order rotating. TTFT and end-to-end as the client measured them: p50, p90 (TTFT) and p99 per cell, median (min–max) over the rounds; "× round-robin" is the ratio to round-robin's in the same round.`,
    '',
    `| policy | TTFT p50 ms | TTFT p90 ms | TTFT p99 ms | p99 TTFT × round-robin | e2e p50 ms | e2e p99 ms | p99 e2e × round-robin | share on ${SLOW} | requests/s | incomplete |`,
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...POLICIES.map((policy) => {
      const all = cells.get(policy)!;
      const incomplete = all.reduce((a, c) => a + c.incomplete, 0);
      return `| \`${policy}\` | ${ms(perCell(policy, (c) => quantile(c.ttft, 0.5)))} | ${ms(perCell(policy, (c) => quantile(c.ttft, 0.9)))} | ${ms(perCell(policy, ttftP99))} | ${policy === 'round-robin' ? '1' : fmtSpread(vsRr(policy, ttftP99), 2, '×')} | ${ms(perCell(policy, (c) => quantile(c.e2e, 0.5)))} | ${ms(perCell(policy, e2eP99))} | ${policy === 'round-robin' ? '1' : fmtSpread(vsRr(policy, e2eP99), 2, '×')} | ${fmt(perCell(policy, (c) => c.slowShare * 100).median, 1)} % | ${fmt(perCell(policy, (c) => c.requests / c.wallSeconds).median, 1)} | ${incomplete} |`;
    }),
  ].join('\n'),
);
