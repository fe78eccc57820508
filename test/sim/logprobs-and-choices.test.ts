import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { complete } from '../../src/client/token-stream.ts';
import type { TokenLogprob } from '../../src/events/stream-event.ts';
import { createSim } from '../../src/sim/index.ts';

/**
 * The simulator answers `n` and log probabilities as each server does, seeded: what the client reads back
 * through its own decoders is the shape of every real server's answer (a chosen token first among its
 * alternatives, real token ids and bytes, probabilities that add up to at most 1).
 */
const sim = createSim({ timing: { tokensPerSecond: 100_000, loadMs: 0, ttftMs: 0 } });
const ask = (path: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  complete(
    { url: `http://sim.test${path}`, body: Object.assign({ model: 'sim', stream: true }, body), headers },
    { fetch: (request) => sim.fetch(request) },
  );
const raw = async (path: string, body: Record<string, unknown>, headers: Record<string, string> = {}) => {
  const response = await sim.fetch(
    new Request(`http://sim.test${path}`, {
      method: 'POST',
      headers: Object.assign({ 'content-type': 'application/json' }, headers),
      body: JSON.stringify(Object.assign({ model: 'sim', stream: true }, body)),
    }),
  );
  return { status: response.status, text: await response.text() };
};
const messages = [{ role: 'user', content: 'Tell me about Reykjavík' }];

function checkLogprobs(logprobs: TokenLogprob[] | undefined, top: number, text: string): void {
  assert.ok(logprobs !== undefined && logprobs.length > 0, 'log probabilities are there');
  // Bytes where the dialect writes them (OpenAI chat, llama.cpp, Ollama, Responses), else the token strings.
  const bytes = logprobs.flatMap((entry) => entry.bytes ?? [...new TextEncoder().encode(entry.token)]);
  assert.equal(new TextDecoder().decode(new Uint8Array(bytes)), text, 'the tokens spell the text');
  for (const entry of logprobs) {
    assert.ok(entry.logprob <= 0 && entry.logprob >= Math.log(0.5), `chosen logprob ${entry.logprob}`);
    if (top === 0) continue;
    const alternatives = entry.top ?? [];
    assert.equal(alternatives.length, top);
    assert.equal(alternatives[0]?.token, entry.token, 'the chosen token comes first');
    assert.deepEqual(
      alternatives.map((a) => a.logprob),
      alternatives.map((a) => a.logprob).sort((a, b) => b - a),
      'sorted, most likely first',
    );
    const mass = alternatives.reduce((sum, a) => sum + Math.exp(a.logprob), 0);
    assert.ok(mass <= 1 + 1e-9, `probabilities add up to ${mass}`);
  }
}

describe('sim: n and log probabilities, per dialect', () => {
  it('OpenAI chat (vLLM): n: 2 with logprobs and top_logprobs: two seeded answers, each with its log probabilities', async () => {
    const body = {
      messages,
      n: 2,
      logprobs: true,
      top_logprobs: 2,
      max_tokens: 12,
      seed: 7,
      stream_options: { include_usage: true },
    };
    const result = await ask('/v1/chat/completions', body);
    assert.equal(result.complete, true);
    assert.equal(result.choices?.length, 2);
    const [first, second] = result.choices!;
    assert.notEqual(first!.text, second!.text, 'each choice is its own answer');
    checkLogprobs(first!.logprobs, 2, first!.text);
    checkLogprobs(second!.logprobs, 2, second!.text);
    assert.ok(first!.logprobs!.every((entry) => typeof entry.id === 'number' || entry.id === undefined));
    assert.equal(result.usage?.outputTokens, 24, 'usage counts every choice');
    const again = await ask('/v1/chat/completions', body);
    assert.deepEqual(again.choices, result.choices, 'the same request gives the same answers and numbers');
  });

  it('OpenAI completions: n: 3 and logprobs: 1', async () => {
    const result = await ask('/v1/completions', {
      prompt: 'Once upon a time',
      n: 3,
      logprobs: 1,
      max_tokens: 8,
    });
    assert.equal(result.choices?.length, 3);
    for (const choice of result.choices!) checkLogprobs(choice.logprobs, 1, choice.text);
  });

  it("llama-server's flavor refuses n > 1 before streaming, as llama-server does", async () => {
    const refused = await raw(
      '/v1/chat/completions',
      { messages, n: 2 },
      { 'x-tokenwire-flavor': 'llamacpp' },
    );
    assert.equal(refused.status, 400);
    assert.match(refused.text, /Only one completion choice is allowed/);
    const tooMany = await raw('/v1/chat/completions', { messages, n: 1000 });
    assert.equal(tooMany.status, 400);
    assert.match(tooMany.text, /n must be at most 16/);
  });

  it('llama.cpp /completion: token ids on every partial event, n_probs alternatives', async () => {
    const plain = await raw('/completion', { prompt: 'Once upon a time', n_predict: 6 });
    const partials = plain.text
      .split('\n\n')
      .filter((frame) => frame.startsWith('data: ') && frame.includes('"stop":false'));
    assert.ok(partials.length > 0);
    for (const frame of partials) assert.match(frame, /"tokens":\[\d+(,\d+)*\]/, frame);
    const result = await ask('/completion', { prompt: 'Once upon a time', n_predict: 6, n_probs: 2 });
    checkLogprobs(result.logprobs, 2, result.text);
  });

  it("TGI: every token carries its id and logprob (numbers, as TGI's always are); top_n_tokens adds alternatives", async () => {
    const plain = await raw('/generate_stream', { inputs: 'hello', parameters: { max_new_tokens: 6 } });
    assert.doesNotMatch(plain.text, /"id":null|"logprob":null/);
    assert.match(plain.text, /"token":\{"id":\d+,"text":"[^"]*","logprob":-?\d/);
    const result = await ask('/generate_stream', {
      inputs: 'hello',
      parameters: { max_new_tokens: 6, top_n_tokens: 2 },
    });
    checkLogprobs(result.logprobs, 2, result.text);
  });

  it('Ollama chat: logprobs with top_logprobs', async () => {
    const result = await ask('/api/chat', {
      messages,
      logprobs: true,
      top_logprobs: 2,
      options: { num_predict: 6 },
    });
    checkLogprobs(result.logprobs, 2, result.text);
  });

  it('Responses: top_logprobs with the output text logprobs included', async () => {
    const result = await ask('/v1/responses', {
      input: 'Tell me about Reykjavík',
      max_output_tokens: 8,
      top_logprobs: 2,
      include: ['message.output_text.logprobs'],
    });
    checkLogprobs(result.logprobs, 2, result.text);
  });

  it('no log probabilities unless asked (outside TGI)', async () => {
    const result = await ask('/v1/chat/completions', { messages, max_tokens: 6 });
    assert.equal(result.logprobs, undefined);
    assert.equal(result.choices, undefined);
  });
});
