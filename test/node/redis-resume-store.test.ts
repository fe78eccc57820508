import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { extname } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { openAiChat } from '../../src/dialects/openai-chat/index.ts';
import { RedisResumeStore } from '../../src/node/redis-resume-store.ts';
import {
  NoSuchEventError,
  ResumeGapError,
  type StoredFrame,
  type StreamMeta,
} from '../../src/server/resume/resume-store.ts';
import { decodeChunks } from '../helpers/decode.ts';
import { startRedis, type TestRedis } from '../helpers/redis-server.ts';
import { readSse } from '../helpers/sse-read.ts';

const META: StreamMeta = {
  dialect: 'openai-chat',
  flavor: undefined,
  headers: { 'content-type': 'text/event-stream' },
  model: 'sim',
  createdAt: 0,
};
// Frame 5 is a legacy llama-server `error:` field: its kind is stored with it.
const frame = (seq: number): StoredFrame => ({
  seq,
  data: `{"n":${seq},"t":"é東"}`,
  kind: seq === 5 ? 'legacy-error-field' : undefined,
});

let redis: TestRedis;
const cleanups: (() => Promise<unknown> | unknown)[] = [];
before(async () => {
  redis = await startRedis();
});
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await redis?.stop();
});

function store(options: ConstructorParameters<typeof RedisResumeStore>[0] = {}): RedisResumeStore {
  const s = new RedisResumeStore({
    url: redis.url,
    heartbeatMs: 50,
    producerTimeoutMs: 300,
    blockMs: 100,
    ...options,
  });
  cleanups.push(() => s.shutdown());
  return s;
}

async function collect(frames: AsyncIterable<StoredFrame>): Promise<number[]> {
  const seqs: number[] = [];
  for await (const f of frames) seqs.push(f.seq);
  return seqs;
}

describe('RedisResumeStore', () => {
  it('replays what another replica stored, follows its live frames, and ends with its ending', async () => {
    const producer = store();
    const follower = store();
    await producer.open('s1', META);
    for (const seq of [1, 2, 3]) producer.append('s1', frame(seq));
    // Let the writes land, as they would before a client reconnects.
    await producer.ready();
    const subscription = await follower.subscribe('s1', 1, new AbortController().signal);
    assert.ok(subscription !== undefined);
    assert.deepEqual(subscription.meta, META);
    const seen = collect(subscription.frames);
    await new Promise((resolve) => setTimeout(resolve, 150)); // the follower is blocked on XREAD now
    for (const seq of [4, 5]) producer.append('s1', frame(seq));
    await producer.close('s1', 'complete');
    assert.deepEqual(await seen, [2, 3, 4, 5]);
    assert.equal(subscription.status(), 'complete');
    // A frame's payload and kind come back as they were stored.
    const again = await follower.subscribe('s1', 4, new AbortController().signal);
    for await (const f of again!.frames) assert.deepEqual(f, frame(5));
    assert.equal(again!.status(), 'complete');
  });

  it('keeps the ending kinds apart: failed and cancelled are not complete', async () => {
    const producer = store();
    for (const status of ['failed', 'cancelled'] as const) {
      await producer.open(`end-${status}`, META);
      producer.append(`end-${status}`, frame(1));
      await producer.close(`end-${status}`, status);
      const subscription = await producer.subscribe(`end-${status}`, 0, new AbortController().signal);
      assert.deepEqual(await collect(subscription!.frames), [1]);
      assert.equal(subscription!.status(), status);
    }
  });

  it('resolves undefined for an unknown or expired stream', async () => {
    const producer = store({ ttlMs: 200 });
    assert.equal(await producer.subscribe('nope', 0, new AbortController().signal), undefined);
    await producer.open('short', META);
    producer.append('short', frame(1));
    await producer.close('short', 'complete');
    assert.ok((await producer.subscribe('short', 0, new AbortController().signal)) !== undefined);
    await new Promise((resolve) => setTimeout(resolve, 400));
    assert.equal(await producer.subscribe('short', 0, new AbortController().signal), undefined);
  });

  it('bounds each stream (MAXLEN ~) and refuses a resume whose frames were dropped', async () => {
    const producer = store({ maxFramesPerStream: 10 });
    await producer.open('long', META);
    for (let seq = 1; seq <= 500; seq++) producer.append('long', frame(seq));
    await producer.close('long', 'complete');
    const client = new Redis(redis.url);
    cleanups.push(() => client.quit());
    const length = await client.xlen('tokenwire:{long}:frames');
    assert.ok(length < 300, `kept ${length} entries`);
    await assert.rejects(producer.subscribe('long', 0, new AbortController().signal), ResumeGapError);
    const tail = await producer.subscribe('long', 495, new AbortController().signal);
    assert.deepEqual(await collect(tail!.frames), [496, 497, 498, 499, 500]);
  });

  it('ends a follow as lost when the producer dies without writing an ending (its heartbeat expires)', async () => {
    const connection = new Redis(redis.url, {
      protocol: 2,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
    });
    connection.on('error', () => {});
    cleanups.push(() => connection.disconnect());
    await new Promise((resolve) => connection.once('ready', resolve));
    const producer = new RedisResumeStore({ redis: connection, heartbeatMs: 50, producerTimeoutMs: 300 });
    cleanups.push(() => producer.shutdown());
    const follower = store();
    await producer.open('dies', META);
    producer.append('dies', frame(1));
    producer.append('dies', frame(2));
    await producer.ready();
    const subscription = await follower.subscribe('dies', 0, new AbortController().signal);
    const started = Date.now();
    const seen = collect(subscription!.frames);
    // The producer's process is gone: no more writes, no heartbeat, no ending.
    connection.disconnect();
    assert.deepEqual(await seen, [1, 2]);
    assert.equal(subscription!.status(), 'lost');
    assert.ok(Date.now() - started < 5000, 'noticed within the producer timeout, not hanging');
  });

  it('on shutdown, ends the streams it was producing as lost so followers stop at once', async () => {
    const producer = new RedisResumeStore({ url: redis.url, heartbeatMs: 50, producerTimeoutMs: 60000 });
    const follower = store({ blockMs: 60000 });
    await producer.open('bye', META);
    producer.append('bye', frame(1));
    await producer.ready();
    const subscription = await follower.subscribe('bye', 0, new AbortController().signal);
    const seen = collect(subscription!.frames);
    await new Promise((resolve) => setTimeout(resolve, 100));
    await producer.shutdown();
    assert.deepEqual(await seen, [1]);
    assert.equal(subscription!.status(), 'lost');
  });

  it('stops following when the resuming client leaves, and frees its blocking connection', async () => {
    const producer = store();
    const follower = store({ blockMs: 60000 });
    await producer.open('left', META);
    producer.append('left', frame(1));
    await producer.ready();
    const controller = new AbortController();
    const subscription = await follower.subscribe('left', 0, controller.signal);
    const seen = collect(subscription!.frames);
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(follower.followers, 1);
    controller.abort();
    assert.deepEqual(await seen, [1]);
    assert.equal(follower.followers, 0);
    assert.equal(subscription!.status(), 'live');
    await producer.close('left', 'complete');
  });
});

describe("RedisResumeStore: owners, ids past the end, the producer's count", () => {
  it('resolves undefined for a resume by another owner, exactly as for an unknown stream', async () => {
    const producer = store();
    const owner = 'a'.repeat(64);
    await producer.open('owned', { ...META, owner });
    producer.append('owned', frame(1));
    await producer.close('owned', 'complete');
    const signal = new AbortController().signal;
    assert.equal(await producer.subscribe('owned', 0, signal, 'b'.repeat(64)), undefined);
    assert.equal(await producer.subscribe('owned', 0, signal), undefined, 'no key is not the owner either');
    // Past the end too: the owner check comes first, so nothing tells the stream exists.
    assert.equal(await producer.subscribe('owned', 9, signal, 'b'.repeat(64)), undefined);
    const own = await producer.subscribe('owned', 0, signal, owner);
    assert.deepEqual(await collect(own!.frames), [1]);
  });

  it('refuses an id past the last frame, of a finished stream and of a live one, at once', async () => {
    const producer = store();
    await producer.open('short', META);
    for (const seq of [1, 2, 3]) producer.append('short', frame(seq));
    await producer.close('short', 'complete');
    const signal = new AbortController().signal;
    const last = await producer.subscribe('short', 3, signal);
    assert.deepEqual(await collect(last!.frames), [], 'the last id itself is a valid (empty) resume');
    await assert.rejects(producer.subscribe('short', 4, signal), NoSuchEventError);
    await producer.open('live', META);
    producer.append('live', frame(1));
    await producer.ready();
    await assert.rejects(producer.subscribe('live', 7, signal), NoSuchEventError);
    await producer.close('live', 'complete');
  });

  it("bounds each client across replicas: a flood from B evicts B's oldest, never A's stream", async () => {
    const producer = store({ maxStreamsPerClient: 20, keyPrefix: 'bound:' });
    const other = store({ maxStreamsPerClient: 20, keyPrefix: 'bound:' });
    await producer.open('a-stream', { ...META, client: 'key:a' });
    producer.append('a-stream', frame(1));
    await producer.close('a-stream', 'complete');
    for (let i = 0; i < 60; i++) {
      const replica = i % 2 === 0 ? producer : other;
      await replica.open(`b-${i}`, { ...META, client: 'key:b' });
      replica.append(`b-${i}`, frame(1));
      await replica.close(`b-${i}`, 'complete');
    }
    await Promise.all([producer.ready(), other.ready()]);
    const signal = new AbortController().signal;
    const a = await producer.subscribe('a-stream', 0, signal);
    assert.deepEqual(await collect(a!.frames), [1], 'A still resumes');
    assert.equal(await producer.subscribe('b-0', 0, signal), undefined, "B's oldest went");
    assert.ok((await producer.subscribe('b-59', 0, signal)) !== undefined, "B's newest stays");
    const client = new Redis(redis.url);
    cleanups.push(() => client.quit());
    const kept = (await client.keys('bound:{b-*}:meta')).length;
    assert.ok(kept <= 22, `B keeps about its bound: ${kept}`);
  });

  it("keeps an SSE event name as the frame's kind (the Anthropic and Responses dialects name every event)", async () => {
    const producer = store();
    await producer.open('named', META);
    producer.append('named', { seq: 1, data: '{"type":"message_start"}', kind: 'message_start' });
    producer.append('named', { seq: 2, data: '{"a":1}' });
    await producer.close('named', 'complete');
    const subscription = await producer.subscribe('named', 0, new AbortController().signal);
    const frames: StoredFrame[] = [];
    for await (const f of subscription!.frames) frames.push(f);
    assert.deepEqual(frames, [
      { seq: 1, data: '{"type":"message_start"}', kind: 'message_start' },
      { seq: 2, data: '{"a":1}', kind: undefined },
    ]);
  });

  it("reports the producer's last seq with the ending, so a reader can tell it got fewer", async () => {
    const producer = store();
    await producer.open('counted', META);
    for (const seq of [1, 2, 3, 4]) producer.append('counted', frame(seq));
    await producer.close('counted', 'complete');
    const subscription = await producer.subscribe('counted', 1, new AbortController().signal);
    assert.deepEqual(await collect(subscription!.frames), [2, 3, 4]);
    assert.equal(subscription!.endSeq?.(), 4);
  });
});

interface Replica {
  url: string;
  child: ChildProcess;
}

const replicaScript = fileURLToPath(
  new URL(`./replica-main${extname(fileURLToPath(import.meta.url))}`, import.meta.url),
);

async function startReplica(env: Record<string, string> = {}): Promise<Replica> {
  const execArgv = replicaScript.endsWith('.ts') ? ['--import', 'tsx'] : [];
  const child = spawn(process.execPath, [...execArgv, replicaScript], {
    env: { ...process.env, REDIS_URL: redis.url, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  cleanups.push(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const line = out.split('\n')[0];
      if (out.includes('\n') && line !== undefined) resolve((JSON.parse(line) as { url: string }).url);
    });
    child.once('exit', (code) => reject(new Error(`replica exited (${code}) before listening: ${stderr}`)));
  });
  return { url, child };
}

const chat = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    model: 'sim',
    stream: true,
    messages: [{ role: 'user', content: 'tell me about replicas' }],
    max_tokens: 40,
    ...extra,
  });
const post = (url: string, body: string, headers: Record<string, string> = {}) =>
  fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });

function textOf(data: string[]): string {
  const decoded = decodeChunks(openAiChat, [
    new TextEncoder().encode(data.map((d) => `data: ${d}\n\n`).join('')),
  ]);
  return decoded.events.map((e) => (e.type === 'text' ? e.text : '')).join('');
}

describe('resume across gateway replicas (two processes, one Redis)', () => {
  it('a client cut from replica A resumes on replica B: nothing lost, nothing repeated', async () => {
    const [a, b] = await Promise.all([startReplica(), startReplica()]);
    const reference = await readSse(await post(a.url, chat()));
    assert.equal(reference.frames.at(-1)?.data, '[DONE]');

    const first = await readSse(await post(a.url, chat()), (frames) => frames.length >= 5);
    // One read may carry several frames (a loaded machine): resume after the last one received.
    assert.ok(first.frames.length >= 5);
    const lastId = first.frames.at(-1)!.id!;
    const resumed = await readSse(await post(b.url, chat(), { 'last-event-id': lastId }));
    assert.equal(resumed.ended, true);
    const all = [...first.frames, ...resumed.frames];
    const seqs = all.map((f) => Number(f.id!.split('.')[1]));
    assert.deepEqual(
      seqs,
      seqs.map((_, i) => i + 1),
      'ids contiguous across the two replicas',
    );
    assert.equal(all.at(-1)?.data, '[DONE]');
    assert.equal(textOf(all.map((f) => f.data)), textOf(reference.frames.map((f) => f.data)));
    assert.equal(all.length, reference.frames.length);
  });

  it('replica A killed mid-stream: B replays what A stored, then an honest error ending (no hang, never a clean finish)', async () => {
    const [a, b] = await Promise.all([startReplica({ SIM_TPS: '20' }), startReplica()]);
    const response = await post(a.url, chat({ max_tokens: 400 }));
    const first = await readSse(response, (frames) => frames.length >= 4);
    const lastId = first.frames.at(-1)!.id!;
    await new Promise((resolve) => setTimeout(resolve, 300)); // A writes a few more frames to Redis
    a.child.kill('SIGKILL');
    await new Promise((resolve) => a.child.once('exit', resolve));

    const started = Date.now();
    const resumed = await readSse(await post(b.url, chat(), { 'last-event-id': lastId }));
    assert.ok(Date.now() - started < 10000, 'ended, not hung');
    assert.equal(resumed.ended, true);
    const all = [...first.frames, ...resumed.frames];
    const seqs = all.map((f) => Number(f.id!.split('.')[1]));
    assert.deepEqual(
      seqs,
      seqs.map((_, i) => i + 1),
      'nothing lost, nothing repeated, the ending numbered after them',
    );
    // vLLM's error shape: the error event, then [DONE] (what vLLM writes after one).
    const errorAt = all.findIndex((f) => f.data.startsWith('{"error"'));
    assert.ok(errorAt > first.frames.length, 'B replays frames A stored after the cut, then the error event');
    assert.ok(
      all.slice(0, errorAt).every((f) => f.data !== '[DONE]'),
      'never a clean finish',
    );
    const ending = JSON.parse(all[errorAt]!.data) as { error?: { message?: string } };
    assert.match(ending.error?.message ?? '', /stopped before it finished/);
    const decoded = decodeChunks(openAiChat, [
      new TextEncoder().encode(all.map((f) => `data: ${f.data}\n\n`).join('')),
    ]);
    assert.equal(decoded.complete, false);
    assert.ok(decoded.events.some((e) => e.type === 'error'));
    assert.ok(textOf(all.map((f) => f.data)).length > 0);
  });
});
