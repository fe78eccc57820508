import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { PoolMonitor } from '../../../src/server/pool/pool-monitor.ts';
import { UpstreamPool } from '../../../src/server/pool/upstream-pool.ts';
import type { Upstream } from '../../../src/server/upstream/upstream.ts';
import { fixturePath } from '../../helpers/paths.ts';

const upstream = (name: string, extra: Partial<Upstream> = {}): Upstream =>
  Object.assign({ name, url: `http://${name}.test`, dialects: ['openai-chat'] as const }, extra);

describe('UpstreamPool', () => {
  it('routes a model to the replicas that list it (aliases, :latest and @ suffixes too), the union listed once', () => {
    const pool = new UpstreamPool([
      upstream('a', { models: ['qwen'] }),
      upstream('b', { models: ['qwen', 'llama3'] }),
      upstream('c', { models: ['phi'], aliases: { chat: 'phi' } }),
    ]);
    assert.deepEqual(
      pool.serving('qwen', 'openai-chat').map((r) => r.name),
      ['a', 'b'],
    );
    assert.deepEqual(
      pool.serving('llama3:latest', 'ollama-chat').map((r) => r.name),
      ['b'],
    );
    assert.deepEqual(
      pool.serving('chat', 'openai-chat').map((r) => r.name),
      ['c'],
    );
    assert.equal(UpstreamPool.serverModelName(pool.replicas[2]!, 'chat'), 'phi');
    assert.deepEqual(pool.serving('nope', 'openai-chat'), [], 'nobody serves it');
    assert.equal(pool.serving('nope', 'llamacpp').length, 3, "llama.cpp's /completion ignores the name");
    assert.deepEqual(pool.models(), ['qwen', 'llama3', 'phi', 'chat']);
  });

  it('refuses two upstreams of one name, and a weight that is not above 0', () => {
    assert.throws(() => new UpstreamPool([upstream('a'), upstream('a')]), /two upstreams are named "a"/);
    assert.throws(() => new UpstreamPool([upstream('a', { weight: 0 })]), /weight must be a number above 0/);
  });

  it('leases count streams in flight; a replica at its stream cap or cooling takes none; tried ones are skipped', () => {
    let now = 0;
    const pool = new UpstreamPool([upstream('a', { maxStreams: 1 }), upstream('b')], {
      now: () => now,
      health: { failuresToCool: 3, cooldownMs: 1000, maxCooldownMs: 8000 },
    });
    const [a, b] = pool.replicas;
    const first = pool.acquire(undefined, 'openai-chat')!;
    assert.equal(first.replica, a, 'ties go in turn: a first');
    const second = pool.acquire(undefined, 'openai-chat')!;
    assert.equal(second.replica, b, 'a is at its cap');
    assert.equal(pool.acquire(undefined, 'openai-chat', undefined, new Set([b!]))?.replica, undefined);
    first.release('ok');
    second.release('unreachable');
    second.release('unreachable');
    assert.equal(b!.inFlight, 0, 'a lease is released once');
    assert.equal(b!.failures.unreachable, 1);
    const onA = pool.acquire(undefined, 'openai-chat');
    assert.equal(onA?.replica, a, 'b cools down');
    onA!.release('ok');
    now = 1000;
    const trial = pool.acquire(undefined, 'openai-chat', undefined, new Set([a!]));
    assert.equal(trial?.replica, b, 'after its cooldown, b gets a trial request');
    assert.equal(pool.acquire(undefined, 'openai-chat')?.replica, a, 'one trial request at a time');
  });

  it('when every replica of a model is cooling down, they take requests again rather than none', () => {
    const pool = new UpstreamPool([upstream('only', { maxStreams: 1 })], { now: () => 0 });
    pool.acquire(undefined, 'openai-chat')!.release('unreachable');
    assert.equal(pool.replicas[0]!.health.state(0), 'cooling');
    const lease = pool.acquire(undefined, 'openai-chat');
    assert.equal(lease?.replica.name, 'only');
    assert.equal(pool.acquire(undefined, 'openai-chat'), undefined, 'its stream cap still holds');
    lease!.release('ok');
    pool.replicas[0]!.health.probed('loading', 0);
    assert.equal(pool.acquire(undefined, 'openai-chat'), undefined, 'a model still loading takes none');
  });
});

describe('PoolMonitor', () => {
  const metrics = readFileSync(fixturePath('pool/llamacpp-b10108-metrics-busy.txt'), 'utf8');
  const serverAnswering =
    (health: () => Response, extra: Record<string, () => Response> = {}) =>
    (request: Request): Response => {
      const path = new URL(request.url).pathname;
      if (path === '/health') return health();
      return extra[path]?.() ?? new Response('not found', { status: 404 });
    };

  it("reads each server's health route: up, llama-server's 503 while loading, down; and its load", async () => {
    let loading = true;
    const llama = upstream('llama', {
      dialects: ['llamacpp', 'openai-chat'],
      fetch: serverAnswering(
        () =>
          loading
            ? Response.json(
                { error: { code: 503, message: 'Loading model', type: 'unavailable_error' } },
                { status: 503 },
              )
            : Response.json({ status: 'ok' }),
        { '/metrics': () => new Response(metrics) },
      ),
    });
    const dead = upstream('dead', {
      fetch: () => {
        throw new TypeError('fetch failed: connect ECONNREFUSED');
      },
    });
    const ollama = upstream('ollama', {
      dialects: ['ollama-chat', 'ollama-generate'],
      fetch: (request) =>
        new URL(request.url).pathname === '/api/version'
          ? Response.json({ version: '0.12.0' })
          : new Response('404 page not found', { status: 404 }),
    });
    const pool = new UpstreamPool([llama, dead, ollama]);
    const monitor = new PoolMonitor(pool, { scrapeLoad: true });
    await monitor.checkOnce();
    const [l, d, o] = pool.replicas;
    assert.equal(l!.health.state(Date.now()), 'loading');
    assert.equal(d!.health.state(Date.now()), 'cooling');
    assert.equal(o!.health.state(Date.now()), 'up');
    assert.equal(l!.load, undefined, 'no load read while loading');
    loading = false;
    await monitor.checkOnce();
    assert.equal(l!.health.available(Date.now()), true);
    assert.deepEqual(l!.load, { running: 2, waiting: 1 });
  });

  it("falls back to llama-server's /slots when /metrics is off", async () => {
    const slots = readFileSync(fixturePath('pool/llamacpp-b10108-slots-busy.json'), 'utf8');
    const llama = upstream('llama', {
      dialects: ['llamacpp'],
      fetch: serverAnswering(() => Response.json({ status: 'ok' }), {
        '/metrics': () =>
          Response.json(
            { error: { code: 501, message: 'This server does not support metrics endpoint.' } },
            { status: 501 },
          ),
        '/slots': () => new Response(slots, { headers: { 'content-type': 'application/json' } }),
      }),
    });
    const pool = new UpstreamPool([llama]);
    await new PoolMonitor(pool, { scrapeLoad: true }).checkOnce();
    assert.deepEqual(pool.replicas[0]!.load, { running: 2 });
  });

  it('reads a discovered model list again, so a model the server loads later is routed; a configured list stays', async () => {
    let listed = ['qwen'];
    const discovered = upstream('discovered', {
      models: ['qwen'],
      discoverModels: true,
      fetch: serverAnswering(() => Response.json({ status: 'ok' }), {
        '/v1/models': () => Response.json({ object: 'list', data: listed.map((id) => ({ id })) }),
      }),
    });
    const fixed = upstream('fixed', {
      models: ['phi'],
      fetch: serverAnswering(() => Response.json({ status: 'ok' }), {
        '/v1/models': () => Response.json({ object: 'list', data: [{ id: 'other' }] }),
      }),
    });
    const pool = new UpstreamPool([discovered, fixed]);
    const monitor = new PoolMonitor(pool);
    listed = ['qwen', 'llama'];
    await monitor.checkOnce();
    assert.deepEqual(
      pool.serving('llama', 'openai-chat').map((r) => r.name),
      ['discovered'],
    );
    assert.deepEqual(pool.replicas[1]!.models, ['phi'], 'a configured list is not replaced');
    assert.deepEqual(pool.models(), ['qwen', 'llama', 'phi']);
  });
});
