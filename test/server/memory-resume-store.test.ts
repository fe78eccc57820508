import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { MemoryResumeStore } from '../../src/server/resume/memory-resume-store.ts';
import { NoSuchEventError, type StoredFrame, type StreamMeta } from '../../src/server/resume/resume-store.ts';

const meta = (extra: Partial<StreamMeta> = {}): StreamMeta => ({
  dialect: 'openai-chat',
  flavor: undefined,
  headers: {},
  model: 'm',
  createdAt: 0,
  ...extra,
});
const frame = (seq: number): StoredFrame => ({ seq, data: `{"n":${seq}}` });
const signal = new AbortController().signal;

async function finished(store: MemoryResumeStore, id: string, extra: Partial<StreamMeta> = {}, frames = 2) {
  await store.open(id, meta(extra));
  for (let seq = 1; seq <= frames; seq++) store.append(id, frame(seq));
  await store.close(id, 'complete');
}

async function seqs(store: MemoryResumeStore, id: string, after: number, owner?: string): Promise<number[]> {
  const subscription = await store.subscribe(id, after, signal, owner);
  assert.ok(subscription !== undefined, `${id} is resumable`);
  const out: number[] = [];
  for await (const f of subscription.frames) out.push(f.seq);
  return out;
}

describe('MemoryResumeStore', () => {
  it('resumes a stream only for its owner: any other (or none) sees an unknown stream', async () => {
    const store = new MemoryResumeStore();
    const owner = 'a'.repeat(64);
    await finished(store, 'owned', { owner });
    assert.equal(await store.subscribe('owned', 0, signal, 'b'.repeat(64)), undefined);
    assert.equal(await store.subscribe('owned', 0, signal), undefined);
    assert.equal(
      await store.subscribe('owned', 99, signal, 'b'.repeat(64)),
      undefined,
      'past the end: still unknown',
    );
    assert.deepEqual(await seqs(store, 'owned', 0, owner), [1, 2]);
    // Streams opened without keys stay resumable without one.
    await finished(store, 'open');
    assert.deepEqual(await seqs(store, 'open', 1), [2]);
  });

  it('throws NoSuchEventError for an id past the last frame, finished or live', async () => {
    const store = new MemoryResumeStore();
    await finished(store, 'done', {}, 3);
    assert.deepEqual(await seqs(store, 'done', 3), []);
    await assert.rejects(store.subscribe('done', 4, signal), NoSuchEventError);
    await store.open('live', meta());
    store.append('live', frame(1));
    await assert.rejects(store.subscribe('live', 2, signal), NoSuchEventError);
    await store.open('empty', meta());
    await assert.rejects(store.subscribe('empty', 1, signal), NoSuchEventError);
  });

  it('when full, evicts from the client holding the most: a flood of 1000 streams from B evicts B’s own, never A’s', async () => {
    const store = new MemoryResumeStore();
    await finished(store, 'victim', { client: 'key:a' });
    for (let i = 0; i < 1000; i++) await finished(store, `flood-${i}`, { client: 'key:b' });
    assert.deepEqual(await seqs(store, 'victim', 0), [1, 2]);
    assert.equal(store.size, 1000, 'A’s one stream and B’s last 999');
    assert.equal(await store.subscribe('flood-0', 0, signal), undefined);
    assert.deepEqual(await seqs(store, 'flood-999', 0), [1, 2]);
    // Several quiet clients and a live flood: the flooder's live streams go, the quiet ones' stay.
    const mixed = new MemoryResumeStore({ maxStreams: 50 });
    for (let c = 0; c < 10; c++) await finished(mixed, `quiet-${c}`, { client: `ip:${c}` });
    for (let i = 0; i < 200; i++) await mixed.open(`live-${i}`, meta({ client: 'ip:flood' }));
    for (let c = 0; c < 10; c++) assert.deepEqual(await seqs(mixed, `quiet-${c}`, 0), [1, 2]);
    assert.equal(mixed.size, 50);
  });

  it('one client alone may fill the whole store (one shared key loses nothing to the per-client policy)', async () => {
    const store = new MemoryResumeStore();
    for (let i = 0; i < 1000; i++) await store.open(`s-${i}`, meta({ client: 'key:only' }));
    assert.equal(store.size, 1000);
    assert.ok((await store.subscribe('s-0', 0, signal)) !== undefined, 'the first is still resumable');
  });

  it('a client at its bound loses its oldest finished stream before its live ones; the total bound holds too', async () => {
    const store = new MemoryResumeStore({ maxStreams: 5, maxStreamsPerClient: 2 });
    await store.open('live-1', meta({ client: 'ip:1' }));
    await finished(store, 'done-1', { client: 'ip:1' });
    await finished(store, 'done-2', { client: 'ip:1' });
    assert.ok((await store.subscribe('live-1', 0, signal)) !== undefined, 'the live stream stays');
    assert.equal(await store.subscribe('done-1', 0, signal), undefined, 'the oldest finished one went');
    // Only live ones left at the bound: the oldest live one goes, and its followers see it lost.
    await store.open('live-2', meta({ client: 'ip:2' }));
    const follower = await store.subscribe('live-2', 0, signal);
    await store.open('live-3', meta({ client: 'ip:2' }));
    await store.open('live-4', meta({ client: 'ip:2' }));
    for await (const _ of follower!.frames) assert.fail('no frames');
    assert.equal(follower!.status(), 'lost');
    // Without a client, the total bound still applies.
    for (let i = 0; i < 10; i++) await finished(store, `anon-${i}`);
    assert.ok(store.size <= 5, `held ${store.size}`);
  });

  it('frees a stream evicted to make room at once, not when its expiry comes (its frames are not kept)', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const store = new MemoryResumeStore({ maxStreams: 2 });
    let kept: WeakRef<StoredFrame> | undefined;
    await (async () => {
      await store.open('a', meta());
      const big: StoredFrame = { seq: 1, data: 'x'.repeat(100_000) };
      kept = new WeakRef(big);
      store.append('a', big);
      await store.close('a', 'complete');
    })();
    await finished(store, 'b');
    await finished(store, 'c'); // full: `a`, the oldest finished, is evicted
    assert.equal(await store.subscribe('a', 0, signal), undefined);
    for (let i = 0; i < 5 && kept!.deref() !== undefined; i++) {
      await new Promise((resolve) => setImmediate(resolve));
      gc();
    }
    assert.equal(kept!.deref(), undefined, 'the evicted stream’s frame is garbage');
    assert.deepEqual(await seqs(store, 'c', 0), [1, 2]);
  });

  it('keeps its payload characters under maxBytes in all: past it the oldest finished stream goes', async () => {
    const store = new MemoryResumeStore({ maxBytes: 250 });
    const sized = (seq: number): StoredFrame => ({ seq, data: 'y'.repeat(100) });
    for (const id of ['a', 'b']) {
      await store.open(id, meta());
      store.append(id, sized(1));
      await store.close(id, 'complete');
    }
    await store.open('c', meta());
    store.append('c', sized(1)); // 300 characters: `a`, the oldest finished, goes
    assert.equal(await store.subscribe('a', 0, signal), undefined);
    assert.deepEqual(await seqs(store, 'b', 0), [1]);
    assert.equal(store.size, 2);
    store.append('c', sized(2)); // 300 again: `b` goes, never the live stream being written
    assert.equal(await store.subscribe('b', 0, signal), undefined);
    assert.equal(store.size, 1);
    await store.close('c', 'complete');
    assert.deepEqual(await seqs(store, 'c', 0), [1, 2]);
  });
});
