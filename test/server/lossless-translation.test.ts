import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startGateway, type TestGateway } from '../helpers/gateway.ts';

/**
 * Lossless, or loud: a request field the upstream's dialect has no counterpart for is a 400
 * naming it, before anything streams; with `drop_params` (the request's, or the operator's) it is
 * dropped and named in `x-tokenwire-dropped-params`. A same-dialect upstream gets the body as it is.
 */
describe('request translation: total or loud', () => {
  let ollamaUp: TestGateway;
  let llamacppUp: TestGateway;
  let dropping: TestGateway;
  let sameDialect: TestGateway;

  before(async () => {
    ollamaUp = await startGateway({ upstreamDialects: ['ollama-chat'] });
    llamacppUp = await startGateway({ upstreamDialects: ['llamacpp'] });
    dropping = await startGateway({ upstreamDialects: ['ollama-chat'], gateway: { dropParams: true } });
    sameDialect = await startGateway({ upstreamDialects: ['openai-chat'] });
  });

  after(async () => {
    for (const g of [ollamaUp, llamacppUp, dropping, sameDialect]) await g?.close();
  });

  const chat = (extra: Record<string, unknown>) =>
    JSON.stringify({
      model: 'sim',
      stream: true,
      max_tokens: 5,
      messages: [{ role: 'user', content: 'hi' }],
      ...extra,
    });

  const post = (base: string, path: string, body: string) =>
    fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });

  it('refuses n, logit_bias and tool_choice to an Ollama upstream with a 400 that names each, in the client dialect', async () => {
    const response = await post(
      ollamaUp.url,
      '/v1/chat/completions',
      chat({
        n: 2,
        logit_bias: { '1': 1 },
        tool_choice: 'required',
        tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
      }),
    );
    assert.equal(response.status, 400);
    const body = (await response.json()) as { error: { message: string; type: string } };
    assert.equal(body.error.type, 'invalid_request_error');
    for (const field of ['n', 'logit_bias', 'tool_choice', 'ollama-chat', 'drop_params']) {
      assert.match(body.error.message, new RegExp(field));
    }
  });

  it('refuses tools to an upstream that cannot take them (llama.cpp /completion)', async () => {
    const response = await post(
      llamacppUp.url,
      '/v1/chat/completions',
      chat({ tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }] }),
    );
    assert.equal(response.status, 400);
    assert.match(((await response.json()) as { error: { message: string } }).error.message, /tools/);
  });

  it('names Ollama options with no counterpart as options.<name>, in Ollama’s error shape', async () => {
    const response = await post(
      llamacppUp.url,
      '/api/chat',
      JSON.stringify({
        model: 'sim',
        messages: [{ role: 'user', content: 'hi' }],
        options: { num_predict: 5, mirostat: 2 },
      }),
    );
    assert.equal(response.status, 400);
    const body = (await response.json()) as { error: string };
    assert.match(body.error, /options\.mirostat/);
  });

  it('drops them when the request says drop_params, and lists them in a header', async () => {
    const response = await post(
      ollamaUp.url,
      '/v1/chat/completions',
      chat({ n: 2, logit_bias: { '1': 1 }, drop_params: true }),
    );
    assert.equal(response.status, 200);
    assert.deepEqual(response.headers.get('x-tokenwire-dropped-params')?.split(', ').sort(), [
      'logit_bias',
      'n',
    ]);
    const text = await response.text();
    assert.match(text, /data: \[DONE\]/);
  });

  it('drops them when the operator says so (dropParams), and a request can still ask to be refused', async () => {
    const dropped = await post(dropping.url, '/v1/chat/completions', chat({ logit_bias: { '1': 1 } }));
    assert.equal(dropped.status, 200);
    assert.equal(dropped.headers.get('x-tokenwire-dropped-params'), 'logit_bias');
    await dropped.text();
    const refused = await post(
      dropping.url,
      '/v1/chat/completions',
      chat({ logit_bias: { '1': 1 }, drop_params: false }),
    );
    assert.equal(refused.status, 400);
    await refused.text();
  });

  it('passes everything to a same-dialect upstream: no 400, no header', async () => {
    const response = await post(sameDialect.url, '/v1/chat/completions', chat({ logprobs: true, user: 'x' }));
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('x-tokenwire-dropped-params'), null);
    await response.text();
  });

  it('refuses a drop_params that is not a boolean', async () => {
    const response = await post(ollamaUp.url, '/v1/chat/completions', chat({ drop_params: 'yes' }));
    assert.equal(response.status, 400);
    assert.match(((await response.json()) as { error: { message: string } }).error.message, /drop_params/);
  });
});
