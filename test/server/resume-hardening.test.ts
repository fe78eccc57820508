import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, describe, it } from 'node:test';
import { DIALECT_IDS } from '../../src/dialects/dialect.ts';
import { serve } from '../../src/node/serve.ts';
import type { GatewayOptions } from '../../src/server/create-gateway.ts';
import { createGuardedGateway, type GuardOptions } from '../../src/server/guard/guard-gateway.ts';
import { MemoryResumeStore } from '../../src/server/resume/memory-resume-store.ts';
import { createSim } from '../../src/sim/create-sim.ts';
import type { SimOptions } from '../../src/sim/sim-options.ts';
import { readSse } from '../helpers/sse-read.ts';

// Who may resume a stream, how one client's flood is contained, and what a
// resumed stream writes (keepalives, strict ids, ids past the end).

const closers: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const close of closers.reverse()) await close();
});

async function gateway(
  options: Partial<GatewayOptions> & GuardOptions & { sim?: SimOptions } = {},
): Promise<{ url: string; port: number }> {
  const sim = createSim({ timing: { tokensPerSecond: 2000, loadMs: 0 }, ...options.sim });
  const { gateway: g, fetch } = createGuardedGateway({
    upstreams: [
      { name: 'sim', url: 'http://sim.internal', dialects: DIALECT_IDS, fetch: sim.fetch, models: ['sim'] },
    ],
    keepaliveMs: 0,
    ...options,
  });
  const served = await serve(fetch);
  closers.push(async () => {
    await g.close();
    await served.close();
  });
  return { url: served.url, port: served.port };
}

const body = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    model: 'sim',
    stream: true,
    messages: [{ role: 'user', content: 'hi' }],
    max_tokens: 8,
    ...extra,
  });
const post = (url: string, headers: Record<string, string> = {}, extra: Record<string, unknown> = {}) =>
  fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: body(extra),
  });
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

/** A finished stream: its id and how many events it wrote. */
async function finishedStream(url: string, headers: Record<string, string> = {}) {
  const response = await post(url, headers);
  assert.equal(response.status, 200);
  const id = response.headers.get('x-tokenwire-stream-id')!;
  const read = await readSse(response);
  assert.equal(read.frames.at(-1)?.data, '[DONE]');
  return { id, events: read.frames.length };
}

async function errorOf(response: Response): Promise<{ status: number; message: string }> {
  const parsed = (await response.json()) as { error: { message: string } };
  return { status: response.status, message: parsed.error.message };
}

/** A POST from a given local address (127.0.0.x), so the gateway sees distinct clients without keys. */
function postFrom(localAddress: string, port: number, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; streamId: string | undefined; text: string }>((resolve, reject) => {
    const payload = body({ max_tokens: 1 });
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        localAddress,
        method: 'POST',
        path: '/v1/chat/completions',
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
          ...headers,
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            streamId: res.headers['x-tokenwire-stream-id'] as string,
            text,
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** `count` requests, `parallel` at a time. */
async function flood(count: number, parallel: number, one: () => Promise<unknown>): Promise<void> {
  let started = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (started < count) {
        started += 1;
        await one();
      }
    }),
  );
}

describe('resume: only the key that opened a stream resumes it', () => {
  it('another valid key gets the very 404 of an unknown stream; the opener resumes', async () => {
    const g = await gateway({ apiKeys: ['key-a', 'key-b'] });
    const { id, events } = await finishedStream(g.url, bearer('key-a'));
    const unknown = await errorOf(
      await post(g.url, { ...bearer('key-b'), 'last-event-id': 'deadbeefdeadbeef00.2' }),
    );
    assert.equal(unknown.status, 404);
    for (const lastEventId of [`${id}.2`, `${id}.0`, `${id}.${events + 5}`]) {
      const other = await errorOf(await post(g.url, { ...bearer('key-b'), 'last-event-id': lastEventId }));
      assert.deepEqual(other, unknown, `key B resuming ${lastEventId}: nothing tells the stream exists`);
    }
    const own = await readSse(await post(g.url, { ...bearer('key-a'), 'last-event-id': `${id}.2` }));
    assert.equal(own.frames.length, events - 2);
    assert.equal(own.frames.at(-1)?.data, '[DONE]');
  });

  it('a client-sent header cannot claim to be the owner', async () => {
    const g = await gateway({ apiKeys: ['key-a', 'key-b'] });
    const { id } = await finishedStream(g.url, bearer('key-a'));
    const forged = await post(g.url, {
      ...bearer('key-b'),
      'x-api-key': 'key-a',
      'x-tokenwire-owner': 'key-a',
      'last-event-id': `${id}.1`,
    });
    // Authorization wins over X-API-Key in the guard: this is key B.
    assert.equal(forged.status, 404);
  });
});

describe('resume store bounds per client', () => {
  it('a flood of 1000 one-token streams from key B does not evict key A’s stream', async () => {
    const g = await gateway({ apiKeys: ['key-a', 'key-b'] });
    const { id } = await finishedStream(g.url, bearer('key-a'));
    await flood(1000, 16, async () => {
      const response = await post(g.url, bearer('key-b'), { max_tokens: 1 });
      assert.equal(response.status, 200);
      await response.text();
    });
    const resumed = await post(g.url, { ...bearer('key-a'), 'last-event-id': `${id}.1` });
    assert.equal(resumed.status, 200);
    assert.equal((await readSse(resumed)).frames.at(-1)?.data, '[DONE]');
  });

  it('without keys, the bound is per client address: a flood from one address evicts its own streams first', async () => {
    const g = await gateway({
      resumeStore: new MemoryResumeStore({ maxStreams: 200 }),
    });
    const a = await postFrom('127.0.0.2', g.port);
    assert.equal(a.status, 200);
    let firstOfB: string | undefined;
    await flood(300, 8, async () => {
      const b = await postFrom('127.0.0.3', g.port);
      assert.equal(b.status, 200);
      firstOfB ??= b.streamId;
    });
    const resumed = await postFrom('127.0.0.2', g.port, { 'last-event-id': `${a.streamId}.1` });
    assert.equal(resumed.status, 200, resumed.text);
    assert.match(resumed.text, /data: \[DONE\]/);
    // The flooder's oldest went instead.
    const evicted = await postFrom('127.0.0.3', g.port, { 'last-event-id': `${firstOfB}.1` });
    assert.equal(evicted.status, 404);
  });
});

describe('resumed streams: keepalives, strict ids, ids past the end', () => {
  it('writes keepalive comments on a resumed stream while the upstream stalls, as on a direct one', async () => {
    const g = await gateway({ keepaliveMs: 50, keepStreamOnDisconnect: true });
    const first = await readSse(
      await post(g.url, {}, { model: 'sim@stall=1500,stall-after=4', max_tokens: 10 }),
      (frames) => frames.length >= 3,
    );
    const lastId = first.frames.at(-1)!.id!;
    const resumed = await readSse(await post(g.url, { 'last-event-id': lastId }));
    assert.equal(resumed.frames.at(-1)?.data, '[DONE]');
    assert.ok(resumed.comments.length >= 3, `keepalives on the resumed stream: ${resumed.comments.length}`);
  });

  it('refuses a sequence part that is not plain decimal with a 400 in the dialect shape', async () => {
    const g = await gateway();
    const { id } = await finishedStream(g.url);
    // (Trailing whitespace cannot be tested: HTTP strips it from a header value.)
    for (const seq of ['', '0x5', '1e3', '05', ' 5', '+5', '-1', '5.0', '1_0', 'Infinity', '9'.repeat(16)]) {
      const response = await post(g.url, { 'last-event-id': `${id}.${seq}` });
      assert.equal(response.status, 400, `seq ${JSON.stringify(seq)}`);
      assert.match((await errorOf(response)).message, /Last-Event-ID/);
    }
    // TGI's shape: `{"error": "...", "error_type": ...}`.
    const tgi = await fetch(`${g.url}/generate_stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'last-event-id': `${id}.0x5` },
      body: JSON.stringify({ inputs: 'hi', parameters: { max_new_tokens: 2 } }),
    });
    assert.equal(tgi.status, 400);
    assert.equal(typeof ((await tgi.json()) as { error: unknown }).error, 'string');
    // Plain decimal still resumes.
    assert.equal((await post(g.url, { 'last-event-id': `${id}.3` })).status, 200);
  });

  it('answers an id past the end of a finished stream with a 404 "no such event" at once', async () => {
    const g = await gateway();
    const { id, events } = await finishedStream(g.url);
    const last = await post(g.url, { 'last-event-id': `${id}.${events}` });
    assert.equal(last.status, 200, 'the last id itself: nothing more to send, but a valid resume');
    await last.text();
    const past = await post(g.url, { 'last-event-id': `${id}.${events + 1}` });
    assert.equal(past.status, 404);
    assert.match((await errorOf(past)).message, /no such event/);
  });

  it('answers 503 in the dialect shape when the resume store fails (Redis restarting), not a 500', async () => {
    const store = new MemoryResumeStore();
    store.subscribe = () => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:6379'));
    const g = await gateway({ resumeStore: store });
    const { id } = await finishedStream(g.url);
    const response = await post(g.url, { 'last-event-id': `${id}.1` });
    assert.equal(response.status, 503);
    assert.match((await errorOf(response)).message, /resume store failed/);
  });

  it('answers an id past the end of a live stream with a 404 at once, not a hang', async () => {
    const g = await gateway({ keepStreamOnDisconnect: true });
    const live = await post(g.url, {}, { model: 'sim@stall=5000,stall-after=3', max_tokens: 10 });
    const id = live.headers.get('x-tokenwire-stream-id')!;
    const reader = live.body!.getReader();
    await reader.read(); // the stream is open and stalled soon
    const past = await post(g.url, { 'last-event-id': `${id}.40` });
    if (past.status === 200) await past.body?.cancel();
    assert.equal(past.status, 404);
    assert.match((await errorOf(past)).message, /no such event/);
    await reader.cancel();
  });
});
