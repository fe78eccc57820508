import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { serve } from '../../src/node/serve.ts';
import { createGateway } from '../../src/server/create-gateway.ts';
import { guardGateway } from '../../src/server/guard/guard-gateway.ts';
import { MemoryResumeStore } from '../../src/server/resume/memory-resume-store.ts';
import { responseIdFor, streamIdOfResponse } from '../../src/server/routes/responses-cursor.ts';
import { createSim } from '../../src/sim/create-sim.ts';
import type { Frame } from '../../src/wire/frame.ts';
import { startGateway, type TestGateway } from '../helpers/gateway.ts';
import { readSse } from '../helpers/sse-read.ts';

interface Event {
  type: string;
  sequence_number?: number;
  response?: { id: string; status: string };
}

const events = (frames: Frame[]): Event[] => frames.map((frame) => JSON.parse(frame.data) as Event);

const postStream = (url: string, body: Record<string, unknown>) =>
  fetch(`${url}/v1/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(Object.assign({ model: 'sim', stream: true }, body)),
  });

describe('response ids name their streams', () => {
  it('resp_<stream id> both ways; other ids are none', () => {
    assert.equal(streamIdOfResponse(responseIdFor('0a1b2c3d4e5f60718f')), '0a1b2c3d4e5f60718f');
    for (const id of ['resp_', 'chatcmpl-123', 'resp_a.b', 'resp_x/y', `resp_${'a'.repeat(65)}`])
      assert.equal(streamIdOfResponse(id), undefined, id);
  });
});

describe('GET /v1/responses/{id}: the Responses cursor on the resume store', () => {
  let gw: TestGateway;
  before(async () => {
    // keepStreamOnDisconnect: a client that leaves comes back by its cursor (background mode).
    gw = await startGateway({
      gateway: { keepaliveMs: 0, keepStreamOnDisconnect: true },
      sim: { timing: { tokensPerSecond: 400, loadMs: 0 } },
    });
  });
  after(() => gw?.close());

  it("the stream's id is the response id; stream=true replays from starting_after, and the SDK reads it", async () => {
    const response = await postStream(gw.url, { input: 'Tell me about Reykjavík', max_output_tokens: 16 });
    const streamId = response.headers.get('x-tokenwire-stream-id')!;
    const original = events((await readSse(response)).frames);
    assert.equal(original[0]!.type, 'response.created');
    const responseId = original[0]!.response!.id;
    assert.equal(responseId, `resp_${streamId}`);
    assert.deepEqual(
      original.map((event) => event.sequence_number),
      original.map((_, i) => i),
      'numbered from 0, one per event',
    );
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const replayed: Event[] = [];
    for await (const event of await client.responses.retrieve(responseId, {
      stream: true,
      starting_after: 3,
    }))
      replayed.push(event as Event);
    assert.deepEqual(replayed, original.slice(4));
    const whole: Event[] = [];
    for await (const event of await client.responses.retrieve(responseId, { stream: true }))
      whole.push(event as Event);
    assert.deepEqual(whole, original);
    // Its SSE ids are the stream's own: a Last-Event-ID resume continues from them.
    const raw = await readSse(
      await fetch(`${gw.url}/v1/responses/${responseId}?stream=true&starting_after=5`),
    );
    assert.equal(raw.frames[0]!.id, `${streamId}.7`);
    // Without stream=true: the response object as it ended.
    const retrieved = await client.responses.retrieve(responseId);
    assert.equal(retrieved.id, responseId);
    assert.equal(retrieved.status, 'incomplete');
    assert.match(retrieved.output_text, /\S/);
    // The SDK adds `output_text`; the rest is the terminal event's response as it was written.
    const { output_text: _added, ...asWritten } = retrieved;
    assert.deepEqual(asWritten, original.at(-1)!.response);
  });

  it('a client that left comes back by its cursor and gets the rest of the live stream, then its end', async () => {
    const response = await postStream(gw.url, { input: 'Tell me a long story', max_output_tokens: 60 });
    const first = events((await readSse(response, (frames) => frames.length >= 6)).frames);
    const responseId = first[0]!.response!.id;
    const lastSeen = first.at(-1)!.sequence_number!;
    const rest = events(
      (
        await readSse(
          await fetch(`${gw.url}/v1/responses/${responseId}?stream=true&starting_after=${lastSeen}`),
        )
      ).frames,
    );
    assert.equal(rest[0]!.sequence_number, lastSeen + 1);
    assert.equal(rest.at(-1)!.type, 'response.incomplete');
    const all = [...first, ...rest];
    assert.deepEqual(
      all.map((event) => event.sequence_number),
      all.map((_, i) => i),
      'nothing missing, nothing twice',
    );
  });

  it('unknown ids, ids of other streams and bad cursors are refused in the Responses error shape', async () => {
    const notFound = async (id: string) => {
      const answer = await fetch(`${gw.url}/v1/responses/${id}?stream=true`);
      assert.equal(answer.status, 404, id);
      const body = (await answer.json()) as { error: { message: string; type: string } };
      assert.equal(body.error.message, `Response with id '${id}' not found.`);
    };
    await notFound('resp_nope.');
    await notFound('resp_00000000000000000000');
    await notFound('msg_123');
    // A chat stream's id with the prefix: a stream of the store, but no response.
    const chat = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'sim',
        stream: true,
        max_tokens: 2,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    });
    const chatStream = chat.headers.get('x-tokenwire-stream-id')!;
    await chat.text();
    await notFound(`resp_${chatStream}`);

    const done = await postStream(gw.url, { input: 'hi', max_output_tokens: 2 });
    const count = (await readSse(done)).frames.length;
    const responseId = `resp_${done.headers.get('x-tokenwire-stream-id')}`;
    for (const cursor of ['-1', 'x', '1.5', '01']) {
      const bad = await fetch(`${gw.url}/v1/responses/${responseId}?stream=true&starting_after=${cursor}`);
      assert.equal(bad.status, 400, cursor);
      assert.match(((await bad.json()) as { error: { message: string } }).error.message, /starting_after/);
    }
    const past = await fetch(`${gw.url}/v1/responses/${responseId}?stream=true&starting_after=${count}`);
    assert.equal(past.status, 400);
    await past.body?.cancel();
    // The last event's number is a valid cursor: nothing after it.
    const atEnd = await fetch(`${gw.url}/v1/responses/${responseId}?stream=true&starting_after=${count - 1}`);
    assert.equal(atEnd.status, 200);
    assert.equal((await readSse(atEnd)).frames.length, 0);
  });

  it('a stream opened with another API key is unknown to this one', async () => {
    const sim = createSim({ timing: { tokensPerSecond: 4000, loadMs: 0 } });
    const gateway = createGateway({
      upstreams: [{ name: 'sim', url: 'http://sim', dialects: ['openai-responses'], fetch: sim.fetch }],
      keepaliveMs: 0,
    });
    const server = await serve(guardGateway(gateway.fetch, { apiKeys: ['key-a', 'key-b'] }));
    try {
      const opened = await fetch(`${server.url}/v1/responses`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer key-a' },
        body: JSON.stringify({ model: 'sim', stream: true, input: 'hi', max_output_tokens: 2 }),
      });
      const responseId = events((await readSse(opened)).frames)[0]!.response!.id;
      const as = (key: string) =>
        fetch(`${server.url}/v1/responses/${responseId}?stream=true`, {
          headers: { authorization: `Bearer ${key}` },
        });
      const own = await as('key-a');
      assert.equal(own.status, 200);
      await own.text();
      const other = await as('key-b');
      assert.equal(other.status, 404);
      await other.text();
    } finally {
      await gateway.close();
      await server.close();
    }
  });
});

describe('store: false', () => {
  it('is no retrievable response, resumes by Last-Event-ID, and is dropped soon after its end', async () => {
    let clock = 1_000_000;
    const store = new MemoryResumeStore({ now: () => clock });
    const gw = await startGateway({ gateway: { keepaliveMs: 0, resumeStore: store } });
    try {
      const kept = await postStream(gw.url, { input: 'hi', max_output_tokens: 4 });
      await kept.text();
      const noStore = await postStream(gw.url, { input: 'hi', max_output_tokens: 4, store: false });
      const streamId = noStore.headers.get('x-tokenwire-stream-id')!;
      const frames = (await readSse(noStore)).frames;
      const responseId = events(frames)[0]!.response!.id;
      assert.equal(responseId, `resp_${streamId}`);
      const retrieved = await fetch(`${gw.url}/v1/responses/${responseId}?stream=true`);
      assert.equal(retrieved.status, 404, 'not kept for retrieval');
      await retrieved.body?.cancel();
      assert.equal((await fetch(`${gw.url}/v1/responses/${responseId}`)).status, 404);
      const resume = () => fetch(`${gw.url}/v1/responses`, { headers: { 'last-event-id': `${streamId}.2` } });
      const resumed = await resume();
      assert.equal(resumed.status, 200, 'resumable by Last-Event-ID right after its end');
      assert.equal((await readSse(resumed)).frames.length, frames.length - 2);
      // Past the short retention: gone; the stream stored as usual is still retrievable.
      clock += 31_000;
      const gone = await resume();
      assert.equal(gone.status, 404);
      await gone.body?.cancel();
      const keptId = `resp_${kept.headers.get('x-tokenwire-stream-id')}`;
      const stillThere = await fetch(`${gw.url}/v1/responses/${keptId}?stream=true`);
      assert.equal(stillThere.status, 200);
      await stillThere.text();
    } finally {
      await gw.close();
    }
  });
});

describe('a Responses stream that was cancelled, read again', () => {
  it('ends with the error event, and no second response.created', async () => {
    const gw = await startGateway({
      gateway: { keepaliveMs: 0 },
      sim: { timing: { tokensPerSecond: 200, loadMs: 0 } },
    });
    try {
      const response = await postStream(gw.url, { input: 'Tell me a long story', max_output_tokens: 200 });
      const first = events((await readSse(response, (frames) => frames.length >= 4)).frames);
      const responseId = first[0]!.response!.id;
      for (const url of [
        `${gw.url}/v1/responses/${responseId}?stream=true&starting_after=1`,
        `${gw.url}/v1/responses/${responseId}?stream=true`,
      ]) {
        const again = events((await readSse(await fetch(url))).frames);
        assert.equal(again.at(-1)!.type, 'error');
        assert.equal(
          again.filter((event) => event.type === 'response.created').length,
          url.endsWith('true') ? 1 : 0,
        );
      }
      // Retrieved whole, it says it failed.
      const object = (await (await fetch(`${gw.url}/v1/responses/${responseId}`)).json()) as {
        status: string;
      };
      assert.equal(object.status, 'failed');
    } finally {
      await gw.close();
    }
  });
});
