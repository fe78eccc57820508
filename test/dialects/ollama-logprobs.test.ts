import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RequestError } from '../../src/dialects/dialect.ts';
import { nonStreamBody } from '../../src/dialects/non-stream-body.ts';
import { ollamaChat } from '../../src/dialects/ollama-chat/index.ts';
import { ollamaCreatedAt } from '../../src/dialects/ollama-family/ollama-created-at.ts';
import { ollamaGenerate } from '../../src/dialects/ollama-generate/index.ts';
import { getDialect } from '../../src/dialects/registry.ts';
import { untranslatableFields } from '../../src/dialects/request-field-table.ts';
import type { StreamEvent, TextEvent, TokenLogprob } from '../../src/events/stream-event.ts';
import { utf8 } from '../helpers/chunks.ts';
import { fold } from '../helpers/conformance.ts';
import { decodeChunks, encodeEvents } from '../helpers/decode.ts';

/**
 * Ollama's `logprobs: true` / `top_logprobs: K` (api/types.go `Logprobs`,
 * `TopLogprobs`) and the `logprobs: [{token, logprob, bytes?, top_logprobs?}]` its lines carry
 * (`api.Logprob`: embedded `TokenLogprob`, then `top_logprobs`, `bytes` and `top_logprobs` omitempty;
 * beside `message` on /api/chat after `done_reason`, last on /api/generate).
 */

const MS = Date.UTC(2026, 0, 1, 12, 34, 56, 789);
const AT = ollamaCreatedAt(MS);

const HI: TokenLogprob = {
  token: 'Hi',
  logprob: -0.5,
  bytes: [72, 105],
  top: [
    { token: 'Hi', logprob: -0.5, bytes: [72, 105] },
    { token: 'Hey', logprob: -1.5, bytes: [72, 101, 121] },
  ],
};
const THERE: TokenLogprob = { token: ' there', logprob: -1.25 };

const HI_JSON =
  '{"token":"Hi","logprob":-0.5,"bytes":[72,105],"top_logprobs":[{"token":"Hi","logprob":-0.5,"bytes":[72,105]},{"token":"Hey","logprob":-1.5,"bytes":[72,101,121]}]}';

function chatLine(content: string, logprobs?: string): string {
  const tail = logprobs === undefined ? '' : `,"logprobs":${logprobs}`;
  return `{"model":"m","created_at":"${AT}","message":{"role":"assistant","content":"${content}"},"done":false${tail}}\n`;
}

function generateLine(response: string, logprobs?: string): string {
  const tail = logprobs === undefined ? '' : `,"logprobs":${logprobs}`;
  return `{"model":"m","created_at":"${AT}","response":"${response}","done":false${tail}}\n`;
}

const CHAT_DONE = `{"model":"m","created_at":"${AT}","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","eval_count":2}\n`;
const GENERATE_DONE = `{"model":"m","created_at":"${AT}","response":"","done":true,"done_reason":"stop","eval_count":2}\n`;

function texts(events: readonly StreamEvent[]): TextEvent[] {
  return events.filter((event): event is TextEvent => event.type === 'text');
}

describe('ollama decoders: logprobs', () => {
  it('/api/chat: each line’s logprobs (beside message) on its text event', () => {
    const decoded = decodeChunks(ollamaChat, [
      utf8(
        chatLine('Hi', `[${HI_JSON}]`) +
          chatLine(' there', '[{"token":" there","logprob":-1.25}]') +
          CHAT_DONE,
      ),
    ]);
    assert.ok(decoded.complete);
    assert.deepEqual(texts(decoded.events), [
      { type: 'text', text: 'Hi', logprobs: [HI] },
      { type: 'text', text: ' there', logprobs: [THERE] },
    ]);
    assert.deepEqual(fold(decoded.events).logprobs, [HI, THERE]);
  });

  it('/api/generate: the top-level logprobs on its text event', () => {
    const decoded = decodeChunks(ollamaGenerate, [
      utf8(generateLine('Hi', `[${HI_JSON}]`) + generateLine(' there') + GENERATE_DONE),
    ]);
    assert.deepEqual(texts(decoded.events), [
      { type: 'text', text: 'Hi', logprobs: [HI] },
      { type: 'text', text: ' there' },
    ]);
  });

  it('never loses a line’s logprobs through the text-frame fast path', () => {
    // Bare lines of one shape teach the decoder's template (it learns from the second text line on) ...
    const bare = ['a', 'b', 'c', 'd'].map((t) => chatLine(t)).join('');
    // ... and lines with logprobs, same shape otherwise, must still be read in full, each time (the same
    // logprobs bytes on each: a template learned from one of them would match the next).
    const withLogprobs = ['e', 'f', 'g'].map((t) => chatLine(t, '[{"token":"x","logprob":-0.25}]')).join('');
    for (const dialect of [ollamaChat, ollamaGenerate]) {
      const text =
        dialect === ollamaChat
          ? bare + withLogprobs + bare + CHAT_DONE
          : (bare + withLogprobs + bare).replaceAll(
              /"message":\{"role":"assistant","content":("[^"]*")\}/g,
              '"response":$1',
            ) + GENERATE_DONE;
      const decoded = decodeChunks(dialect, [utf8(text)]);
      const got = texts(decoded.events).map((event) => [event.text, event.logprobs?.[0]?.logprob]);
      assert.deepEqual(
        got,
        [
          ['a', undefined],
          ['b', undefined],
          ['c', undefined],
          ['d', undefined],
          ['e', -0.25],
          ['f', -0.25],
          ['g', -0.25],
          ['a', undefined],
          ['b', undefined],
          ['c', undefined],
          ['d', undefined],
        ],
        dialect.id,
      );
    }
  });

  it('an empty logprobs list is no logprobs', () => {
    const decoded = decodeChunks(ollamaChat, [utf8(chatLine('Hi', '[]') + CHAT_DONE)]);
    assert.deepEqual(texts(decoded.events), [{ type: 'text', text: 'Hi' }]);
  });
});

describe('ollama encoders: logprobs', () => {
  const events: StreamEvent[] = [
    { type: 'start', model: 'm' },
    { type: 'text', text: 'Hi', logprobs: [HI] },
    { type: 'text', text: ' there', logprobs: [THERE] },
    { type: 'text', text: '!' },
    { type: 'finish', reason: 'stop', raw: 'stop' },
    { type: 'usage', usage: { outputTokens: 2 } },
  ];

  it('/api/chat: logprobs after done, in api.Logprob order, omitempty bytes and top_logprobs', () => {
    const wire = encodeEvents(ollamaChat, events, { now: () => MS });
    assert.equal(
      wire,
      chatLine('Hi', `[${HI_JSON}]`) +
        chatLine(' there', '[{"token":" there","logprob":-1.25}]') +
        chatLine('!') +
        CHAT_DONE,
    );
  });

  it('/api/generate: logprobs last on the line', () => {
    const wire = encodeEvents(ollamaGenerate, events, { now: () => MS });
    assert.equal(
      wire,
      generateLine('Hi', `[${HI_JSON}]`) +
        generateLine(' there', '[{"token":" there","logprob":-1.25}]') +
        generateLine('!') +
        GENERATE_DONE,
    );
  });

  it('writes Go’s escaping inside the logprobs too', () => {
    const wire = encodeEvents(
      ollamaChat,
      [{ type: 'text', text: '<b>', logprobs: [{ token: '<b>', logprob: -2e-7, top: [] }] }],
      { now: () => MS, ending: { kind: 'cut' } },
    );
    assert.match(wire, /"logprobs":\[\{"token":"\\u003cb\\u003e","logprob":-2e-7\}\]\}\n$/);
  });

  it('round-trips: decode(encode(events)) gives the logprobs back', () => {
    for (const dialect of [ollamaChat, ollamaGenerate]) {
      const decoded = decodeChunks(dialect, [utf8(encodeEvents(dialect, events, { now: () => MS }))]);
      assert.deepEqual(texts(decoded.events), [
        { type: 'text', text: 'Hi', logprobs: [HI] },
        { type: 'text', text: ' there', logprobs: [THERE] },
        { type: 'text', text: '!' },
      ]);
    }
  });

  it('the non-stream answer aggregates every line’s logprobs, where Go puts them', () => {
    const result = fold(events);
    const chat = nonStreamBody('ollama-chat', result, 'm', MS);
    assert.deepEqual(Object.keys(chat), [
      'model',
      'created_at',
      'message',
      'done',
      'done_reason',
      'logprobs',
      'eval_count',
    ]);
    assert.deepEqual(chat.logprobs, [JSON.parse(HI_JSON), { token: ' there', logprob: -1.25 }]);
    const generate = nonStreamBody('ollama-generate', result, 'm', MS);
    assert.deepEqual(Object.keys(generate).at(-1), 'logprobs');
    assert.deepEqual(generate.logprobs, chat.logprobs);
    // Not asked: no field.
    const plain = nonStreamBody('ollama-chat', fold([{ type: 'text', text: 'x' }]), 'm', MS);
    assert.equal('logprobs' in plain, false);
  });
});

describe('ollama requests: logprobs', () => {
  const chatBody = (extra: Record<string, unknown>) => ({
    model: 'm',
    messages: [{ role: 'user', content: 'hi' }],
    ...extra,
  });

  it('reads logprobs: true + top_logprobs as the top-K count, on both endpoints', () => {
    assert.equal(ollamaChat.fromRequestBody(chatBody({ logprobs: true, top_logprobs: 2 })).logprobs, 2);
    assert.equal(ollamaChat.fromRequestBody(chatBody({ logprobs: true })).logprobs, 0);
    assert.equal(
      ollamaGenerate.fromRequestBody({ model: 'm', prompt: 'x', logprobs: true, top_logprobs: 5 }).logprobs,
      5,
    );
    // Neither is left in `extra` (which a translation would report as lost).
    assert.equal(ollamaChat.fromRequestBody(chatBody({ logprobs: true, top_logprobs: 2 })).extra, undefined);
    // `logprobs: false` is the default; top_logprobs alone asks for nothing.
    assert.equal(
      ollamaChat.fromRequestBody(chatBody({ logprobs: false, top_logprobs: 2 })).logprobs,
      undefined,
    );
    assert.equal(ollamaChat.fromRequestBody(chatBody({ top_logprobs: 2 })).logprobs, undefined);
  });

  it('refuses top_logprobs outside 0–20 and a logprobs that is not a boolean, as Ollama does', () => {
    for (const body of [
      chatBody({ logprobs: true, top_logprobs: 21 }),
      chatBody({ logprobs: true, top_logprobs: -1 }),
      chatBody({ logprobs: true, top_logprobs: 1.5 }),
      chatBody({ logprobs: 'yes' }),
    ]) {
      assert.throws(() => ollamaChat.fromRequestBody(body), RequestError, JSON.stringify(body));
    }
  });

  it('writes logprobs: true and top_logprobs (left out for 0)', () => {
    const body = ollamaChat.toRequestBody({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
      logprobs: 3,
    });
    assert.equal(body.logprobs, true);
    assert.equal(body.top_logprobs, 3);
    const none = ollamaGenerate.toRequestBody({ model: 'm', prompt: 'x', logprobs: 0 });
    assert.equal(none.logprobs, true);
    assert.equal('top_logprobs' in none, false);
    assert.equal('logprobs' in ollamaChat.toRequestBody({ model: 'm', messages: [] }), false);
  });

  it('translates to and from OpenAI chat, llama.cpp and Responses, losing nothing', () => {
    const request = ollamaChat.fromRequestBody(chatBody({ logprobs: true, top_logprobs: 2 }));
    for (const upstream of [
      'openai-chat',
      'openai-completions',
      'llamacpp',
      'openai-responses',
      'ollama-generate',
    ] as const) {
      assert.deepEqual(untranslatableFields(request, 'ollama-chat', upstream), [], upstream);
    }
    const openai = getDialect('openai-chat').toRequestBody(request);
    assert.equal(openai.logprobs, true);
    assert.equal(openai.top_logprobs, 2);
    assert.equal(getDialect('llamacpp').toRequestBody(request).n_probs, 2);
    const back = getDialect('openai-chat').fromRequestBody({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
      logprobs: true,
      top_logprobs: 4,
    });
    assert.deepEqual(untranslatableFields(back, 'openai-chat', 'ollama-chat'), []);
    assert.deepEqual(untranslatableFields(back, 'openai-chat', 'ollama-generate'), []);
    const ollama = ollamaChat.toRequestBody(back);
    assert.equal(ollama.logprobs, true);
    assert.equal(ollama.top_logprobs, 4);
    // Still refused where the upstream's stream has no place for them.
    assert.deepEqual(untranslatableFields(request, 'ollama-chat', 'anthropic-messages'), ['logprobs']);
  });
});
