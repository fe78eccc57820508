import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { serve } from '../../src/node/serve.ts';
import { startServe } from './cli-helpers.ts';

const body = (model: string) =>
  JSON.stringify({ model, stream: true, max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] });
const post = (url: string, model: string, fault = '') =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-tokenwire-fault': fault },
    body: body(model),
  });

describe('tokenwire serve: the raw simulator route and --sim-models', () => {
  it("mounts the simulator's own bytes at /sim/<dialect path>, where the gateway's re-encoding would hide a fault", async () => {
    const run = startServe(['--json', '--sim-tps', '500']);
    try {
      const url = String((await run.started).url);
      // A first request loads the tokenizer (a quarter of a second, counted in the schedule: it would
      // swallow the stall below).
      await (await post(`${url}/sim/v1/chat/completions`, 'sim')).text();
      const fault = 'keepalive=20,stall=200,stall-after=2,no-done';
      const raw = await (await post(`${url}/sim/v1/chat/completions`, 'sim', fault)).text();
      assert.match(raw, /^:/m, "the simulator's keepalive comments arrive");
      assert.doesNotMatch(raw, /\[DONE\]/, 'the raw route keeps the fault');
      assert.doesNotMatch(raw, /^id: /m, 'the simulator writes no SSE ids; the gateway does');
      const gateway = await (await post(`${url}/v1/chat/completions`, 'sim', fault)).text();
      assert.match(gateway, /^id: /m);
      assert.doesNotMatch(
        gateway,
        /^:/m,
        'through the gateway the comments are gone (it decodes and re-encodes)',
      );
      // The playground is still served beside it.
      assert.equal((await fetch(`${url}/`)).status, 200);
    } finally {
      assert.equal(await run.stop(), 0);
    }
  });

  it('--sim-models lists the models; other names get "model not found"', async () => {
    const run = startServe(['--json', '--sim-tps', '500', '--sim-models', 'tiny,big']);
    try {
      const url = String((await run.started).url);
      const models = (await (await fetch(`${url}/sim/v1/models`)).json()) as { data: { id: string }[] };
      assert.deepEqual(
        models.data.map((model) => model.id),
        ['tiny', 'big'],
      );
      const listed = (await (await fetch(`${url}/v1/models`)).json()) as { data: { id: string }[] };
      assert.deepEqual(
        listed.data.map((model) => model.id),
        ['tiny', 'big'],
      );
      const missing = await post(`${url}/sim/v1/chat/completions`, 'sim');
      assert.equal(missing.status, 404);
      assert.match(await missing.text(), /The model `sim` does not exist/);
      const through = await post(`${url}/v1/chat/completions`, 'nope');
      assert.equal(through.status, 404);
      await through.text();
      const ok = await post(`${url}/v1/chat/completions`, 'big@cut-after=2');
      assert.equal(ok.status, 200);
      await ok.text();
    } finally {
      assert.equal(await run.stop(), 0);
    }
  });

  it('fronting a real upstream, there is no /sim/ route', async () => {
    const upstream = await serve(async () => Response.json({ object: 'list', data: [{ id: 'real' }] }));
    const run = startServe(['--json', '--upstream', upstream.url, '--upstream-dialect', 'openai-chat']);
    try {
      const url = String((await run.started).url);
      const response = await post(`${url}/sim/v1/chat/completions`, 'real');
      assert.equal(response.status, 404);
      await response.text();
    } finally {
      assert.equal(await run.stop(), 0);
      await upstream.close();
    }
  });
});
