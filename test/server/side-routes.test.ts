import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { Ollama } from 'ollama';
import type { DialectId } from '../../src/dialects/dialect.ts';
import { serve } from '../../src/node/serve.ts';
import { createGateway, type Gateway } from '../../src/server/create-gateway.ts';
import { guardGateway } from '../../src/server/guard/guard-gateway.ts';
import { GATEWAY_VERSION } from '../../src/server/routes/side-routes.ts';
import type { FetchLike, Upstream } from '../../src/server/upstream/upstream.ts';
import { createSim } from '../../src/sim/create-sim.ts';
import { repoRoot } from '../helpers/paths.ts';

const closers: (() => Promise<void>)[] = [];
after(() => Promise.all(closers.map((close) => close())));

async function served(upstreams: Upstream[]): Promise<{ url: string; gateway: Gateway }> {
  const gateway = createGateway({ upstreams, keepaliveMs: 0 });
  const server = await serve(gateway.fetch);
  closers.push(async () => {
    await gateway.close();
    await server.close();
  });
  return { url: server.url, gateway };
}

/** The simulator as an upstream speaking only `dialects` (it has none of the side routes but /health). */
function simUpstream(dialects: readonly DialectId[], models: string[] = ['sim']): Upstream {
  const sim = createSim({ timing: { tokensPerSecond: 4000, loadMs: 0 } });
  return { name: 'sim', url: 'http://sim.internal', dialects, models, fetch: sim.fetch };
}

interface Seen {
  method: string;
  path: string;
  body: string;
  authorization: string | null;
}

/** A scripted upstream: `answers[path]` for each call (404 text otherwise), every call recorded. */
function scripted(
  dialects: readonly DialectId[],
  answers: Record<string, { status?: number; type?: string; body: string }>,
): { upstream: Upstream; seen: Seen[] } {
  const seen: Seen[] = [];
  const fetch: FetchLike = async (request) => {
    const path = new URL(request.url).pathname;
    seen.push({
      method: request.method,
      path,
      body: await request.text(),
      authorization: request.headers.get('authorization'),
    });
    const answer = answers[path];
    if (answer === undefined)
      return new Response('404 page not found', { status: 404, headers: { 'content-type': 'text/plain' } });
    return new Response(answer.body === '' ? null : answer.body, {
      status: answer.status ?? 200,
      headers: { 'content-type': answer.type ?? 'application/json; charset=utf-8', server: 'upstream' },
    });
  };
  return {
    upstream: {
      name: 'real',
      url: 'http://10.0.0.5:8080',
      dialects,
      models: ['llama3.2:latest'],
      headers: { authorization: 'Bearer upstream-secret' },
      fetch,
    },
    seen,
  };
}

const getJson = async (url: string) => {
  const response = await fetch(url);
  const body = (await response.json()) as Record<string, unknown>;
  return { status: response.status, type: response.headers.get('content-type'), body };
};

describe('side routes answered by the gateway (no upstream of that server)', () => {
  let url: string;
  before(async () => {
    ({ url } = await served([simUpstream(['openai-chat'], ['sim', 'org/model-7b'])]));
  });

  it('ollama-js: version(), show() and ps() work, in Ollama shapes', async () => {
    const ollama = new Ollama({ host: url });
    assert.deepEqual(await ollama.version(), { version: GATEWAY_VERSION });
    const show = await ollama.show({ model: 'sim' });
    assert.equal(show.details.format, 'gguf');
    assert.deepEqual(show.model_info, {});
    assert.deepEqual(show.capabilities, ['completion']);
    assert.equal(typeof show.modified_at, 'string');
    assert.deepEqual(await ollama.ps(), { models: [] });
    await assert.rejects(ollama.show({ model: 'nope' }), (error: unknown) => {
      const e = error as { status_code?: number; error?: string };
      assert.equal(e.status_code, 404);
      assert.equal(e.error, "model 'nope' not found");
      return true;
    });
  });

  it("the gateway's version is package.json's", () => {
    const manifest = JSON.parse(readFileSync(`${repoRoot}/package.json`, 'utf8')) as { version: string };
    assert.equal(GATEWAY_VERSION, manifest.version);
  });

  it("/api/show without a model is Ollama's 400; unknown /api paths are gin's plain 404", async () => {
    const missing = await fetch(`${url}/api/show`, { method: 'POST', body: '{}' });
    assert.equal(missing.status, 400);
    assert.deepEqual(await missing.json(), { error: 'model is required' });
    const legacy = await fetch(`${url}/api/show`, { method: 'POST', body: '{"name":"sim"}' });
    assert.equal(legacy.status, 200, 'older clients send "name"');
    for (const [method, path] of [
      ['GET', '/api/nope'],
      ['POST', '/api/embed-nothing'],
      ['GET', '/api'],
      ['DELETE', '/api/version'],
    ] as const) {
      const response = await fetch(`${url}${path}`, { method });
      assert.equal(response.status, 404, `${method} ${path}`);
      assert.equal(response.headers.get('content-type'), 'text/plain');
      assert.equal(await response.text(), '404 page not found');
    }
    // A client that asked for the gateway's plain-text output gets its error line.
    const text = await fetch(`${url}/api/nope?format=text`);
    assert.equal(text.status, 404);
    assert.equal(await text.text(), '[tokenwire: error: 404 page not found]\n');
  });

  it('/v1/models/{id}: the model, or the OpenAI-shaped 404 for one no upstream lists', async () => {
    const sim = await getJson(`${url}/v1/models/sim`);
    assert.equal(sim.status, 200);
    assert.deepEqual(sim.body, { id: 'sim', object: 'model', created: 0, owned_by: 'tokenwire' });
    const slashed = await getJson(`${url}/v1/models/org/model-7b`);
    assert.equal(slashed.body.id, 'org/model-7b', 'model ids may hold a slash');
    const missing = await getJson(`${url}/v1/models/gpt-9`);
    assert.equal(missing.status, 404);
    assert.deepEqual(missing.body, {
      error: { message: 'The model `gpt-9` does not exist.', type: 'NotFoundError', param: null, code: 404 },
    });
  });

  it('/props and /info: what the gateway knows, nothing invented', async () => {
    const props = await getJson(`${url}/props`);
    assert.equal(props.status, 200);
    assert.equal(props.body.model_alias, 'sim');
    assert.equal(props.body.build_info, `tokenwire-${GATEWAY_VERSION}`);
    for (const invented of ['default_generation_settings', 'total_slots', 'chat_template', 'n_ctx'])
      assert.ok(!(invented in props.body), invented);
    const info = await getJson(`${url}/info`);
    assert.equal(info.status, 200);
    assert.equal(info.body.model_id, 'sim');
    assert.equal(info.body.version, GATEWAY_VERSION);
    assert.equal(info.body.model_sha, null);
    assert.ok(!('max_total_tokens' in info.body));
  });

  it("/health is the upstream's answer (the simulator's llama-server-like one)", async () => {
    const health = await getJson(`${url}/health`);
    assert.equal(health.status, 200);
    assert.deepEqual(health.body, { status: 'ok' });
  });

  it('TGI POST /generate answers like POST / without the list, and never streams', async () => {
    const body = JSON.stringify({
      inputs: 'Say something',
      parameters: { max_new_tokens: 5, details: true },
    });
    const headers = { 'content-type': 'application/json' };
    const generate = await fetch(`${url}/generate`, { method: 'POST', headers, body });
    assert.equal(generate.status, 200);
    assert.match(generate.headers.get('content-type') ?? '', /application\/json/);
    const answer = (await generate.json()) as {
      generated_text?: unknown;
      details?: { generated_tokens?: unknown };
    };
    assert.ok(!Array.isArray(answer));
    assert.equal(typeof answer.generated_text, 'string');
    assert.equal(typeof answer.details?.generated_tokens, 'number');
    const root = (await (await fetch(`${url}/`, { method: 'POST', headers, body })).json()) as unknown[];
    assert.ok(Array.isArray(root) && root.length === 1, 'POST / keeps its list');
    assert.deepEqual(Object.keys(answer).sort(), Object.keys(root[0] as object).sort());
    // TGI's /generate has no `stream` field: one sent is ignored, as TGI ignores it.
    const asked = JSON.stringify({
      inputs: 'Say something',
      stream: true,
      parameters: { max_new_tokens: 5 },
    });
    const unstreamed = await fetch(`${url}/generate`, { method: 'POST', headers, body: asked });
    assert.match(unstreamed.headers.get('content-type') ?? '', /application\/json/);
    assert.equal(typeof ((await unstreamed.json()) as { generated_text?: unknown }).generated_text, 'string');
    for (const bad of ['{"parameters":{}}', '{not json']) {
      const refused = await fetch(`${url}/generate`, { method: 'POST', headers, body: bad });
      assert.ok(refused.status >= 400 && refused.status < 500, bad);
      const error = (await refused.json()) as { error?: unknown; error_type?: unknown };
      assert.equal(typeof error.error, 'string', "TGI's error shape");
      assert.equal(typeof error.error_type, 'string');
    }
  });
});

describe('side routes passed through to an upstream of that server', () => {
  it("Ollama's /api/version, /api/show and /api/ps come from the Ollama upstream, with its credentials", async () => {
    const show =
      '{"modelfile":"FROM llama3.2","parameters":"stop \\"<|eot_id|>\\"","template":"{{ .Prompt }}"}';
    const ps = '{"models":[{"name":"llama3.2:latest","model":"llama3.2:latest","size":3,"size_vram":3}]}';
    const { upstream, seen } = scripted(['ollama-chat', 'ollama-generate'], {
      '/api/version': { body: '{"version":"0.12.3"}' },
      '/api/show': { body: show },
      '/api/ps': { body: ps },
    });
    const { url } = await served([upstream]);
    const ollama = new Ollama({ host: url });
    assert.deepEqual(await ollama.version(), { version: '0.12.3' });
    assert.deepEqual(await ollama.show({ model: 'llama3.2:latest' }), JSON.parse(show));
    const bytes = await (await fetch(`${url}/api/ps`)).text();
    assert.equal(bytes, ps, 'byte for byte');
    assert.deepEqual(
      seen.map((s) => `${s.method} ${s.path}`),
      ['GET /api/version', 'POST /api/show', 'GET /api/ps'],
    );
    assert.deepEqual(JSON.parse(seen[1]!.body), { model: 'llama3.2:latest' });
    assert.ok(seen.every((s) => s.authorization === 'Bearer upstream-secret'));
  });

  it("an Ollama upstream's own 404 (model not found) passes through", async () => {
    const { upstream } = scripted(['ollama-chat'], {
      '/api/show': { status: 404, body: '{"error":"model \'llama3.2:latest\' not found"}' },
    });
    const { url } = await served([upstream]);
    const response = await fetch(`${url}/api/show`, { method: 'POST', body: '{"model":"llama3.2:latest"}' });
    assert.equal(response.status, 404);
    assert.deepEqual(await response.json(), { error: "model 'llama3.2:latest' not found" });
  });

  it("llama-server's /props and /health come from the llama.cpp upstream as they are", async () => {
    const props = LLAMA_PROPS;
    const { upstream, seen } = scripted(['llamacpp', 'openai-chat'], {
      '/props': { body: props },
      '/health': {
        status: 503,
        body: '{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}',
      },
    });
    const { url } = await served([upstream]);
    const answer = await fetch(`${url}/props`);
    assert.equal(answer.status, 200);
    assert.equal(await answer.text(), props);
    assert.equal(answer.headers.get('server'), null, "the upstream's other headers stay behind");
    const health = await fetch(`${url}/health`);
    assert.equal(health.status, 503, 'a loading llama-server is not healthy through the gateway either');
    assert.match(await health.text(), /Loading model/);
    assert.deepEqual(
      seen.map((s) => s.path),
      ['/props', '/health'],
    );
  });

  it("TGI's /info and its empty /health come from the TGI upstream", async () => {
    const info =
      '{"model_id":"HuggingFaceTB/SmolLM2-135M","model_sha":"abc","max_total_tokens":2048,"version":"3.3.4"}';
    const { upstream } = scripted(['tgi'], { '/info': { body: info }, '/health': { body: '' } });
    const { url } = await served([upstream]);
    assert.equal(await (await fetch(`${url}/info`)).text(), info);
    const health = await fetch(`${url}/health`);
    assert.equal(health.status, 200);
    assert.equal(await health.text(), '');
  });

  it('an upstream without the route gets the gateway answer; an unreachable one is unhealthy', async () => {
    // Speaks llama.cpp but has no /props (404 text): the gateway's own /props.
    const { upstream } = scripted(['llamacpp'], {});
    const { url } = await served([upstream]);
    const props = await getJson(`${url}/props`);
    assert.equal(props.status, 200);
    assert.equal(props.body.build_info, `tokenwire-${GATEWAY_VERSION}`);
    assert.deepEqual((await getJson(`${url}/health`)).body, { status: 'ok' });

    const down: Upstream = {
      name: 'down',
      url: 'http://down.internal',
      dialects: ['openai-chat'],
      fetch: () => Promise.reject(new TypeError('fetch failed')),
    };
    const gone = await served([down]);
    const health = await getJson(`${gone.url}/health`);
    assert.equal(health.status, 503);
    assert.equal((health.body.error as { type?: unknown }).type, 'unavailable_error');
    assert.ok(!JSON.stringify(health.body).includes('down.internal'));
  });

  it('/health is 503 while the gateway shuts down', async () => {
    const { url, gateway } = await served([simUpstream(['openai-chat'])]);
    await gateway.close();
    const health = await fetch(`${url}/health`);
    assert.equal(health.status, 503);
    assert.match(await health.text(), /shutting down/);
  });
});

/** The start of llama-server b10108's /props (../shared/real-captures/llamacpp-b10108/r02-props.body). */
const LLAMA_PROPS =
  '{"default_generation_settings":{"params":{"seed":4294967295,"temperature":0.800000011920929,"top_k":40},"n_ctx":512},"total_slots":2,"model_alias":"models/tiny.gguf","model_path":"models/tiny.gguf","build_info":"b10108-0a50d99","is_sleeping":false}';

describe('side routes behind the API-key guard', () => {
  it("/props, /info and Ollama's routes need a key; /health stays open for probes", async () => {
    const gateway = createGateway({ upstreams: [simUpstream(['openai-chat'])], keepaliveMs: 0 });
    const guarded = guardGateway(gateway.fetch, { apiKeys: ['k1'] });
    try {
      const call = (method: string, path: string, key?: string) =>
        guarded(
          new Request(`http://gateway.test${path}`, {
            method,
            headers: key === undefined ? {} : { authorization: `Bearer ${key}` },
            body:
              method !== 'POST'
                ? null
                : path === '/generate'
                  ? '{"inputs":"x","parameters":{"max_new_tokens":2}}'
                  : '{"model":"sim"}',
          }),
        );
      for (const [method, path] of [
        ['GET', '/props'],
        ['GET', '/info'],
        ['GET', '/api/version'],
        ['GET', '/api/ps'],
        ['POST', '/api/show'],
        ['GET', '/v1/models/sim'],
        ['POST', '/generate'],
      ] as const) {
        const refused = await call(method, path);
        assert.equal(refused.status, 401, `${method} ${path}`);
        await refused.body?.cancel();
        const allowed = await call(method, path, 'k1');
        assert.equal(allowed.status, 200, `${method} ${path} with the key`);
        await allowed.body?.cancel();
      }
      const generate = await call('POST', '/generate');
      assert.equal(typeof ((await generate.json()) as { error?: unknown }).error, 'string', "TGI's shape");
      assert.equal((await call('GET', '/health')).status, 200);
    } finally {
      await gateway.close();
    }
  });
});
