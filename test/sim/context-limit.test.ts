import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createSim } from '../../src/sim/index.ts';
import { loadTokenizer } from '../../src/sim/tokenizer.ts';
import { FakeClock, postRaw } from './sim-helpers.ts';

const CONTEXT = 512;
/** 2 000 tokens of ordinary words, far past the context. */
const longText = 'the quick brown fox jumps over the lazy dog '.repeat(200);

function sim(contextTokens = CONTEXT) {
  const clock = new FakeClock();
  return createSim({ now: clock.now, sleep: clock.sleep, contextTokens });
}

const chatBody = (content: string) => ({ model: 'sim', stream: true, messages: [{ role: 'user', content }] });
const promptBody = (prompt: string) => ({ model: 'sim', stream: true, prompt });

async function json(response: Response): Promise<Record<string, unknown>> {
  return JSON.parse(await response.text()) as Record<string, unknown>;
}

describe('sim context length', () => {
  it("answers llama-server's 400 exceed_context_size_error with n_prompt_tokens and n_ctx, byte for byte", async () => {
    const tokenizer = await loadTokenizer();
    const expectedTokens = await tokenizer.count(longText);
    for (const [path, body, flavor] of [
      ['/completion', promptBody(longText), 'modern'],
      ['/v1/chat/completions', chatBody(longText), 'llamacpp'],
      ['/v1/completions', promptBody(longText), 'llamacpp'],
    ] as const) {
      const response = await postRaw(sim(), path, body, { headers: { 'x-tokenwire-flavor': flavor } });
      assert.equal(response.status, 400, path);
      assert.equal(response.headers.get('content-type'), 'application/json; charset=utf-8');
      const text = await response.text();
      const tokens = (JSON.parse(text) as { error: { n_prompt_tokens: number } }).error.n_prompt_tokens;
      assert.ok(tokens >= CONTEXT && tokens <= (expectedTokens ?? 0) + 5, `${tokens} prompt tokens`);
      // The capture's shape (real-captures/llamacpp-b10108/c11, n14): key order and wording.
      assert.equal(
        text,
        `{"error":{"code":400,"message":"request (${tokens} tokens) exceeds the available context size (${CONTEXT} tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":${tokens},"n_ctx":${CONTEXT}}}`,
      );
    }
  });

  it("answers vLLM's 400 BadRequestError on the OpenAI routes", async () => {
    for (const [path, body] of [
      ['/v1/chat/completions', chatBody(longText)],
      ['/v1/completions', promptBody(longText)],
    ] as const) {
      const response = await postRaw(sim(), path, body, { headers: { 'x-tokenwire-flavor': 'vllm' } });
      assert.equal(response.status, 400);
      const error = (await json(response)).error as Record<string, unknown>;
      assert.equal(error.type, 'BadRequestError');
      assert.equal(error.code, 400);
      assert.match(
        String(error.message),
        /^This model's maximum context length is 512 tokens\. However, your request has \d+ input tokens\./,
      );
    }
  });

  it("answers Ollama's error on the Ollama routes and TGI's 422 validation error on TGI's", async () => {
    for (const [path, body] of [
      ['/api/chat', chatBody(longText)],
      ['/api/generate', promptBody(longText)],
    ] as const) {
      const response = await postRaw(sim(), path, body);
      assert.equal(response.status, 400, path);
      assert.deepEqual(await json(response), { error: 'the input length exceeds the context length' });
    }
    const tgi = await postRaw(sim(), '/generate_stream', { inputs: longText, parameters: {} });
    assert.equal(tgi.status, 422);
    const error = await json(tgi);
    assert.equal(error.error_type, 'validation');
    assert.match(
      String(error.error),
      /^Input validation error: `inputs` must have less than 511 tokens\. Given: \d+$/,
    );
    const tgiChat = await postRaw(sim(), '/v1/chat/completions', chatBody(longText), {
      headers: { 'x-tokenwire-flavor': 'tgi' },
    });
    assert.equal(tgiChat.status, 422);
    assert.equal((await json(tgiChat)).error_type, 'validation');
  });

  it('streams a prompt that fits, counts the tools too, and rejects a 3 MB run of letters at once', async () => {
    const fits = await postRaw(sim(), '/v1/chat/completions', chatBody('hello there'));
    assert.equal(fits.status, 200);
    await fits.text();
    // The prompt alone fits; its tools do not.
    const tools = [
      { type: 'function', function: { name: 'f', description: longText, parameters: { type: 'object' } } },
    ];
    const withTools = await postRaw(sim(), '/v1/chat/completions', { ...chatBody('hi'), tools });
    assert.equal(withTools.status, 400);
    const letters = await postRaw(sim(32768), '/v1/chat/completions', chatBody('a'.repeat(3_000_000)));
    assert.equal(letters.status, 400);
    assert.match(
      String(((await json(letters)).error as { message: string }).message),
      /maximum context length/,
    );
  });

  it('refuses a context length that is not a positive integer', () => {
    assert.throws(() => createSim({ contextTokens: 0 }), RangeError);
    assert.throws(() => createSim({ contextTokens: 1.5 }), RangeError);
  });
});
