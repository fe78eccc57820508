import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { ChatRequest } from '../../../src/events/chat-request.ts';
import { ReplicaChooser, type ReplicaLoad } from '../../../src/server/pool/choose-replica.ts';
import { conversationKey } from '../../../src/server/pool/prefix-key.ts';

const replicas = (n: number, extra: Partial<ReplicaLoad> = {}): ReplicaLoad[] =>
  Array.from({ length: n }, (_, i) => Object.assign({ name: `r${i}`, weight: 1, inFlight: 0 }, extra));

function counts(picks: readonly (ReplicaLoad | undefined)[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const pick of picks) if (pick !== undefined) out[pick.name] = (out[pick.name] ?? 0) + 1;
  return out;
}

describe('ReplicaChooser', () => {
  it('least-busy: the replica with fewest streams for its weight; one request at a time still spreads', () => {
    const chooser = new ReplicaChooser('least-busy');
    const pool = replicas(3);
    assert.deepEqual(counts(Array.from({ length: 9 }, () => chooser.choose(pool))), { r0: 3, r1: 3, r2: 3 });
    const uneven = [
      { name: 'a', weight: 1, inFlight: 2 },
      { name: 'b', weight: 2, inFlight: 3 },
      { name: 'c', weight: 1, inFlight: 4 },
    ];
    assert.equal(chooser.choose(uneven)?.name, 'b', '3/2 is less than 2/1');
  });

  it('round-robin: smooth and weighted', () => {
    const chooser = new ReplicaChooser('round-robin');
    const pool = [
      { name: 'a', weight: 2, inFlight: 0 },
      { name: 'b', weight: 1, inFlight: 0 },
    ];
    const picks = Array.from({ length: 6 }, () => chooser.choose(pool)?.name);
    assert.deepEqual(picks, ['a', 'b', 'a', 'a', 'b', 'a']);
  });

  it('prefix: every chooser sends a key to the same replica, and keys spread over the replicas', () => {
    const pool = replicas(4);
    const first = new ReplicaChooser('prefix');
    const second = new ReplicaChooser('prefix');
    const spread: Record<string, number> = {};
    for (let i = 0; i < 400; i++) {
      const key = `system prompt ${i}`;
      const name = first.choose(pool, key)?.name as string;
      assert.equal(second.choose(pool, key)?.name, name);
      spread[name] = (spread[name] ?? 0) + 1;
    }
    for (const replica of pool) assert.ok((spread[replica.name] ?? 0) > 50, JSON.stringify(spread));
  });

  it('prefix: a replica that leaves moves only its own keys', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ minLength: 1 }), { minLength: 1, maxLength: 50 }), (keys) => {
        const chooser = new ReplicaChooser('prefix');
        const pool = replicas(4);
        for (const key of keys) {
          const before = chooser.choose(pool, key)?.name;
          const after = chooser.choose(
            pool.filter((r) => r.name !== 'r3'),
            key,
          )?.name;
          if (before !== 'r3') assert.equal(after, before);
        }
      }),
    );
  });

  it('prefix: a hot prefix spills over once its replica is more than one stream above 1.25 times its fair share', () => {
    const chooser = new ReplicaChooser('prefix');
    const key = 'the same system prompt';
    const home = chooser.choose(replicas(4), key)?.name;
    const pool = replicas(4).map((r) => (r.name === home ? Object.assign({}, r, { inFlight: 1 }) : r));
    assert.equal(
      chooser.choose(pool, key)?.name,
      home,
      '2 streams with this one: within ceil(1.25 × 2/4) + 1',
    );
    const hot = replicas(4).map((r) => (r.name === home ? Object.assign({}, r, { inFlight: 8 }) : r));
    assert.notEqual(chooser.choose(hot, key)?.name, home);
  });

  it("load: the server's own queue decides, and streams opened since the scrape count", () => {
    const chooser = new ReplicaChooser('load');
    const pool: ReplicaLoad[] = [
      { name: 'busy', weight: 1, inFlight: 0, load: { running: 4, waiting: 3 }, inFlightAtScrape: 0 },
      { name: 'idle', weight: 1, inFlight: 0, load: { running: 1, waiting: 0 }, inFlightAtScrape: 0 },
    ];
    assert.equal(chooser.choose(pool)?.name, 'idle');
    const after = [pool[0]!, Object.assign({}, pool[1]!, { inFlight: 12 })];
    assert.equal(chooser.choose(after)?.name, 'busy', '12 streams sent since the scrape outweigh its queue');
    const full = [
      { name: 'a', weight: 1, inFlight: 0, load: { running: 2, cacheUsage: 0.95 }, inFlightAtScrape: 0 },
      { name: 'b', weight: 1, inFlight: 0, load: { running: 2, cacheUsage: 0.1 }, inFlightAtScrape: 0 },
    ];
    assert.equal(chooser.choose(full)?.name, 'b', 'a fuller KV cache weighs');
  });
});

describe('conversationKey', () => {
  const system = { role: 'system' as const, content: 'You are terse.' };
  const turn1: ChatRequest = { messages: [system, { role: 'user', content: 'Hi' }] };
  const turn2: ChatRequest = {
    messages: [
      system,
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Hello.' },
      { role: 'user', content: 'More?' },
    ],
  };
  it("is the same for every turn of a conversation, and differs for another conversation's opening", () => {
    assert.equal(conversationKey(turn1), conversationKey(turn2));
    assert.notEqual(
      conversationKey(turn1),
      conversationKey({ messages: [system, { role: 'user', content: 'Yo' }] }),
    );
  });
  it('is a bare prompt itself, at most 4096 characters; nothing to key on is undefined', () => {
    assert.equal(conversationKey({ prompt: 'x'.repeat(10_000) })?.length, 4096);
    assert.equal(conversationKey({ prompt: '' }), undefined);
    assert.equal(conversationKey({}), undefined);
  });
});
