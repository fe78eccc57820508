/**
 * The pool's own cost (issue 31): the gateway in front of one upstream against the same gateway in front
 * of 4 replicas of the same model, at the same load.
 *
 * Method
 * - In process, no network, as `gateway-request-cost.ts`: `gateway.fetch` is handed the light request
 *   `serve()` builds, its response is taken by a direct writer (the production read/write paths), and
 *   every upstream is a fetch answering from memory the way `createUndiciFetch` does (a push-read body,
 *   a role chunk, one content chunk, the finish chunk, usage and `[DONE]`, a microtask after the call).
 *   So the whole TTFT is the gateway's own: the upstream adds nothing.
 * - Subjects: `one` (one upstream), `again` (a second, identical one-upstream gateway: its ratio to `one`
 *   is the run's noise) and `pool` (4 replicas serving the model, the default `least-busy`, the default
 *   health checks). The gateways are built once; the rounds interleave them (the order rotates each
 *   round), after an unrecorded warm-up of each. Every upstream of a gateway shares one fetch, as
 *   `tokenwire serve`'s share one undici fetch.
 * - TTFT: `gateway.fetch` called → first byte written, for `--requests` requests one after another;
 *   p50 per round. CPU per request: `process.cpuUsage` across those requests, over their count.
 * - Burst tail: `--bursts` bursts of 128 requests started in the same tick; TTFT from the burst's start
 *   to each request's first byte; p99 over the round's bursts.
 * - "× one": the pool's figure over one upstream's in the same round; the table gives the median and
 *   min–max over the rounds. Target (issue 31): ≤ 1.05×.
 *
 * stdout: the Markdown body of the RESULTS.md section. Progress on stderr. Flags: `--rounds N` (15),
 * `--requests N` (1000), `--bursts N` (4), `--burst N` (128), `--replicas N` (4), `--quick`, `--json`.
 */
import { FETCH_TAKES_INIT, PUSH_ONLY } from '../src/client/push-source.ts';
import { createGateway, type Gateway } from '../src/server/create-gateway.ts';
import { directBodyOfResponse } from '../src/server/http/response-output.ts';
import type { Upstream } from '../src/server/upstream/upstream.ts';
import { lightChatRequest } from './light-request.ts';
import { pushResponse } from './push-response.ts';
import { fmt, fmtSpread, quantile, type Spread, spread } from './stats.ts';

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
function flag(name: string, fallback: string): string {
  const at = argv.indexOf(name);
  return at === -1 || argv[at + 1] === undefined ? fallback : argv[at + 1]!;
}
const rounds = Number(flag('--rounds', quick ? '3' : '15'));
const requests = Number(flag('--requests', quick ? '500' : '1000'));
const bursts = Number(flag('--bursts', quick ? '2' : '4'));
const burst = Number(flag('--burst', '128'));
const replicas = Number(flag('--replicas', '4'));
const log = (line: string) => console.error(`[pool-cost] ${line}`);

const chunk = (delta: string, finish: string | null) =>
  `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"sim","choices":[{"index":0,"delta":${delta},"logprobs":null,"finish_reason":${finish === null ? 'null' : `"${finish}"`}}]}\n\n`;
const upstreamBody = new TextEncoder().encode(
  `${chunk('{"role":"assistant","content":""}', null)}${chunk('{"content":"Hi"}', null)}${chunk('{"content":""}', 'length')}data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"sim","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}\n\ndata: [DONE]\n\n`,
);

/**
 * One fetch for every upstream of a gateway, as `tokenwire serve` shares one undici fetch among its
 * upstreams; it counts the generation requests each replica answered (by host), the health probes apart.
 */
function memoryFetch(counts: Map<string, number>) {
  const upstreamFetch = async (url: string, init: RequestInit) => {
    if (url.endsWith('/chat/completions')) {
      const host = url.slice(url.indexOf('//') + 2, url.indexOf('.invalid'));
      counts.set(host, (counts.get(host) ?? 0) + 1);
    }
    return pushResponse(upstreamBody, (init as Record<symbol, unknown>)[PUSH_ONLY] === true);
  };
  (upstreamFetch as unknown as Record<symbol, unknown>)[FETCH_TAKES_INIT] = true;
  return upstreamFetch as unknown as (request: Request) => Promise<Response>;
}

function memoryUpstream(name: string, fetch: (request: Request) => Promise<Response>): Upstream {
  return { name, url: `http://${name}.invalid`, dialects: ['openai-chat'], models: ['sim'], fetch };
}

/** One request; resolves with the time of its first written byte (0 when nothing was written). */
async function oneRequest(gateway: Gateway): Promise<number> {
  let first = 0;
  const response = await gateway.fetch(lightChatRequest());
  const direct = directBodyOfResponse(response);
  if (direct === undefined) throw new Error(`no direct body (status ${response.status})`);
  await new Promise<void>((resolve) => {
    direct.attach({
      write: () => {
        if (first === 0) first = performance.now();
        return true;
      },
      end: (text) => {
        if (first === 0 && text !== undefined && text !== '') first = performance.now();
        resolve();
      },
      destroy: () => resolve(),
    });
  });
  if (first === 0) throw new Error('a request wrote nothing');
  return first;
}

interface Cell {
  ttftP50Us: number;
  cpuPerRequestUs: number;
  burstP50Us: number;
  burstP99Us: number;
}

async function measure(gateway: Gateway, n: number, burstCount: number): Promise<Cell> {
  const ttft: number[] = [];
  const cpu = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    const start = performance.now();
    const first = await oneRequest(gateway);
    ttft.push(first - start);
  }
  const used = process.cpuUsage(cpu);
  const burstTtft: number[] = [];
  for (let b = 0; b < burstCount; b++) {
    const start = performance.now();
    const firsts = await Promise.all(Array.from({ length: burst }, () => oneRequest(gateway)));
    for (const first of firsts) burstTtft.push(first - start);
  }
  return {
    ttftP50Us: quantile(ttft, 0.5) * 1000,
    cpuPerRequestUs: (used.user + used.system) / n,
    burstP50Us: quantile(burstTtft, 0.5) * 1000,
    burstP99Us: quantile(burstTtft, 0.99) * 1000,
  };
}

type SubjectId = 'one' | 'again' | 'pool';
const countsPool = new Map<string, number>();
const poolFetch = memoryFetch(countsPool);
const subjects: { id: SubjectId; gateway: Gateway }[] = [
  { id: 'one', gateway: createGateway({ upstreams: [memoryUpstream('u0', memoryFetch(new Map()))] }) },
  // A second single-upstream gateway, measured like the others: its ratio to `one` is the run's noise.
  { id: 'again', gateway: createGateway({ upstreams: [memoryUpstream('u1', memoryFetch(new Map()))] }) },
  {
    id: 'pool',
    gateway: createGateway({
      upstreams: Array.from({ length: replicas }, (_, i) => memoryUpstream(`r${i}`, poolFetch)),
    }),
  },
];

log(`warm-up; then ${rounds} rounds of ${requests} requests and ${bursts} bursts of ${burst} per subject`);
for (const subject of subjects) await measure(subject.gateway, Math.min(1000, requests), 2);
countsPool.clear();
const cells: Record<SubjectId, Cell[]> = { one: [], again: [], pool: [] };
for (let round = 0; round < rounds; round++) {
  const at = round % subjects.length;
  const order = [...subjects.slice(at), ...subjects.slice(0, at)];
  for (const subject of order) cells[subject.id].push(await measure(subject.gateway, requests, bursts));
  const [one, again, pool] = [cells.one.at(-1)!, cells.again.at(-1)!, cells.pool.at(-1)!];
  log(
    `round ${round + 1} (one / again / pool): TTFT p50 ${fmt(one.ttftP50Us, 1)} / ${fmt(again.ttftP50Us, 1)} / ${fmt(pool.ttftP50Us, 1)} µs, CPU ${fmt(one.cpuPerRequestUs, 1)} / ${fmt(again.cpuPerRequestUs, 1)} / ${fmt(pool.cpuPerRequestUs, 1)} µs, burst p99 ${fmt(one.burstP99Us / 1000)} / ${fmt(again.burstP99Us / 1000)} / ${fmt(pool.burstP99Us / 1000)} ms`,
  );
}
for (const subject of subjects) await subject.gateway.close();

const metrics: { key: keyof Cell; label: string; unit: string; scale: number }[] = [
  { key: 'ttftP50Us', label: 'TTFT p50, one at a time', unit: 'µs', scale: 1 },
  { key: 'cpuPerRequestUs', label: 'CPU per request', unit: 'µs', scale: 1 },
  { key: 'burstP50Us', label: `TTFT p50, bursts of ${burst}`, unit: 'ms', scale: 1000 },
  { key: 'burstP99Us', label: `TTFT p99, bursts of ${burst}`, unit: 'ms', scale: 1000 },
];
const ratioTo = (id: SubjectId, key: keyof Cell) =>
  spread(cells.one.map((c, i) => cells[id][i]![key] / c[key]));
const rows = metrics.map((m) => ({
  ...m,
  one: spread(cells.one.map((c) => c[m.key] / m.scale)),
  pool: spread(cells.pool.map((c) => c[m.key] / m.scale)),
  ratio: ratioTo('pool', m.key),
  noise: ratioTo('again', m.key),
}));
const picks = [...countsPool.entries()]
  .sort(([a], [b]) => a.localeCompare(b))
  .map(([name, count]) => `${name} ${count}`)
  .join(', ');

if (argv.includes('--json')) {
  const asJson = (s: Spread) => ({ median: s.median, min: s.min, max: s.max });
  console.log(
    JSON.stringify({
      rounds,
      requests,
      bursts,
      burst,
      replicas,
      rows: rows.map((r) => ({
        key: r.key,
        unit: r.unit,
        one: asJson(r.one),
        pool: asJson(r.pool),
        ratio: asJson(r.ratio),
        noise: asJson(r.noise),
      })),
    }),
  );
} else {
  const digits = (unit: string) => (unit === 'µs' ? 1 : 2);
  console.log(
    [
      `The gateway in process (\`gateway.fetch\`, the light request \`serve()\` builds, a direct writer; no network) in front of one upstream against ${replicas} replicas of the same model (\`least-busy\`, default health checks), every upstream answering from memory a microtask after the call (one fetch shared by a gateway's upstreams, as \`tokenwire serve\` shares undici's), so the TTFT is all the gateway's own. A second one-upstream gateway is measured the same way: its ratio to the first ("noise") is what this run's machine does to two identical subjects. ${rounds} rounds, the three interleaved (order rotating); per round and subject ${requests} requests one after another (TTFT p50; CPU per request by \`process.cpuUsage\`) and ${bursts} bursts of ${burst} started in one tick (TTFT from the burst's start, p50 and p99). "× one" is the pool's figure over one upstream's in the same round, median (min–max) over the rounds; target (issue 31) ≤ 1.05×.`,
      '',
      `| figure | one upstream | ${replicas} replicas | × one | noise: one again × one | ≤ 1.05× |`,
      '|---|---:|---:|---:|---:|:---:|',
      ...rows.map(
        (r) =>
          `| ${r.label} | ${fmtSpread(r.one, digits(r.unit), ` ${r.unit}`)} | ${fmtSpread(r.pool, digits(r.unit), ` ${r.unit}`)} | ${fmtSpread(r.ratio, 2, '×')} | ${fmtSpread(r.noise, 2, '×')} | ${r.ratio.median <= 1.05 ? 'yes' : '**no**'} |`,
      ),
      '',
      `Requests each replica answered over the recorded rounds: ${picks}.`,
    ].join('\n'),
  );
}
