import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type ClusterMessage, ClusterSender, unbatch } from '../../src/node/cluster-sender.ts';
import { PrimaryResumeStore, ResumeStoreHost } from '../../src/node/primary-resume-store.ts';
import { MemoryResumeStore } from '../../src/server/resume/memory-resume-store.ts';
import {
  NoSuchEventError,
  ResumeGapError,
  type StoredFrame,
  type StreamMeta,
} from '../../src/server/resume/resume-store.ts';

const META: StreamMeta = {
  dialect: 'openai-chat',
  flavor: undefined,
  headers: { 'content-type': 'text/event-stream' },
  model: 'sim',
  createdAt: 0,
};
const frame = (seq: number): StoredFrame =>
  seq === 3
    ? { seq, data: `{"n":${seq}}`, kind: 'legacy-error-field' }
    : { seq, data: `{"n":${seq},"t":"é東"}` };

/**
 * A primary and `workers` workers joined by an in-memory channel that behaves like the IPC one: JSON
 * copies, delivered in order, later (never within the send call). Counts the messages that crossed.
 */
function cluster(workers: number, maxBytesPerStream?: number) {
  const memory = new MemoryResumeStore({ maxBytesPerStream });
  const host = new ResumeStoreHost(memory);
  const sent = { toPrimary: 0 };
  const stores: PrimaryResumeStore[] = [];
  for (let w = 1; w <= workers; w++) {
    let store: PrimaryResumeStore | undefined;
    const toWorker = new ClusterSender((message) => {
      const copy = JSON.parse(JSON.stringify(message)) as unknown;
      setImmediate(() => {
        for (const m of unbatch(copy)) store!.receive(m);
      });
    });
    const toPrimary = new ClusterSender((message) => {
      sent.toPrimary += 1;
      const copy = JSON.parse(JSON.stringify(message)) as unknown;
      setImmediate(() => {
        for (const m of unbatch(copy)) assert.ok(host.receive(w, toWorker, m as ClusterMessage), m.tw);
      });
    });
    store = new PrimaryResumeStore(toPrimary);
    stores.push(store);
  }
  return { memory, host, stores, sent };
}

async function read(frames: AsyncIterable<StoredFrame>): Promise<StoredFrame[]> {
  const out: StoredFrame[] = [];
  for await (const f of frames) out.push(f);
  return out;
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
const signal = new AbortController().signal;

describe('PrimaryResumeStore: one memory store in the primary, shared by every worker (serve --workers)', () => {
  it('a stream written by worker 1 resumes on worker 2: stored frames, then live ones, then its status', async () => {
    const { stores, memory } = cluster(2);
    const [a, b] = stores as [PrimaryResumeStore, PrimaryResumeStore];
    await a.open('s1', { ...META, owner: 'k'.repeat(64) });
    for (let seq = 1; seq <= 3; seq++) a.append('s1', frame(seq));
    // A client resumes from an id it was sent: the turn that wrote it to its socket sent the appends.
    await turn();
    const subscription = await b.subscribe('s1', 1, signal, 'k'.repeat(64));
    assert.ok(subscription !== undefined);
    assert.deepEqual(subscription.meta, { ...META, owner: 'k'.repeat(64) });
    const reading = read(subscription.frames);
    await turn();
    // Live frames, written after the subscriber caught up, reach it too.
    a.append('s1', frame(4));
    a.append('s1', frame(5));
    await a.close('s1', 'complete');
    const frames = await reading;
    assert.deepEqual(frames, [frame(2), frame(3), frame(4), frame(5)]);
    assert.equal(subscription.status(), 'complete');
    assert.equal(memory.size, 1);
    // Another owner (or none) sees an unknown stream, exactly as with the memory store.
    assert.equal(await b.subscribe('s1', 0, signal, 'x'.repeat(64)), undefined);
    assert.equal(await b.subscribe('s1', 0, signal), undefined);
    assert.equal(await b.subscribe('nope', 0, signal), undefined);
  });

  it('passes on the memory store’s gap and no-such-event errors', async () => {
    const { stores } = cluster(2, 64);
    const [a, b] = stores as [PrimaryResumeStore, PrimaryResumeStore];
    await a.open('s2', META);
    // 64 payload characters kept per stream: the first frames go.
    for (let seq = 1; seq <= 10; seq++) a.append('s2', { seq, data: 'x'.repeat(20) });
    await a.close('s2', 'complete');
    await turn();
    await assert.rejects(b.subscribe('s2', 0, signal), (error: unknown) => {
      assert.ok(error instanceof ResumeGapError);
      assert.equal(error.firstAvailableSeq, 8);
      return true;
    });
    await assert.rejects(b.subscribe('s2', 11, signal), (error: unknown) => {
      assert.ok(error instanceof NoSuchEventError);
      assert.equal(error.lastSeq, 10);
      return true;
    });
    assert.deepEqual(
      (await read((await b.subscribe('s2', 9, signal))!.frames)).map((f) => f.seq),
      [10],
    );
  });

  it('open, appends and close are batched: a turn’s cross in one message, in order', async () => {
    const { stores, sent } = cluster(1);
    const [a] = stores as [PrimaryResumeStore];
    await a.open('s3', META);
    for (let seq = 1; seq <= 100; seq++) a.append('s3', { seq, data: 'y' });
    assert.equal(sent.toPrimary, 0, 'nothing sent per call');
    await turn();
    assert.equal(sent.toPrimary, 1, 'one message for the turn’s open and 100 appends');
    a.append('s3', { seq: 101, data: 'y' });
    await a.close('s3', 'failed');
    const subscription = await a.subscribe('s3', 99, signal);
    assert.deepEqual(
      (await read(subscription!.frames)).map((f) => f.seq),
      [100, 101],
    );
    assert.equal(subscription!.status(), 'failed');
  });

  it('a worker that dies: its unfinished streams end (lost, saying so) for readers on other workers', async () => {
    const { stores, host } = cluster(2);
    const [a, b] = stores as [PrimaryResumeStore, PrimaryResumeStore];
    await a.open('s4', META);
    a.append('s4', frame(1));
    await turn();
    const subscription = await b.subscribe('s4', 0, signal);
    const reading = read(subscription!.frames);
    await turn();
    host.workerGone(1);
    assert.deepEqual(
      (await reading).map((f) => f.seq),
      [1],
    );
    // Not "cancelled" (its client did not leave): lost, because its worker died.
    assert.equal(subscription!.status(), 'lost');
    assert.equal(subscription!.lostReason?.(), 'its worker process died');
  });

  it('a subscriber that aborts stops reading, though the stream is still live', async () => {
    const { stores } = cluster(2);
    const [a, b] = stores as [PrimaryResumeStore, PrimaryResumeStore];
    await a.open('s5', META);
    a.append('s5', frame(1));
    await turn();
    const controller = new AbortController();
    const subscription = await b.subscribe('s5', 0, controller.signal);
    const iterator = subscription!.frames[Symbol.asyncIterator]();
    assert.equal((await iterator.next()).value?.seq, 1);
    const next = iterator.next();
    controller.abort();
    assert.equal((await next).done, true, 'ends at the abort, not at the stream’s end');
    // The stream goes on; a later subscriber still gets all of it.
    a.append('s5', frame(2));
    await a.close('s5', 'complete');
    await turn();
    assert.deepEqual(
      (await read((await b.subscribe('s5', 0, signal))!.frames)).map((f) => f.seq),
      [1, 2],
    );
  });
});
