import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { getDialect } from '../../src/dialects/registry.ts';
import { createSim } from '../../src/sim/index.ts';
import { ask, FakeClock, ofType, postRaw, readChunks, run } from './sim-helpers.ts';

const fast = () => {
  const clock = new FakeClock();
  return createSim({ now: clock.now, sleep: clock.sleep });
};
const openAiChat = getDialect('openai-chat');
const OTHER_SCRIPTS =
  /[\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Han}\p{Script=Cyrillic}\p{Script=Arabic}\p{Script=Devanagari}þðÞÐ]/u;
const EMOJI = /\p{Extended_Pictographic}/u;

describe('sim: the answer follows the prompt', () => {
  it('answers an English prompt in English, without other scripts or emoji', async () => {
    const sim = fast();
    for (let p = 0; p < 12; p++) {
      const { text } = await run(sim, openAiChat, ask(`Tell me about rivers, take ${p}.`));
      assert.ok(text.length > 20);
      assert.doesNotMatch(text, OTHER_SCRIPTS, text);
      assert.doesNotMatch(text, EMOJI, text);
      assert.match(text, /\b(the|a|and)\b/i);
    }
  });

  it("answers in the prompt's script: Japanese, Russian, Arabic, Hindi, Icelandic", async () => {
    const sim = fast();
    const cases: [string, RegExp][] = [
      ['川について教えてください。', /\p{Script=Hiragana}/u],
      ['Расскажи мне о реках.', /\p{Script=Cyrillic}/u],
      ['أخبرني عن الأنهار', /\p{Script=Arabic}/u],
      ['मुझे नदियों के बारे में बताओ', /\p{Script=Devanagari}/u],
      ['Segðu mér frá ánum á Íslandi', /[þðÁÍ]/u],
    ];
    for (const [prompt, script] of cases) {
      const { text } = await run(sim, openAiChat, ask(prompt));
      assert.match(text, script, `${prompt} -> ${text}`);
      assert.doesNotMatch(text, /\b(the|river)\b/, `${prompt} is not answered in English`);
    }
  });

  it('follows the last user turn of a conversation', async () => {
    const sim = fast();
    const request = {
      messages: [
        { role: 'user' as const, content: '川について教えてください。' },
        { role: 'assistant' as const, content: '川はゆっくりと海へ流れていきます。' },
        { role: 'user' as const, content: 'And now in English, please.' },
      ],
    };
    const { text } = await run(sim, openAiChat, request);
    assert.doesNotMatch(text, OTHER_SCRIPTS, text);
  });

  it('the multilingual fault answers in every script, with emoji, whatever the prompt', async () => {
    const sim = fast();
    let all = '';
    for (let p = 0; p < 8; p++) {
      const result = await run(sim, openAiChat, ask(`prompt ${p}`), {
        headers: { 'x-tokenwire-fault': 'multilingual' },
      });
      all += result.text;
    }
    for (const script of [/\p{Script=Hiragana}/u, /\p{Script=Cyrillic}/u, /\p{Script=Arabic}/u, EMOJI])
      assert.match(all, script);
  });
});

describe('sim: token counts as a real server reports them', () => {
  it('counts the chat template: "hello" is 11 prompt tokens (llama-server b10108), a raw prompt BOS + its tokens', async () => {
    const sim = fast();
    const usageOf = async (dialectId: string, request: Parameters<typeof ask>[1] & object) => {
      const result = await run(sim, getDialect(dialectId), request);
      return ofType(result.events, 'usage').at(-1)?.usage;
    };
    assert.equal((await usageOf('openai-chat', ask('hello')))?.inputTokens, 11);
    // A raw prompt (llama-server's /completion, "Once upon a time" is 5 there: BOS + 4).
    assert.equal((await usageOf('openai-completions', { prompt: 'Once upon a time' }))?.inputTokens, 5);
    // Each further turn adds its template tokens too.
    const twoTurns = await usageOf('openai-chat', {
      messages: [
        { role: 'system', content: 'hello' },
        { role: 'user', content: 'hello' },
      ],
    });
    assert.equal(twoTurns?.inputTokens, 17);
  });

  it('llama.cpp: tokens_evaluated is the prompt size on every event; tokens_predicted never jumps at the end', async () => {
    const sim = fast();
    for (const [prompt, limit] of [
      ['hello', 400],
      ['Tell me a story', 9],
    ] as const) {
      const response = await postRaw(sim, '/completion', { prompt, stream: true, n_predict: limit });
      const { chunks } = await readChunks(response);
      const events = new TextDecoder()
        .decode(Buffer.concat(chunks))
        .split('\n')
        .filter((line) => line.startsWith('data: '))
        .map((line) => JSON.parse(line.slice(6)) as Record<string, unknown>);
      const final = events.at(-1)!;
      assert.equal(final.stop, true);
      const partial = events.slice(0, -1);
      assert.ok(partial.length > 3);
      const evaluated = new Set(events.map((event) => event.tokens_evaluated));
      assert.deepEqual([...evaluated], [final.tokens_evaluated], 'one prompt size from the first event on');
      assert.ok((final.tokens_evaluated as number) > 1);
      const predicted = partial.map((event) => event.tokens_predicted as number);
      for (let i = 1; i < predicted.length; i++) assert.ok(predicted[i]! > predicted[i - 1]!);
      assert.equal(
        final.tokens_predicted,
        predicted.at(-1),
        `${prompt}: the final count is the last event's`,
      );
      const timings = final.timings as { predicted_n: number };
      assert.equal(timings.predicted_n, final.tokens_predicted);
    }
  });
});

describe('sim: the models it serves', () => {
  const strict = () => {
    const clock = new FakeClock();
    return createSim({ now: clock.now, sleep: clock.sleep, models: ['sim', 'tiny'] });
  };

  it("answers an unknown model with the dialect's model-not-found, before streaming", async () => {
    const sim = strict();
    const vllm = await postRaw(sim, '/v1/chat/completions', {
      model: 'gpt-4o',
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.equal(vllm.status, 404);
    assert.deepEqual(await vllm.json(), {
      error: { message: 'The model `gpt-4o` does not exist.', type: 'NotFoundError', param: null, code: 404 },
    });
    const ollama = await postRaw(sim, '/api/chat', {
      model: 'llama3.2',
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.equal(ollama.status, 404);
    assert.deepEqual(await ollama.json(), { error: 'model "llama3.2" not found, try pulling it first' });
    assert.equal(sim.stats.log.at(-1)?.outcome, 'failed');
  });

  it('serves the listed names, with fault suffixes and Ollama tags; llama-server and TGI serve any name', async () => {
    const sim = strict();
    for (const model of ['sim', 'tiny', 'sim@tps=900', 'sim:latest']) {
      const path = model === 'sim:latest' ? '/api/chat' : '/v1/chat/completions';
      const response = await postRaw(sim, path, {
        model,
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
      });
      assert.equal(response.status, 200, model);
      await readChunks(response);
    }
    for (const path of ['/completion', '/generate_stream']) {
      const body =
        path === '/completion' ? { prompt: 'hi', model: 'whatever' } : { inputs: 'hi', model: 'whatever' };
      const response = await postRaw(sim, path, { ...body, stream: true });
      assert.equal(response.status, 200, path);
      await readChunks(response);
    }
    const models = (await (await sim.fetch(new Request('http://sim.test/v1/models'))).json()) as {
      data: { id: string }[];
    };
    assert.deepEqual(
      models.data.map((model) => model.id),
      ['sim', 'tiny'],
    );
  });

  it('without a model list it serves any name (the library default), listing sim', async () => {
    const sim = fast();
    const response = await postRaw(sim, '/v1/chat/completions', {
      model: 'anything',
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.equal(response.status, 200);
    await readChunks(response);
  });
});
