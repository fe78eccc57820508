import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { DIALECT_IDS } from '../../src/dialects/dialect.ts';
import { RedisResumeStore } from '../../src/node/redis-resume-store.ts';
import { serve } from '../../src/node/serve.ts';
import { createGuardedGateway } from '../../src/server/guard/guard-gateway.ts';
import { createSim } from '../../src/sim/create-sim.ts';
import { startRedis } from '../helpers/redis-server.ts';

// A resumed stream cut by a Redis outage said "its producer is gone" — it must say
// what happened: the resume store is unreachable.

const cleanups: (() => Promise<unknown> | unknown)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** Reads `body` as text until `until` holds; the rest keeps coming through `rest()`. */
async function reader(body: ReadableStream<Uint8Array>) {
  const decoder = new TextDecoder();
  const stream = body.getReader();
  let text = '';
  return {
    text: () => text,
    async until(check: (text: string) => boolean): Promise<void> {
      while (!check(text)) {
        const next = await stream.read();
        if (next.done) return;
        text += decoder.decode(next.value, { stream: true });
      }
    },
    cancel: () => stream.cancel().catch(() => {}),
  };
}

describe('a resumed stream cut by a Redis outage says so', { timeout: 90_000 }, () => {
  it('ends with the dialect error naming the unreachable store, not "producer is gone"', async () => {
    const redis = await startRedis();
    cleanups.push(() => redis.stop());
    const store = new RedisResumeStore({ url: redis.url, blockMs: 200 });
    // A slow stream (5 tokens a second): still live when Redis goes.
    const sim = createSim({ timing: { tokensPerSecond: 5, loadMs: 0 } });
    const { gateway, fetch } = createGuardedGateway({
      upstreams: [
        { name: 'sim', url: 'http://sim.internal', dialects: DIALECT_IDS, fetch: sim.fetch, models: ['sim'] },
      ],
      keepaliveMs: 0,
      resumeStore: store,
    });
    const served = await serve(fetch);
    cleanups.push(async () => {
      await gateway.close();
      await served.close();
      await store.shutdown();
    });
    const body = JSON.stringify({
      model: 'sim',
      stream: true,
      messages: [{ role: 'user', content: 'tell me a long story about rivers' }],
    });
    const post = (headers: Record<string, string> = {}) =>
      globalThis.fetch(`${served.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body,
      });
    const opened = await post();
    assert.equal(opened.status, 200);
    const streamId = opened.headers.get('x-tokenwire-stream-id')!;
    const producer = await reader(opened.body!);
    cleanups.push(() => producer.cancel());
    await producer.until((text) => text.includes(`id: ${streamId}.3\n`));
    const resumed = await post({ 'last-event-id': `${streamId}.1` });
    assert.equal(resumed.status, 200);
    const follower = await reader(resumed.body!);
    // Following live: an event the producer wrote after the resume began.
    await follower.until((text) => text.includes(`id: ${streamId}.5\n`));
    assert.ok(!producer.text().includes('[DONE]'), 'the stream is still live');
    await redis.stop();
    await follower.until(() => false);
    const text = follower.text();
    assert.match(
      text,
      /"message": ?"the stream stopped before it finished \(the resume store \(Redis\) is unreachable: /,
    );
    assert.doesNotMatch(text, /producer is gone|client disconnected/);
  });
});
