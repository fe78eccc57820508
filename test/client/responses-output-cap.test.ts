import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { complete } from '../../src/client/token-stream.ts';
import { fixturePath } from '../helpers/paths.ts';
import { type ScriptServer, scriptServer } from '../helpers/script-server.ts';

// llama-server b10108 ends a Responses answer cut by max_output_tokens with `status: "completed"`
// (p01: 16 output tokens, the request's cap 16): only the request's cap tells it was cut.
const p01 = readFileSync(fixturePath('real-captures', 'llamacpp-b10108', 'p01-responses-stream.sse'));

describe("the request's output cap reaches the Responses decoder", () => {
  let server: ScriptServer;
  before(async () => {
    server = await scriptServer({
      headers: { 'content-type': 'text/event-stream' },
      steps: [{ write: p01 }],
    });
  });
  after(() => server.close());

  it('a normalized request with maxTokens 16: truncated (finish length), still complete', async () => {
    const result = await complete({
      url: `${server.url}/v1/responses`,
      request: { messages: [{ role: 'user', content: 'hello' }], maxTokens: 16 },
    });
    assert.equal(result.complete, true);
    assert.equal(result.truncated, true);
    assert.equal(result.finishReason, 'length');
  });

  it('a raw body with max_output_tokens 16: truncated', async () => {
    const result = await complete({
      url: `${server.url}/v1/responses`,
      body: { model: 'x', input: 'hello', max_output_tokens: 16 },
    });
    assert.equal(result.truncated, true);
  });

  it('the dialect detected from the bytes (no path) still gets the cap', async () => {
    const result = await complete({
      url: `${server.url}/somewhere`,
      body: { model: 'x', input: 'hello', max_output_tokens: 16 },
    });
    assert.equal(result.truncated, true);
  });

  it('a cap above the output count: finished, not truncated', async () => {
    const result = await complete({
      url: `${server.url}/v1/responses`,
      request: { messages: [{ role: 'user', content: 'hello' }], maxTokens: 64 },
    });
    assert.equal(result.truncated, false);
    assert.equal(result.finishReason, 'stop');
  });
});
