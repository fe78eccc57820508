import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { after, describe, it } from 'node:test';
import { complete } from '../../../src/client/token-stream.ts';
import { DIALECT_IDS } from '../../../src/dialects/dialect.ts';
import { type ServedHandler, serve } from '../../../src/node/serve.ts';
import { createGateway, type GatewayOptions } from '../../../src/server/create-gateway.ts';
import type { RequestLog } from '../../../src/server/observability/request-log.ts';
import type { Upstream } from '../../../src/server/upstream/upstream.ts';
import { createSim, type Sim } from '../../../src/sim/index.ts';
import type { SimOptions } from '../../../src/sim/sim-options.ts';
import { scriptServer } from '../../helpers/script-server.ts';

/** Simulators over HTTP, each an upstream of the gateway, and the gateway over HTTP in front of them. */
const open: { close(): Promise<void> }[] = [];
after(async () => {
  for (const server of open.reverse()) await server.close();
});

async function replica(name: string, options: SimOptions = {}): Promise<{ upstream: Upstream; sim: Sim }> {
  const sim = createSim(Object.assign({ timing: { tokensPerSecond: 5000, loadMs: 0 } }, options));
  const served = await serve(sim.fetch);
  open.push(served);
  return {
    sim,
    upstream: { name, url: served.url, dialects: DIALECT_IDS, models: options.models ?? ['sim'] },
  };
}

async function gateway(upstreams: Upstream[], options: Partial<GatewayOptions> = {}): Promise<ServedHandler> {
  const g = createGateway(Object.assign({ upstreams, healthIntervalMs: 0 }, options));
  const served = await serve(g.fetch);
  open.push({
    close: async () => {
      await g.close();
      await served.close();
    },
  });
  return served;
}

/** A port nothing listens on: connections to it are refused. */
async function refusingUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

const chat = (model: string, content = 'hello', extra: Record<string, unknown> = {}) =>
  Object.assign({ model, stream: true, max_tokens: 4, messages: [{ role: 'user', content }] }, extra);

async function post(url: string, body: unknown) {
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, text };
}

describe('the gateway in front of a pool of servers', () => {
  it("routes each model to the servers that serve it, and lists the union; an unknown one is the client's 404", async () => {
    const a = await replica('a', { models: ['qwen'] });
    const b = await replica('b', { models: ['llama'] });
    const g = await gateway([a.upstream, b.upstream]);
    assert.equal((await post(g.url, chat('qwen'))).headers.get('x-tokenwire-upstream'), 'a');
    assert.equal((await post(g.url, chat('llama'))).headers.get('x-tokenwire-upstream'), 'b');
    assert.equal(a.sim.stats.log.length, 1);
    assert.equal(b.sim.stats.log.length, 1);
    const models = (await (await fetch(`${g.url}/v1/models`)).json()) as { data: { id: string }[] };
    assert.deepEqual(models.data.map((m) => m.id).sort(), ['llama', 'qwen']);
    const missing = await post(g.url, chat('nope'));
    assert.equal(missing.status, 404);
    assert.match(missing.text, /The model `nope` does not exist\. The models served here: qwen, llama\./);
    const ollama = await fetch(`${g.url}/api/chat`, {
      method: 'POST',
      body: JSON.stringify({ model: 'nope', messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(ollama.status, 404);
    assert.match(
      ((await ollama.json()) as { error: string }).error,
      /not found.*The models served here: qwen, llama/,
    );
  });

  it('least-busy spreads one-at-a-time requests over the replicas; round-robin follows the weights', async () => {
    const a = await replica('a');
    const b = await replica('b');
    const g = await gateway([a.upstream, b.upstream]);
    for (let i = 0; i < 6; i++) assert.equal((await post(g.url, chat('sim'))).status, 200);
    assert.deepEqual([a.sim.stats.log.length, b.sim.stats.log.length], [3, 3]);

    const c = await replica('c');
    const d = await replica('d');
    const weighted = await gateway([Object.assign({}, c.upstream, { weight: 2 }), d.upstream], {
      balance: 'round-robin',
    });
    for (let i = 0; i < 6; i++) await post(weighted.url, chat('sim'));
    assert.deepEqual([c.sim.stats.log.length, d.sim.stats.log.length], [4, 2]);
  });

  it('prefix: every turn of a conversation goes to the replica that served its first', async () => {
    const replicas = await Promise.all(['a', 'b', 'c'].map((name) => replica(name)));
    const g = await gateway(
      replicas.map((r) => r.upstream),
      { balance: 'prefix' },
    );
    for (let conversation = 0; conversation < 6; conversation++) {
      const system = { role: 'system', content: `You are assistant number ${conversation}.` };
      const messages: { role: string; content: string }[] = [system, { role: 'user', content: 'Hi' }];
      const served = new Set<string>();
      for (let turn = 0; turn < 3; turn++) {
        const answer = await post(g.url, { model: 'sim', stream: true, max_tokens: 4, messages });
        served.add(answer.headers.get('x-tokenwire-upstream') ?? '');
        messages.push({ role: 'assistant', content: 'Hello.' }, { role: 'user', content: `More ${turn}` });
      }
      assert.equal(served.size, 1, `conversation ${conversation} stayed on one replica: ${[...served]}`);
    }
  });

  it('a replica that refuses connections: the request goes to another, named in x-tokenwire-attempts, and the refuser cools down', async () => {
    const good = await replica('good');
    const dead: Upstream = { name: 'dead', url: await refusingUrl(), dialects: DIALECT_IDS, models: ['sim'] };
    const g = await gateway([dead, good.upstream]);
    const first = await post(g.url, chat('sim'));
    assert.equal(first.status, 200);
    assert.match(first.text, /data: \[DONE\]/);
    assert.equal(first.headers.get('x-tokenwire-upstream'), 'good');
    assert.equal(first.headers.get('x-tokenwire-attempts'), 'dead, good');
    for (let i = 0; i < 3; i++) {
      const next = await post(g.url, chat('sim'));
      assert.equal(
        next.headers.get('x-tokenwire-attempts'),
        null,
        'the dead replica is passed over while it cools',
      );
    }
    assert.equal(good.sim.stats.log.length, 4);
    const metrics = await (await fetch(`${g.url}/metrics`)).text();
    assert.match(metrics, /tokenwire_upstream_retries_total\{[^}]*upstream="dead"[^}]*\} 1/);
  });

  it('no retry once the request has waited past the retry budget, nor beyond --retries', async () => {
    const good = await replica('good');
    const dead = (name: string): Upstream => ({ name, url: '', dialects: DIALECT_IDS, models: ['sim'] });
    const spent = await gateway([Object.assign(dead('dead'), { url: await refusingUrl() }), good.upstream], {
      retryBudgetMs: -1,
    });
    const refused = await post(spent.url, chat('sim'));
    assert.equal(refused.status, 502);
    assert.equal(good.sim.stats.log.length, 0);
    const chain = await gateway(
      [
        Object.assign(dead('d1'), { url: await refusingUrl() }),
        Object.assign(dead('d2'), { url: await refusingUrl() }),
        good.upstream,
      ],
      { retries: 1, balance: 'round-robin' },
    );
    const once = await post(chain.url, chat('sim'));
    assert.equal(once.status, 502, 'd1, then d2, then no third attempt');
    assert.equal(once.headers.get('x-tokenwire-attempts'), 'd1, d2', 'both tried, good never reached');
    assert.equal(good.sim.stats.log.length, 0);
  });

  it('a whole (non-stream) answer is retried on another replica too, same dialect or translated', async () => {
    const good = await replica('good');
    for (const path of ['/v1/chat/completions', '/api/chat']) {
      const dead: Upstream = {
        name: 'dead',
        url: await refusingUrl(),
        dialects: DIALECT_IDS,
        models: ['sim'],
      };
      const g = await gateway([dead, good.upstream]);
      const response = await fetch(`${g.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(Object.assign(chat('sim'), { stream: false })),
      });
      assert.equal(response.status, 200, path);
      assert.equal(response.headers.get('x-tokenwire-attempts'), 'dead, good', path);
      await response.text();
    }
  });

  it('a replica answering 503 or 429 before streaming: retried on another; a 400 is not retried', async () => {
    const busy = await replica('busy', { faults: 'status=503' });
    const limited = await replica('limited', { faults: 'status=429' });
    const good = await replica('good');
    const g = await gateway([busy.upstream, limited.upstream, good.upstream], { balance: 'round-robin' });
    const answer = await post(g.url, chat('sim'));
    assert.equal(answer.status, 200);
    assert.equal(answer.headers.get('x-tokenwire-upstream'), 'good');
    assert.equal(answer.headers.get('x-tokenwire-attempts'), 'busy, limited, good');
    const bad = await post(g.url, Object.assign(chat('sim'), { max_tokens: -1 }));
    assert.equal(bad.status, 400);
    assert.equal(bad.headers.get('x-tokenwire-attempts'), null);
  });

  it("when every attempt fails, the client gets the last upstream's status and message in its own dialect", async () => {
    const one = await replica('one', { faults: 'status=503' });
    const two = await replica('two', { faults: 'status=502' });
    const g = await gateway([one.upstream, two.upstream]);
    const result = await fetch(`${g.url}/api/chat`, {
      method: 'POST',
      body: JSON.stringify({ model: 'sim', messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.ok(result.status === 502 || result.status === 503, String(result.status));
    const body = (await result.json()) as { error?: unknown };
    assert.equal(typeof body.error, 'string', "Ollama's error shape");
    assert.equal(result.headers.get('x-tokenwire-attempts')?.split(', ').length, 2);
  });

  it('/healthz reports each upstream, /metrics counts picks, failures and cooldowns, the log line names the attempts', async () => {
    const good = await replica('good');
    const dead: Upstream = { name: 'dead', url: await refusingUrl(), dialects: DIALECT_IDS, models: ['sim'] };
    const logs: RequestLog[] = [];
    const g = await gateway([dead, good.upstream], { onLog: (record) => logs.push(record) });
    assert.equal((await post(g.url, chat('sim'))).status, 200);
    const health = (await (await fetch(`${g.url}/healthz`)).json()) as {
      upstreams: { name: string; state: string; inFlight: number; models: string[]; lastFailure?: string }[];
    };
    const byName = new Map(health.upstreams.map((u) => [u.name, u]));
    assert.equal(byName.get('dead')?.state, 'cooling');
    assert.equal(byName.get('dead')?.lastFailure, 'unreachable');
    assert.deepEqual(byName.get('good'), { name: 'good', state: 'up', inFlight: 0, models: ['sim'] });
    const metrics = await (await fetch(`${g.url}/metrics`)).text();
    assert.match(metrics, /tokenwire_upstream_up\{upstream="dead"\} 0/);
    assert.match(metrics, /tokenwire_upstream_up\{upstream="good"\} 1/);
    assert.match(metrics, /tokenwire_upstream_picks_total\{upstream="good"\} 1/);
    assert.match(metrics, /tokenwire_upstream_failures_total\{kind="unreachable",upstream="dead"\} 1/);
    assert.match(metrics, /tokenwire_upstream_cooldowns_total\{upstream="dead"\} 1/);
    assert.deepEqual(logs.at(-1)?.attempts, ['dead']);
    assert.equal(logs.at(-1)?.upstream, 'good');
  });

  it('a replica that holds its headers past its timeout after the 200 went out: keepalives, then another replica answers on the same stream', async () => {
    const slow = await scriptServer({ headersDelayMs: 20_000, steps: [{ write: 'never' }] });
    open.push(slow);
    const good = await replica('good');
    const logs: RequestLog[] = [];
    const g = await gateway(
      [
        { name: 'slow', url: slow.url, dialects: DIALECT_IDS, models: ['sim'], timeouts: { connectMs: 800 } },
        Object.assign({}, good.upstream, { timeouts: { connectMs: 800 } }),
      ],
      {
        upstreamHeadersWaitMs: 50,
        keepaliveMs: 100,
        balance: 'round-robin',
        onLog: (record) => logs.push(record),
      },
    );
    const answer = await post(g.url, chat('sim'));
    assert.equal(answer.status, 200);
    assert.equal(answer.headers.get('x-tokenwire-upstream'), 'slow', 'the 200 went out while slow was tried');
    const firstData = answer.text.indexOf('data: ');
    assert.ok(answer.text.slice(0, firstData).includes('\n:'), 'keepalive comments while it waited');
    assert.match(answer.text, /data: \[DONE\]/);
    assert.equal(good.sim.stats.log.length, 1, 'the good replica answered');
    assert.deepEqual(logs.at(-1)?.attempts, ['slow']);
    assert.equal(logs.at(-1)?.upstream, 'good');
    assert.equal(logs.at(-1)?.outcome, 'completed');
    const metrics = await (await fetch(`${g.url}/metrics`)).text();
    assert.match(
      metrics,
      /tokenwire_upstream_retries_total\{outcome="timeout",route="openai-chat",upstream="slow"\} 1/,
    );
  });

  it('the client library reads a pooled stream like any other', async () => {
    const a = await replica('a');
    const dead: Upstream = { name: 'dead', url: await refusingUrl(), dialects: DIALECT_IDS, models: ['sim'] };
    const g = await gateway([dead, a.upstream]);
    const result = await complete({ url: `${g.url}/v1/chat/completions`, body: chat('sim') });
    assert.equal(result.complete, true);
    assert.ok(result.text.length > 0);
  });
});
