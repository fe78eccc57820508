import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { textGenerationStream } from '@huggingface/inference';
import { Ollama } from 'ollama';
import { startGateway, type TestGateway } from '../helpers/gateway.ts';

/**
 * Two calls docs/gateway.md lists as working, made the way a user makes them, against the gateway as
 * `tokenwire serve` sets it up by default: the simulator with its model list (`sim`), so other names are
 * "model not found".
 */
describe('documented calls against the default set-up', () => {
  let g: TestGateway;
  before(async () => {
    g = await startGateway({ sim: { models: ['sim'], contextTokens: 4096 }, simOverHttp: true });
  });
  after(async () => {
    await g?.close();
  });

  it("ollama-js show(): the simulator's details, context length and capabilities", async () => {
    const ollama = new Ollama({ host: g.url });
    const shown = await ollama.show({ model: 'sim' });
    assert.equal(shown.details.family, 'sim');
    // ollama-js types model_info as a Map; on the wire (and at run time) it is a JSON object.
    const info = shown.model_info as unknown as Record<string, unknown>;
    assert.equal(info['sim.context_length'], 4096);
    assert.equal(info['general.architecture'], 'sim');
    assert.deepEqual(shown.capabilities, ['completion', 'tools', 'thinking']);
    assert.equal(shown.template, '', 'no template is invented');
    // Ollama's implicit :latest tag names the same model.
    assert.equal((await ollama.show({ model: 'sim:latest' })).details.family, 'sim');
  });

  it("ollama-js show() of an unknown model: Ollama's 404, model 'x' not found", async () => {
    const ollama = new Ollama({ host: g.url });
    await assert.rejects(ollama.show({ model: 'nope' }), (error: Error & { status_code?: number }) => {
      assert.equal(error.status_code, 404);
      assert.match(error.message, /model 'nope' not found/);
      return true;
    });
    const missing = await fetch(`${g.url}/api/show`, { method: 'POST', body: '{}' });
    assert.equal(missing.status, 400);
    assert.deepEqual(await missing.json(), { error: 'model is required' });
  });

  // @huggingface/inference 4 posts to `<endpointUrl>/v1/completions` with `model` set to the endpoint URL
  // unless `model` is given too. TGI and llama-server take any name; a server with a model list (the
  // simulator by default, vLLM, Ollama) needs the model named.
  it('@huggingface/inference textGenerationStream with endpointUrl and model streams an answer', async () => {
    let text = '';
    let finish: string | null | undefined;
    for await (const output of textGenerationStream({
      endpointUrl: g.url,
      model: 'sim',
      inputs: 'hello',
      parameters: { max_new_tokens: 10 },
    })) {
      const chunk = output as unknown as { choices?: { text?: string; finish_reason?: string | null }[] };
      text += chunk.choices?.[0]?.text ?? '';
      finish = chunk.choices?.[0]?.finish_reason ?? finish;
    }
    assert.ok(text.length > 0);
    assert.equal(finish, 'length');
  });

  it('@huggingface/inference with endpointUrl alone: the 404 names the endpoint URL as the model asked for', async () => {
    await assert.rejects(
      async () => {
        for await (const _ of textGenerationStream({
          endpointUrl: g.url,
          inputs: 'hello',
          parameters: { max_new_tokens: 10 },
        })) {
        }
      },
      (error: Error) => {
        assert.match(error.message, new RegExp(`${g.url.replace(/[.]/g, '\\.')}`));
        return true;
      },
    );
    const direct = await fetch(`${g.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: g.url, prompt: 'hello', stream: true }),
    });
    assert.equal(direct.status, 404);
  });
});
