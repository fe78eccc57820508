import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { RedisResumeStore } from '../../src/node/redis-resume-store.ts';
import { serve } from '../../src/node/serve.ts';
import { createGateway, type Gateway } from '../../src/server/create-gateway.ts';
import { NO_STORE_RETAIN_MS } from '../../src/server/resume/resume-store.ts';
import { createSim } from '../../src/sim/create-sim.ts';
import { startRedis, type TestRedis } from '../helpers/redis-server.ts';
import { readSse } from '../helpers/sse-read.ts';

let redis: TestRedis;
const cleanups: (() => Promise<unknown> | unknown)[] = [];
before(async () => {
  redis = await startRedis();
});
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await redis?.stop();
});

/** A gateway replica on its own Redis store (all on the same Redis), in front of its own simulator. */
async function replica(): Promise<{ url: string; gateway: Gateway }> {
  const sim = createSim({ timing: { tokensPerSecond: 4000, loadMs: 0 } });
  const store = new RedisResumeStore({
    url: redis.url,
    heartbeatMs: 50,
    producerTimeoutMs: 300,
    blockMs: 100,
  });
  const gateway = createGateway({
    upstreams: [{ name: 'sim', url: 'http://sim', dialects: ['openai-responses'], fetch: sim.fetch }],
    keepaliveMs: 0,
    resumeStore: store,
  });
  const server = await serve(gateway.fetch);
  cleanups.push(async () => {
    await gateway.close();
    await server.close();
  });
  return { url: server.url, gateway };
}

const postStream = (url: string, body: Record<string, unknown>) =>
  fetch(`${url}/v1/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(
      Object.assign({ model: 'sim', stream: true, input: 'hi', max_output_tokens: 6 }, body),
    ),
  });

describe('the Responses cursor on the Redis resume store', () => {
  it('another replica serves GET /v1/responses/{id}?stream=true&starting_after=N: no map beside the store', async () => {
    const a = await replica();
    const b = await replica();
    const written = await postStream(a.url, {});
    const original = (await readSse(written)).frames;
    const responseId = (JSON.parse(original[0]!.data) as { response: { id: string } }).response.id;
    const replayed = await fetch(`${b.url}/v1/responses/${responseId}?stream=true&starting_after=2`);
    assert.equal(replayed.status, 200);
    const frames = (await readSse(replayed)).frames;
    assert.deepEqual(
      frames.map((frame) => frame.data),
      original.slice(3).map((frame) => frame.data),
    );
    const object = (await (await fetch(`${b.url}/v1/responses/${responseId}`)).json()) as { id: string };
    assert.equal(object.id, responseId);
  });

  it('store: false is refused by id and its keys expire within NO_STORE_RETAIN_MS of its end', async () => {
    const a = await replica();
    const kept = await postStream(a.url, {});
    await kept.text();
    const noStore = await postStream(a.url, { store: false });
    const frames = (await readSse(noStore)).frames;
    const streamId = noStore.headers.get('x-tokenwire-stream-id')!;
    const responseId = (JSON.parse(frames[0]!.data) as { response: { id: string } }).response.id;
    const refused = await fetch(`${a.url}/v1/responses/${responseId}?stream=true`);
    assert.equal(refused.status, 404);
    await refused.body?.cancel();
    const resumed = await fetch(`${a.url}/v1/responses`, { headers: { 'last-event-id': `${streamId}.1` } });
    assert.equal(resumed.status, 200, 'Last-Event-ID resume still works');
    assert.equal((await readSse(resumed)).frames.length, frames.length - 1);
    const client = new Redis(redis.url);
    cleanups.push(() => client.quit());
    // The ending's write sets the expiry (close is not awaited by the relay): look until it is there.
    let ttl = -1;
    for (let i = 0; i < 100 && (ttl < 0 || ttl > NO_STORE_RETAIN_MS); i++) {
      ttl = await client.pttl(`tokenwire:{${streamId}}:frames`);
      if (ttl < 0 || ttl > NO_STORE_RETAIN_MS) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.ok(ttl > 0 && ttl <= NO_STORE_RETAIN_MS, `frames expire within the retention (pttl ${ttl})`);
    const metaTtl = await client.pttl(`tokenwire:{${streamId}}:meta`);
    assert.ok(metaTtl > 0 && metaTtl <= NO_STORE_RETAIN_MS, `meta too (pttl ${metaTtl})`);
    const keptTtl = await client.pttl(`tokenwire:{${kept.headers.get('x-tokenwire-stream-id')}}:meta`);
    assert.ok(keptTtl > NO_STORE_RETAIN_MS, `a stored stream keeps the store's TTL (pttl ${keptTtl})`);
  });
});
