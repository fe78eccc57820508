import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DIALECT_IDS } from '../../src/dialects/dialect.ts';
import { createGateway } from '../../src/server/create-gateway.ts';
import type { Upstream } from '../../src/server/upstream/upstream.ts';
import { createSim } from '../../src/sim/index.ts';

/** An upstream on its own simulator, counting the requests it gets. */
function simUpstream(name: string, models: string[] | undefined, extra: Partial<Upstream> = {}) {
  // A server that takes any name is a simulator serving any name.
  const strict = models !== undefined && extra.anyModelName !== true;
  const sim = createSim({ timing: { tokensPerSecond: 5000, loadMs: 0 }, ...(strict ? { models } : {}) });
  const calls: string[] = [];
  const upstream: Upstream = {
    name,
    url: `http://${name}.internal`,
    dialects: DIALECT_IDS,
    models,
    fetch: (request) => {
      calls.push(new URL(request.url).pathname);
      return sim.fetch(request);
    },
    ...extra,
  };
  return { upstream, calls };
}

function post(gateway: { fetch(request: Request): Promise<Response> }, path: string, body: unknown) {
  return gateway.fetch(
    new Request(`http://127.0.0.1${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', host: '127.0.0.1' },
      body: JSON.stringify(body),
    }),
  );
}

const chat = (model: string) => ({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 });

test('a model no upstream lists gets the OpenAI server’s 404 naming the models served, and no upstream is called', async () => {
  const a = simUpstream('a', ['alpha']);
  const b = simUpstream('b', ['beta']);
  const gateway = createGateway({ upstreams: [a.upstream, b.upstream] });
  try {
    const response = await post(gateway, '/v1/chat/completions', { ...chat('gamma'), stream: true });
    assert.equal(response.status, 404);
    const body = (await response.json()) as { error: { message: string; type: string } };
    // The server's own words, then (several servers behind the gateway) the models there are.
    assert.equal(
      body.error.message,
      'The model `gamma` does not exist. The models served here: alpha, beta.',
    );
    assert.equal(body.error.type, 'NotFoundError');
    assert.deepEqual([...a.calls, ...b.calls], []);
  } finally {
    await gateway.close();
  }
});

test('Ollama clients get Ollama’s "model not found", and a listed model is routed to its upstream', async () => {
  const a = simUpstream('a', ['alpha:latest']);
  const b = simUpstream('b', ['beta']);
  const gateway = createGateway({ upstreams: [a.upstream, b.upstream] });
  try {
    const missing = await post(gateway, '/api/chat', chat('gamma'));
    assert.equal(missing.status, 404);
    assert.deepEqual(await missing.json(), {
      error: 'model "gamma" not found, try pulling it first. The models served here: alpha:latest, beta.',
    });
    // `alpha` is `alpha:latest` to Ollama.
    const found = await post(gateway, '/api/chat', { ...chat('alpha'), stream: false });
    assert.equal(found.status, 200, await found.clone().text());
    await found.text();
    const beta = await post(gateway, '/v1/chat/completions', chat('beta'));
    assert.equal(beta.status, 200);
    await beta.text();
    assert.equal(a.calls.length, 1);
    assert.equal(b.calls.length, 1);
  } finally {
    await gateway.close();
  }
});

test('Messages and Responses clients get their own error shape for an unknown model', async () => {
  const a = simUpstream('a', ['alpha']);
  const gateway = createGateway({ upstreams: [a.upstream] });
  try {
    const messages = await post(gateway, '/v1/messages', { ...chat('gamma'), stream: true });
    assert.equal(messages.status, 404);
    const said = (await messages.json()) as { type: string; error: { type: string; message: string } };
    assert.equal(said.type, 'error');
    assert.match(said.error.message, /gamma/);
    const responses = await post(gateway, '/v1/responses', { model: 'gamma', input: 'hi', stream: true });
    assert.equal(responses.status, 404);
    const error = ((await responses.json()) as { error: { message: string } }).error;
    assert.match(error.message, /gamma/);
    assert.deepEqual(a.calls, []);
  } finally {
    await gateway.close();
  }
});

test('a server that takes any name (llama-server, TGI) or has no list gets the unknown model', async () => {
  const listed = simUpstream('listed', ['alpha']);
  const anyName = simUpstream('llama', ['tiny.gguf'], { anyModelName: true });
  const gateway = createGateway({ upstreams: [listed.upstream, anyName.upstream] });
  const unlisted = simUpstream('unlisted', undefined);
  const second = createGateway({ upstreams: [listed.upstream, unlisted.upstream] });
  try {
    const response = await post(gateway, '/v1/chat/completions', { ...chat('gpt-4o'), stream: false });
    assert.equal(response.status, 200);
    assert.equal(anyName.calls.length, 1);
    assert.equal(listed.calls.length, 0);
    await response.text();
    const other = await post(second, '/v1/chat/completions', { ...chat('gpt-4o'), stream: false });
    assert.equal(other.status, 200);
    await other.text();
    assert.equal(unlisted.calls.length, 1);
    assert.equal(listed.calls.length, 0);
  } finally {
    await gateway.close();
    await second.close();
  }
});

test('llama.cpp and TGI native clients are served whatever model they name, as those servers do', async () => {
  const a = simUpstream('a', ['alpha']);
  const gateway = createGateway({ upstreams: [a.upstream] });
  try {
    const llama = await post(gateway, '/completion', {
      model: 'other',
      prompt: 'hi',
      n_predict: 2,
      stream: true,
    });
    assert.equal(llama.status, 200);
    await llama.text();
    const tgi = await post(gateway, '/generate_stream', {
      model: 'other',
      inputs: 'hi',
      parameters: { max_new_tokens: 2 },
    });
    assert.equal(tgi.status, 200);
    await tgi.text();
    assert.equal(a.calls.length, 2);
  } finally {
    await gateway.close();
  }
});
