import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { getDialect } from '../../src/dialects/registry.ts';
import type { ChatRequest } from '../../src/events/chat-request.ts';
import type { StreamEvent } from '../../src/events/stream-event.ts';
import { serve } from '../../src/node/serve.ts';
import { createSim, parseFaults, SimCutError, type SimOptions } from '../../src/sim/index.ts';
import { loadTokenizer } from '../../src/sim/tokenizer.ts';
import { ask, decode, dialects, FakeClock, ofType, postRaw, readChunks, run } from './sim-helpers.ts';

const simWith = (options: SimOptions = {}) => {
  const clock = new FakeClock();
  return createSim({ now: clock.now, sleep: clock.sleep, timing: { jitter: 0 }, ...options });
};

/** The answer's text events' texts, in order (each is one token's or a few tokens' text). */
const texts = (events: readonly StreamEvent[]): string[] => ofType(events, 'text').map((event) => event.text);
const finishOf = (events: readonly StreamEvent[]) => ofType(events, 'finish').at(-1)?.reason;
const outputTokensOf = (events: readonly StreamEvent[]) => ofType(events, 'usage').at(-1)?.usage.outputTokens;
const inputTokensOf = (events: readonly StreamEvent[]) =>
  ofType(events, 'usage').find((event) => event.usage.inputTokens !== undefined)?.usage.inputTokens;

const withPrefill = (request: ChatRequest, prefill: string): ChatRequest => ({
  ...request,
  messages: [...(request.messages ?? []), { role: 'assistant', content: prefill }],
});

describe('sim continuation: an assistant prefill that is a prefix of the answer', () => {
  for (const id of ['openai-chat', 'anthropic-messages', 'ollama-chat', 'openai-responses']) {
    it(`goes on with the rest of the answer only (${id})`, async () => {
      const dialect = getDialect(id);
      const sim = simWith();
      const request = ask('Tell me about rivers.');
      const whole = await run(sim, dialect, request);
      assert.equal(whole.complete, true);
      const pieces = texts(whole.events);
      assert.ok(pieces.length > 8, 'the answer has enough tokens to cut');
      for (const k of [1, 6]) {
        const prefill = pieces.slice(0, k).join('');
        const rest = await run(sim, dialect, withPrefill(request, prefill));
        assert.equal(rest.complete, true);
        assert.equal(rest.text, whole.text.slice(prefill.length), `k=${k}: the text after the prefill`);
        assert.deepEqual(texts(rest.events), pieces.slice(k), `k=${k}: the same tokens`);
        assert.equal(finishOf(rest.events), finishOf(whole.events));
        const before = outputTokensOf(whole.events);
        const after = outputTokensOf(rest.events);
        assert.ok(before !== undefined && after !== undefined);
        // One text event per token here: the prefill's tokens are not counted again.
        assert.equal(before - after, k, `k=${k}: usage counts only the new tokens`);
        const promptBefore = inputTokensOf(whole.events);
        const promptAfter = inputTokensOf(rest.events);
        assert.ok(promptBefore !== undefined && promptAfter !== undefined);
        assert.ok(promptAfter > promptBefore, 'the prompt is counted with the prefill in it');
      }
    });
  }

  it('a prefill that is not a prefix gets a normal answer to the prompt with the prefill in it', async () => {
    const dialect = getDialect('openai-chat');
    const sim = simWith();
    const request = ask('Tell me about rivers.');
    const whole = await run(sim, dialect, request);
    const other = withPrefill(request, 'Certainly not what you would say');
    const first = await run(sim, dialect, other);
    const again = await run(sim, dialect, other);
    assert.equal(first.complete, true);
    assert.ok(first.text.length > 0);
    assert.notEqual(first.text, whole.text);
    assert.ok(!whole.text.startsWith(first.text), 'not a piece of the uninterrupted answer');
    assert.equal(again.text, first.text, 'deterministic for the prompt with the prefill in it');
    // A prefill cut inside a token is not a prefix either.
    const inside = whole.text.slice(0, texts(whole.events)[0]!.length + 1);
    const cutInside = await run(sim, dialect, withPrefill(request, inside));
    assert.notEqual(cutInside.text, whole.text.slice(inside.length));
  });

  it('leaves answers to prompts without a trailing assistant turn as they were', async () => {
    const dialect = getDialect('openai-chat');
    const sim = simWith();
    const request: ChatRequest = {
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: 'hello' },
        { role: 'user', content: 'Tell me about rivers.' },
      ],
    };
    const a = await run(sim, dialect, request);
    const b = await run(simWith(), dialect, request);
    assert.equal(a.text, b.text);
    assert.equal(outputTokensOf(a.events), texts(a.events).length);
  });
});

describe('sim continuation: token-exact, llama.cpp /completion with token ids', () => {
  const llamacpp = getDialect('llamacpp');
  const body = (prompt: unknown) => ({ prompt, stream: true, n_predict: 200 });

  it('a prompt of [ids of P, ids of the answer’s first k tokens] goes on with the rest', async () => {
    const sim = simWith();
    const prompt = 'The river runs to the sea';
    const whole = decode(
      llamacpp,
      (await readChunks(await postRaw(sim, '/completion', body(prompt)))).chunks,
    );
    assert.equal(whole.complete, true);
    const textEvents = ofType(whole.events, 'text');
    const generated = textEvents.flatMap((event) => event.tokenIds ?? []);
    assert.ok(generated.length > 8, 'the answer has enough tokens to cut');
    const tokenizer = await loadTokenizer();
    const promptIds = tokenizer.encode(prompt);
    for (const k of [1, 7]) {
      const ids = [...promptIds, ...generated.slice(0, k)];
      const rest = decode(llamacpp, (await readChunks(await postRaw(sim, '/completion', body(ids)))).chunks);
      assert.equal(rest.complete, true);
      assert.deepEqual(
        ofType(rest.events, 'text').flatMap((event) => event.tokenIds ?? []),
        generated.slice(k),
        `k=${k}: the remaining token ids`,
      );
      const prefix = new TextDecoder().decode(
        Uint8Array.from(generated.slice(0, k).flatMap((id) => [...tokenizer.tokenBytes(id)])),
      );
      assert.equal(rest.text, whole.text.slice(prefix.length), `k=${k}: the remaining text`);
      assert.equal(finishOf(rest.events), finishOf(whole.events));
      assert.equal((outputTokensOf(whole.events) ?? 0) - (outputTokensOf(rest.events) ?? 0), k);
      assert.equal(
        inputTokensOf(rest.events),
        (inputTokensOf(whole.events) ?? 0) + k,
        'the ids are the prompt',
      );
    }
  });

  it('ids that do not continue an answer are answered as the text they spell', async () => {
    const sim = simWith();
    const tokenizer = await loadTokenizer();
    const text = 'The river runs to the sea';
    const asText = decode(llamacpp, (await readChunks(await postRaw(sim, '/completion', body(text)))).chunks);
    const asIds = decode(
      llamacpp,
      (await readChunks(await postRaw(sim, '/completion', body(tokenizer.encode(text))))).chunks,
    );
    assert.equal(asIds.complete, true);
    assert.equal(asIds.text, asText.text);
  });

  it('refuses an id the tokenizer does not have (400)', async () => {
    const response = await postRaw(simWith(), '/completion', body([1, 99_999_999]));
    assert.equal(response.status, 400);
    assert.match(await response.text(), /invalid token id 99999999/);
  });
});

describe('sim continuation: a bare text prompt that ends with the first part of its answer', () => {
  it('goes on with the rest, for any cut at a token boundary; a prompt that continues nothing is answered as itself', async () => {
    const completions = getDialect('openai-completions');
    const sim = simWith();
    const prompt = 'The river runs to the sea';
    const ask = async (text: string, maxTokens = 60) =>
      decode(
        completions,
        (
          await readChunks(
            await postRaw(sim, '/v1/completions', {
              model: 'sim',
              prompt: text,
              stream: true,
              max_tokens: maxTokens,
            }),
          )
        ).chunks,
      );
    const whole = await ask(prompt);
    const pieces = texts(whole.events);
    assert.ok(pieces.length > 10);
    for (const k of [1, 4, 9]) {
      const before = pieces.slice(0, k).join('');
      const rest = await ask(prompt + before, 60 - k);
      assert.equal(rest.complete, true);
      assert.equal(before + rest.text, whole.text, `cut after ${k} tokens`);
      assert.equal(finishOf(rest.events), finishOf(whole.events));
    }
    const other = await ask(`${prompt} and the hills`);
    assert.notEqual(other.text.slice(0, 20), whole.text.slice(0, 20));
    // A prompt that holds earlier answers (a conversation rendered as text: many sentence starts) too.
    const conversation = `${prompt}${whole.text}\n\n${prompt}${whole.text}\n\nAnd the lakes?`;
    const second = await ask(conversation);
    const secondPieces = texts(second.events);
    const before = secondPieces.slice(0, 5).join('');
    assert.equal(before + (await ask(conversation + before, 55)).text, second.text);
  });
});

describe('sim fault die-after=<n>: a replica that dies mid-answer', () => {
  it('parses as its own fault, the same count as cut-after', () => {
    assert.deepEqual(parseFaults('die-after=4'), { dieAfter: 4 });
  });

  it('cuts every stream of the server after n tokens, in every dialect', async () => {
    const sim = simWith({ faults: 'die-after=3' });
    for (const dialect of dialects()) {
      for (const prompt of ['first', 'second']) {
        const result = await run(sim, dialect, ask(prompt));
        assert.ok(result.error instanceof SimCutError, `${dialect.id}: the body errors`);
        assert.equal(result.complete, false, `${dialect.id}: no terminal event`);
        assert.equal(ofType(result.events, 'finish').length, 0, `${dialect.id}: no finish`);
      }
    }
    assert.equal(sim.stats.log.length, 2 * dialects().length);
    for (const record of sim.stats.log) {
      assert.equal(record.outcome, 'cut');
      assert.equal(record.outputTokens, 3);
      assert.equal(record.faults, 'die-after=3');
    }
  });
});

describe('sim continuation over real HTTP: one replica dies, its sibling goes on', () => {
  it('the text before the cut plus the sibling’s continuation is the uninterrupted answer', async () => {
    const dialect = getDialect('openai-chat');
    const timing = { tokensPerSecond: 1000, jitter: 0 };
    const dying = await serve(createSim({ timing, faults: 'die-after=5' }).fetch);
    const sibling = await serve(createSim({ timing }).fetch);
    try {
      const request = ask('Tell me about rivers.');
      const post = (url: string, chat: ChatRequest) =>
        fetch(`${url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(dialect.toRequestBody({ model: 'sim', ...chat })),
        });
      const cut = await readChunks(await post(dying.url, request));
      assert.ok(cut.error !== undefined, 'the dying replica breaks the connection');
      const partial = decode(dialect, cut.chunks);
      assert.equal(partial.complete, false);
      // At most the 5 tokens generated: a body that errors may lose what was queued but not yet sent.
      assert.ok(texts(partial.events).length <= 5);
      const continued = decode(
        dialect,
        (await readChunks(await post(sibling.url, withPrefill(request, partial.text)))).chunks,
      );
      const whole = decode(dialect, (await readChunks(await post(sibling.url, request))).chunks);
      assert.equal(continued.complete, true);
      assert.equal(partial.text + continued.text, whole.text);
      assert.deepEqual([...texts(partial.events), ...texts(continued.events)], texts(whole.events));
    } finally {
      await dying.close();
      await sibling.close();
    }
  });
});
