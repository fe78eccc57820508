import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { getDialect } from '../../src/dialects/registry.ts';
import { createSim, SIM_LOG_LIMIT } from '../../src/sim/index.ts';
import { ask, dialects, FakeClock, post, postRaw, readChunks, run } from './sim-helpers.ts';

const openAiChat = getDialect('openai-chat');
const fastSim = (options: Parameters<typeof createSim>[0] = {}) => {
  const clock = new FakeClock();
  return createSim({ now: clock.now, sleep: clock.sleep, ...options });
};
const get = (sim: ReturnType<typeof createSim>, path: string, method = 'GET') =>
  sim.fetch(new Request(`http://sim.test${path}`, { method }));

describe('sim routes', () => {
  it('lists its models the OpenAI way and the Ollama way, and answers /health', async () => {
    const sim = fastSim({ models: ['small', 'large'] });
    const models = (await (await get(sim, '/v1/models')).json()) as {
      object: string;
      data: { id: string; object: string }[];
    };
    assert.equal(models.object, 'list');
    assert.deepEqual(
      models.data.map((m) => [m.id, m.object]),
      [
        ['small', 'model'],
        ['large', 'model'],
      ],
    );
    const tags = (await (await get(sim, '/api/tags')).json()) as {
      models: { name: string; digest: string }[];
    };
    assert.deepEqual(
      tags.models.map((m) => m.name),
      ['small', 'large'],
    );
    assert.match(tags.models[0]?.digest ?? '', /^[0-9a-f]{64}$/);
    assert.deepEqual(await (await get(sim, '/health')).json(), { status: 'ok' });
    assert.equal((await get(sim, '/api/version')).status, 200);
    assert.equal((await get(sim, '/v1/models', 'POST')).status, 405);
    assert.equal(sim.stats.requests, 0, 'informational routes are not generation requests');
  });

  it('answers unknown paths with a 404 JSON error and GET on a dialect endpoint with 405', async () => {
    const sim = fastSim();
    const missing = await get(sim, '/v2/nothing');
    assert.equal(missing.status, 404);
    assert.match(missing.headers.get('content-type') ?? '', /application\/json/);
    assert.match(
      ((await missing.json()) as { error: { message: string } }).error.message,
      /no route for GET \/v2\/nothing/,
    );
    const wrongMethod = await get(sim, '/v1/chat/completions');
    assert.equal(wrongMethod.status, 405);
    assert.equal(wrongMethod.headers.get('allow'), 'POST');
  });

  for (const dialect of dialects()) {
    it(`serves ${dialect.id} on each of its paths with the server's headers`, async () => {
      const sim = fastSim();
      for (const path of dialect.paths) {
        const result = await run(sim, dialect, ask('paths'), { path });
        assert.equal(result.response.status, 200);
        assert.deepEqual(
          Object.fromEntries(result.response.headers),
          dialect.responseHeaders(dialect.flavors[0]),
        );
        assert.equal(result.complete, true);
        assert.ok(result.text.length > 0);
      }
    });

    it(`rejects bad requests before streaming, in ${dialect.id}'s error shape`, async () => {
      const sim = fastSim();
      const path = dialect.paths[0] as string;
      const expectedKeys = Object.keys(
        JSON.parse(dialect.errorResponse({ status: 400, message: 'x' }).body),
      ).join();
      const notJson = await postRaw(sim, path, '{"model": ');
      assert.equal(notJson.status, dialect.errorResponse({ status: 400, message: 'x' }).status);
      const body = await notJson.text();
      assert.equal(Object.keys(JSON.parse(body)).join(), expectedKeys);
      assert.match(body, /not valid JSON/);
      const wrongShape = await postRaw(sim, path, { model: 'sim', messages: 'hello', prompt: 42 });
      assert.equal(wrongShape.status, 400);
      const noStream = await post(sim, dialect, ask('x'), {});
      await readChunks(noStream);
      // `stream: false` gets the whole answer as one JSON body, as the real servers give it.
      const body2 = { ...dialect.toRequestBody({ model: 'sim', ...ask('x') }), stream: false };
      const whole = await postRaw(sim, path, body2);
      assert.equal(whole.status, 200);
      assert.match(whole.headers.get('content-type') ?? '', /application\/json/);
      const answer = JSON.parse(await whole.text()) as Record<string, unknown>;
      assert.ok(Object.keys(answer).length > 0, 'a JSON answer');
      assert.equal(sim.stats.failed, 2);
      assert.equal(sim.stats.completed, 2);
    });
  }

  it('imitates the server named by x-tokenwire-flavor or by the flavors option', async () => {
    const sim = fastSim({ flavors: { 'openai-chat': 'tgi' } });
    const tgi = await post(sim, openAiChat, ask('flavor'));
    assert.equal(tgi.headers.get('cache-control'), 'no-cache');
    assert.match(
      (await tgi.text()).split('\n')[0] ?? '',
      /^data: \{"object":"chat\.completion\.chunk","id":""/,
    );
    const llama = await post(sim, openAiChat, ask('flavor'), {
      headers: { 'x-tokenwire-flavor': 'llamacpp' },
    });
    assert.equal(llama.headers.get('server'), 'llama.cpp');
    assert.match(await llama.text(), /^data: \{"choices":/);
    const unknown = await post(sim, openAiChat, ask('flavor'), {
      headers: { 'x-tokenwire-flavor': 'mystery' },
    });
    assert.equal(unknown.status, 400);
    assert.match(await unknown.text(), /unknown x-tokenwire-flavor \\"mystery\\"/);
  });

  it('refuses bad options when created', () => {
    assert.throws(
      () => createSim({ flavors: { 'openai-chat': 'mystery' } }),
      /unknown flavor "mystery" for openai-chat/,
    );
    assert.throws(() => createSim({ timing: { tokensPerSecond: 0 } }), /timing.tokensPerSecond/);
    assert.throws(() => createSim({ timing: { jitter: 1 } }), /timing.jitter/);
    assert.throws(() => createSim({ faults: 'nope' }), /unknown fault "nope"/);
  });

  it('serves any model name asked for, and logs each request with its headers', async () => {
    const sim = fastSim();
    const result = await run(
      sim,
      openAiChat,
      { ...ask('model'), model: 'llama3.2:1b' },
      { headers: { 'x-trace': 'abc' } },
    );
    assert.equal(result.events.find((e) => e.type === 'start')?.type, 'start');
    assert.match(result.raw, /"model":"llama3\.2:1b"/);
    const record = sim.stats.log.at(-1);
    assert.equal(record?.model, 'llama3.2:1b');
    assert.equal(record?.headers?.['x-trace'], 'abc');
    assert.equal(record?.id, 'sim-1');
  });

  it(`keeps the last ${SIM_LOG_LIMIT} records`, async () => {
    const sim = fastSim({ faults: 'status=500' });
    for (let i = 0; i < SIM_LOG_LIMIT + 5; i++) await (await post(sim, openAiChat, ask('log'))).text();
    assert.equal(sim.stats.log.length, SIM_LOG_LIMIT);
    assert.equal(sim.stats.log[0]?.id, 'sim-6');
    assert.equal(sim.stats.requests, SIM_LOG_LIMIT + 5);
  });
});
