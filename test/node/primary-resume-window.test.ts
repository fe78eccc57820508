import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type ClusterMessage, ClusterSender, unbatch } from '../../src/node/cluster-sender.ts';
import {
  PrimaryResumeStore,
  ResumeStoreHost,
  SUBSCRIPTION_WINDOW_CHARS,
} from '../../src/node/primary-resume-store.ts';
import { MemoryResumeStore } from '../../src/server/resume/memory-resume-store.ts';
import type { StreamMeta } from '../../src/server/resume/resume-store.ts';

// A follower that stops reading, under `serve --workers` (no Redis): the primary sent a follower's frames to its worker as
// fast as it read them, so a follower that stopped reading held the whole live stream in its worker.
// The primary now sends at most a window ahead of what the worker's reader took.

const META: StreamMeta = {
  dialect: 'openai-chat',
  flavor: undefined,
  headers: { 'content-type': 'text/event-stream' },
  model: 'sim',
  createdAt: 0,
};

/** A primary and two workers over an in-memory channel like the IPC one; counts frame characters sent to each worker. */
function cluster() {
  const host = new ResumeStoreHost(new MemoryResumeStore({ maxBytesPerStream: 64 * 1024 * 1024 }));
  const framesTo = new Map<number, number>();
  const stores: PrimaryResumeStore[] = [];
  for (let w = 1; w <= 2; w++) {
    let store: PrimaryResumeStore | undefined;
    const toWorker = new ClusterSender((message) => {
      const copy = JSON.parse(JSON.stringify(message)) as unknown;
      for (const m of unbatch(copy))
        if (m.tw === 'rs-frames')
          for (const f of m.f as [number, string][]) framesTo.set(w, (framesTo.get(w) ?? 0) + f[1].length);
      setImmediate(() => {
        for (const m of unbatch(copy)) store!.receive(m);
      });
    });
    const toPrimary = new ClusterSender((message) => {
      const copy = JSON.parse(JSON.stringify(message)) as unknown;
      setImmediate(() => {
        for (const m of unbatch(copy)) assert.ok(host.receive(w, toWorker, m as ClusterMessage), m.tw);
      });
    });
    store = new PrimaryResumeStore(toPrimary);
    stores.push(store);
  }
  return { stores, framesTo };
}

const turns = async (n: number) => {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
};

describe('PrimaryResumeStore: a follower that stops reading', () => {
  it('gets at most a window of frames ahead of its reader; the rest when it reads on', async () => {
    const { stores, framesTo } = cluster();
    const [a, b] = stores as [PrimaryResumeStore, PrimaryResumeStore];
    const payload = 'x'.repeat(1024);
    const count = 4000; // about 4 Mi characters: 16 windows
    await a.open('s1', META);
    a.append('s1', { seq: 1, data: payload });
    await turns(3);
    const subscription = await b.subscribe('s1', 0, new AbortController().signal);
    const frames = subscription!.frames[Symbol.asyncIterator]();
    assert.equal((await frames.next()).value?.seq, 1);
    // The producer writes the whole stream while the follower reads nothing more.
    for (let seq = 2; seq <= count; seq++) {
      a.append('s1', { seq, data: payload });
      if (seq % 100 === 0) await turns(2);
    }
    await a.close('s1', 'complete');
    await turns(50);
    const sent = framesTo.get(2) ?? 0;
    assert.ok(sent < (count * payload.length) / 4, `not the whole stream: ${sent} characters`);
    assert.ok(
      sent <= SUBSCRIPTION_WINDOW_CHARS + payload.length,
      `sent to the idle follower's worker: ${sent} characters (window ${SUBSCRIPTION_WINDOW_CHARS})`,
    );
    // It reads on: every frame, in order, then the stream's status.
    let expected = 2;
    for (let next = await frames.next(); next.done !== true; next = await frames.next()) {
      assert.equal(next.value.seq, expected);
      expected += 1;
    }
    assert.equal(expected, count + 1);
    assert.equal(subscription!.status(), 'complete');
  });
});
