import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { getDialect } from '../../src/dialects/registry.ts';
import { CORPUS } from '../../src/sim/corpus.ts';
import { corpusUnits } from '../../src/sim/corpus-units.ts';
import { corpusText, createSim } from '../../src/sim/index.ts';
import { loadTokenizer } from '../../src/sim/tokenizer.ts';
import { ask, concat, dialects, FakeClock, ofType, run } from './sim-helpers.ts';

const fast = () => {
  const clock = new FakeClock();
  return createSim({ now: clock.now, sleep: clock.sleep });
};
const cyclicCorpus = `${corpusText()}\n\n${corpusText()}`;
const openAiChat = getDialect('openai-chat');

describe('sim tokenizer and corpus', () => {
  it('tokenizes every sentence with the real BPE into token bytes that add up to the sentence', async () => {
    const tokenizer = await loadTokenizer();
    const units = corpusUnits(tokenizer);
    let splitChars = 0;
    for (const unit of [...units.answer, ...units.reasoning]) {
      assert.equal(new TextDecoder().decode(concat(unit.tokens)), unit.text);
      for (const bytes of unit.tokens) {
        if (new TextDecoder().decode(bytes).includes('\uFFFD')) splitChars += 1;
      }
    }
    // The corpus makes the hold-back path work: many tokens end inside a character.
    assert.ok(splitChars > 20, `${splitChars} tokens end inside a character`);
    assert.equal(
      units.answer.length,
      CORPUS.reduce((sum, p) => sum + p.sentences.length, 0),
    );
  });
});

describe('sim generation', () => {
  it('is deterministic for (seed, prompt, params), and differs with either', async () => {
    const prompts = ['one', 'two', 'three', 'four'];
    const answers = async (seed: number) => {
      const sim = createSim({ seed, sleep: async () => {} });
      const out: string[] = [];
      for (const prompt of prompts) out.push((await run(sim, openAiChat, ask(prompt))).text);
      return out;
    };
    const first = await answers(7);
    assert.deepEqual(await answers(7), first);
    assert.notDeepEqual(await answers(8), first);
    assert.ok(new Set(first).size > 1, 'different prompts give different answers');
    // The request's own seed is part of it too.
    const sim = fast();
    const a = await run(sim, openAiChat, ask('one', { seed: 1 }));
    const b = await run(sim, openAiChat, ask('one', { seed: 2 }));
    const c = await run(sim, openAiChat, ask('one', { seed: 1 }));
    assert.equal(a.text, c.text);
    assert.notEqual(a.text, b.text);
  });

  for (const dialect of dialects()) {
    it(`${dialect.id}: every flavor delivers whole characters in every script, however the writes are split`, async () => {
      const scripts: Record<string, RegExp> = {
        Japanese: /\p{Script=Hiragana}/u,
        Russian: /\p{Script=Cyrillic}/u,
        Arabic: /\p{Script=Arabic}/u,
        Hindi: /\p{Script=Devanagari}/u,
        Icelandic: /[þÞð]/u,
        'ZWJ emoji': /\u200d/u,
      };
      const seen = new Set<string>();
      for (const flavor of dialect.flavors) {
        // The multilingual corpus: every script and emoji (the default answers in the prompt's language).
        const headers = { 'x-tokenwire-flavor': flavor, 'x-tokenwire-fault': 'multilingual' };
        for (let p = 0; p < 8; p++) {
          const sim = fast();
          const base = await run(sim, dialect, ask(`prompt ${p}`), { headers });
          assert.ok(base.text.length > 0);
          assert.ok(
            cyclicCorpus.includes(base.text),
            `${flavor}: answer is corpus text: ${JSON.stringify(base.text)}`,
          );
          assert.doesNotMatch(base.text, /\uFFFD/);
          for (const [name, pattern] of Object.entries(scripts)) if (pattern.test(base.text)) seen.add(name);
          for (const fault of [
            'split-utf8',
            'split=random',
            'split=1,2,3,5,8,13',
            ...(p < 2 ? ['bytewise'] : []),
          ]) {
            const faulty = await run(sim, dialect, ask(`prompt ${p}`), {
              headers: { ...headers, 'x-tokenwire-fault': `multilingual,${fault}` },
            });
            assert.ok(faulty.chunks.length > base.chunks.length, `${fault} splits writes`);
            assert.equal(faulty.text, base.text, `${flavor} ${fault}`);
          }
        }
      }
      assert.deepEqual([...seen].sort(), Object.keys(scripts).sort());
    });

    it(`${dialect.id}: a token that ends inside a character sends no text but still counts`, async () => {
      const sim = fast();
      let checked = 0;
      for (let p = 0; p < 8; p++) {
        const result = await run(sim, dialect, ask(`prompt ${p}`), {
          headers: { 'x-tokenwire-fault': 'multilingual' },
        });
        const texts = ofType(result.events, 'text');
        for (const event of texts) assert.notEqual(event.text, '');
        const usage = ofType(result.events, 'usage').at(-1)?.usage;
        const record = sim.stats.log.at(-1);
        assert.equal(usage?.outputTokens ?? record?.outputTokens, record?.outputTokens);
        if (/\p{Script=Devanagari}|\u200d/u.test(result.text)) {
          assert.ok((record?.outputTokens ?? 0) > texts.length, 'more tokens than text events');
          checked += 1;
        }
      }
      assert.ok(checked > 0);
    });

    it(`${dialect.id}: the output cap ends the answer with finish length and exactly that many tokens`, async () => {
      const sim = fast();
      const full = await run(sim, dialect, ask('cap me'));
      const capped = await run(sim, dialect, ask('cap me', { maxTokens: 10 }));
      const finish = ofType(capped.events, 'finish').at(-1);
      assert.equal(finish?.reason, 'length');
      assert.equal(sim.stats.log.at(-1)?.outputTokens, 10);
      const usage = ofType(capped.events, 'usage').at(-1)?.usage;
      if (usage !== undefined) assert.equal(usage.outputTokens, 10);
      assert.ok(full.text.startsWith(capped.text) && capped.text.length < full.text.length);
      assert.equal(capped.complete, true);

      // A cap of 0 where the dialect's body can say it (TGI's max_new_tokens must be at least 1).
      if (dialect.fromRequestBody(dialect.toRequestBody({ ...ask('x'), maxTokens: 0 })).maxTokens === 0) {
        const none = await run(sim, dialect, ask('cap me', { maxTokens: 0 }));
        assert.equal(ofType(none.events, 'finish').at(-1)?.reason, 'length');
        assert.equal(none.text, '');
      }
    });

    it(`${dialect.id}: a stop string ends the text before it, with finish stop`, async () => {
      const sim = fast();
      const full = await run(sim, dialect, ask('stop me'));
      const from = Math.floor(full.text.length * 0.4);
      const stop = full.text.slice(from, from + 3);
      const stopped = await run(sim, dialect, ask('stop me', { stop: ['@@never@@', stop] }));
      assert.equal(stopped.text, full.text.slice(0, full.text.indexOf(stop)));
      const finish = ofType(stopped.events, 'finish').at(-1);
      assert.equal(finish?.reason, 'stop');
      assert.ok((sim.stats.log.at(-1)?.outputTokens ?? 0) < (sim.stats.log.at(-2)?.outputTokens ?? 0));
    });
  }

  it('openai-chat (vLLM): says which stop string fired', async () => {
    const sim = fast();
    const full = await run(sim, openAiChat, ask('stop me'));
    const stop = full.text.slice(20, 24);
    const stopped = await run(sim, openAiChat, ask('stop me', { stop: [stop] }));
    assert.equal(ofType(stopped.events, 'finish').at(-1)?.stopSequence, stop);
    assert.match(
      stopped.raw,
      new RegExp(`"stop_reason":${JSON.stringify(JSON.stringify(stop)).slice(1, -1)}`),
    );
  });

  const weather = {
    name: 'get_weather',
    description: 'Weather for a city',
    parameters: {
      type: 'object',
      properties: {
        city: { type: 'string' },
        days: { type: 'integer' },
        units: { type: 'string', enum: ['celsius', 'fahrenheit'] },
        detail: { type: 'object', properties: { hourly: { type: 'boolean' } } },
      },
      required: ['city'],
    },
  };
  const clock = {
    name: 'get_time',
    parameters: { type: 'object', properties: { zone: { type: 'string' } } },
  };

  for (const flavor of openAiChat.flavors) {
    it(`openai-chat (${flavor}): offered tools -> one streamed call with arguments from the schema`, async () => {
      const sim = fast();
      const result = await run(sim, openAiChat, ask('weather in Reykjavík?', { tools: [weather, clock] }), {
        headers: { 'x-tokenwire-flavor': flavor },
      });
      const calls = ofType(result.events, 'tool-call');
      assert.equal(calls.length, 1);
      const call = calls[0]!;
      assert.equal(call.name, 'get_weather');
      const input = call.input as Record<string, unknown>;
      assert.equal(typeof input.city, 'string');
      assert.ok(Number.isInteger(input.days));
      assert.ok(['celsius', 'fahrenheit'].includes(input.units as string));
      assert.equal(typeof (input.detail as Record<string, unknown>).hourly, 'boolean');
      assert.equal(result.text, '');
      if (!flavor.startsWith('ollama')) {
        assert.ok(ofType(result.events, 'tool-call-delta').length > 3, 'arguments arrive in fragments');
      }
      const finish = ofType(result.events, 'finish').at(-1);
      if (flavor !== 'tgi') assert.equal(finish?.reason, 'tool-calls');
      assert.equal(result.complete, true);
    });
  }

  it('openai-chat: calls the named tool, and answers in text after a tool result or with tool_choice none', async () => {
    const sim = fast();
    const named = await run(
      sim,
      openAiChat,
      ask('time?', { tools: [weather, clock], toolChoice: 'get_time' }),
    );
    assert.equal(ofType(named.events, 'tool-call')[0]?.name, 'get_time');
    const none = await run(sim, openAiChat, ask('time?', { tools: [weather], toolChoice: 'none' }));
    assert.equal(ofType(none.events, 'tool-call').length, 0);
    assert.ok(none.text.length > 0);
    const afterResult = await run(sim, openAiChat, {
      tools: [weather],
      messages: [
        { role: 'user', content: 'weather?' },
        {
          role: 'assistant',
          content: '',
          toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: '{}' }],
        },
        { role: 'tool', content: '{"temp": 3}', toolCallId: 'call_1' },
      ],
    });
    assert.equal(ofType(afterResult.events, 'tool-call').length, 0);
    assert.ok(afterResult.text.length > 0);
  });

  for (const flavor of openAiChat.flavors.filter((f) => f !== 'tgi')) {
    it(`openai-chat (${flavor}): reasoning asked -> reasoning events before the text`, async () => {
      const sim = fast();
      const result = await run(sim, openAiChat, ask('think first', { reasoning: 'high' }), {
        headers: { 'x-tokenwire-flavor': flavor },
      });
      const kinds = result.events.map((event) => event.type).filter((t) => t === 'reasoning' || t === 'text');
      assert.ok(kinds.includes('reasoning'));
      assert.ok(kinds.lastIndexOf('reasoning') < kinds.indexOf('text'));
      const reasoning = ofType(result.events, 'reasoning')
        .map((event) => event.text)
        .join('');
      assert.ok(reasoning.length > 20);
      const plain = await run(sim, openAiChat, ask('think first'));
      assert.equal(ofType(plain.events, 'reasoning').length, 0);
    });
  }
});
