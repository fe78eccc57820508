import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DialectDecoder } from '../../src/dialects/dialect.ts';
import { llamacpp } from '../../src/dialects/llamacpp/index.ts';
import type { StreamEvent } from '../../src/events/stream-event.ts';
import type { Frame } from '../../src/wire/frame.ts';
import { outcome } from '../helpers/decode.ts';

/**
 * llama-server's native stream read through the decoder's TextFrameTemplate: every build since Dec 2024
 * puts the token ids (`"tokens":[…]`) on each partial event, and `timings_per_token` adds a snapshot of
 * `timings`; such frames are read without JSON.parse, with the ids as the text event's `tokenIds`, and
 * every frame the template must not take decodes exactly as with JSON.parse.
 */

const TIMINGS = (n: number): string =>
  `{"cache_n":4,"prompt_n":1,"prompt_ms":0.854,"prompt_per_token_ms":0.854,"prompt_per_second":1170.96018735363,"predicted_n":${n},"predicted_ms":${n * 0.443},"predicted_per_token_ms":0.2215,"predicted_per_second":${1000 / (n + 1)}}`;

/** A partial event as b10108 writes it (with `timings_per_token`: `timings`). */
function partial(content: string, n: number, options: { tokens?: string; timings?: boolean } = {}): Frame {
  const tokens = options.tokens ?? `[${(n * 7919) % 32000}]`;
  const timings = options.timings === true ? `,"timings":${TIMINGS(n)}` : '';
  return {
    data: `{"index":0,"content":"${content}","tokens":${tokens},"stop":false,"id_slot":-1,"tokens_predicted":${n},"tokens_evaluated":5${timings}}`,
  };
}

const FINAL: Frame = {
  data: '{"index":0,"content":"","tokens":[],"id_slot":0,"stop":true,"model":"m","tokens_predicted":9,"tokens_evaluated":5,"generation_settings":{"n_predict":9},"prompt":"<s> Hi","has_new_line":false,"truncated":false,"stop_type":"limit","stopping_word":"","tokens_cached":13,"timings":{"cache_n":0,"prompt_n":5,"prompt_ms":2.0,"prompt_per_token_ms":0.4,"prompt_per_second":2500.0,"predicted_n":9,"predicted_ms":6.0,"predicted_per_token_ms":0.6,"predicted_per_second":1500.0}}',
};

const WORDS = [' the', ' river', 's', ' é', ' 日本', ' 😀', ' flows', ','];

function frames(count: number, timings = false): Frame[] {
  return Array.from({ length: count }, (_, i) => partial(WORDS[i % WORDS.length]!, i + 1, { timings }));
}

/** Runs `fn`, counting the calls of JSON.parse it makes. */
function countingParses<T>(fn: () => T): { value: T; parses: number } {
  const original = JSON.parse;
  let parses = 0;
  JSON.parse = ((text: string, reviver?: Parameters<typeof JSON.parse>[1]) => {
    parses += 1;
    return original(text, reviver);
  }) as typeof JSON.parse;
  try {
    return { value: fn(), parses };
  } finally {
    JSON.parse = original;
  }
}

function decodeAll(decoder: DialectDecoder, input: readonly Frame[]): StreamEvent[] {
  const events: StreamEvent[] = [];
  for (const frame of input) decoder.frame(frame, (event) => events.push(event));
  decoder.end((event) => events.push(event));
  return events;
}

/** Frames the template must not read as a text frame of the learned shape (or must read exactly right). */
const PROBES: Record<string, Frame> = {
  'an escaped quote in the text': partial('say \\"hi\\"', 50),
  'an escaped newline in the text': partial('a\\nb', 50),
  'a \\u escape in the text': partial('caf\\u00e9', 50),
  'an escaped backslash in the text': partial('a\\\\b', 50),
  'no token ids (`tokens: []`)': partial('x', 50, { tokens: '[]' }),
  'two token ids': partial('xy', 50, { tokens: '[12,345]' }),
  'a negative token id': partial('x', 50, { tokens: '[-1]' }),
  'a fractional token id': partial('x', 50, { tokens: '[1.5]' }),
  'an exponent token id': partial('x', 50, { tokens: '[1e3]' }),
  'a leading zero (not JSON)': partial('x', 50, { tokens: '[01]' }),
  'a 16-digit token id': partial('x', 50, { tokens: '[1234567890123457]' }),
  'a string token id': partial('x', 50, { tokens: '["7"]' }),
  'a space in the ids': partial('x', 50, { tokens: '[ 7]' }),
  'a trailing comma in the ids (not JSON)': partial('x', 50, { tokens: '[7,]' }),
  'the ids not a list': partial('x', 50, { tokens: '7' }),
  'an extra field': { data: partial('x', 50).data.replace(/}$/, ',"extra":1}') },
  'another prompt (`index: 1`)': { data: partial('x', 50).data.replace('"index":0', '"index":1') },
  'another slot': { data: partial('x', 50).data.replace('"id_slot":-1', '"id_slot":3') },
  'a final event': FINAL,
  'a stop with content': { data: partial('x', 50).data.replace('"stop":false', '"stop":true') },
  'log probabilities (`n_probs`)': {
    data: partial('x', 50).data.replace(
      /}$/,
      ',"completion_probabilities":[{"id":7,"token":"x","bytes":[120],"logprob":-0.5,"top_logprobs":[]}]}',
    ),
  },
  'keys in another order': {
    data: '{"content":"x","index":0,"tokens":[7],"stop":false,"id_slot":-1,"tokens_predicted":50,"tokens_evaluated":5}',
  },
  'no tokens field': { data: partial('x', 50).data.replace(/"tokens":\[\d+\],/, '') },
  'a timings snapshot with null': {
    data: partial('x', 50, { timings: true }).data.replace(
      /"predicted_per_second":[^}]+}/,
      '"predicted_per_second":null}',
    ),
  },
  'cut short (not JSON)': { data: partial('x', 50).data.slice(0, -1) },
  'the ids key inside the text': partial('\\"tokens\\":[1]', 50),
};

describe('llamacpp decoder: text frames read through the template', () => {
  for (const timings of [false, true]) {
    const label = timings ? 'with timings_per_token' : 'as b10108 writes them';
    it(`reads partial events ${label} without JSON.parse, token ids included`, () => {
      // 600 frames: read by the byte matcher, then (after 512 matches) by the compiled RegExp.
      const input = [...frames(600, timings), FINAL];
      const { value: events, parses } = countingParses(() => decodeAll(llamacpp.createDecoder({}), input));
      // The first frames (the start, the first text frame, the one learned from) and the final one.
      assert.ok(parses <= 5, `${parses} JSON.parse calls for ${input.length} frames`);
      const parsed = decodeAll(llamacpp.createDecoder({ frameTemplates: false }), input);
      assert.deepEqual(events, parsed);
      const texts = events.filter((event) => event.type === 'text');
      assert.equal(texts.length, 600);
      assert.deepEqual(texts[599], {
        type: 'text',
        text: WORDS[599 % WORDS.length],
        tokenIds: [(600 * 7919) % 32000],
      });
    });
  }

  // 10 frames: the byte matcher; 600: past the 512 matches after which the template is a RegExp.
  for (const warmUp of [10, 600]) {
    it(`decodes every frame the template must not take as JSON.parse does (after ${warmUp} frames)`, () => {
      for (const [name, probe] of Object.entries(PROBES)) {
        const templated = llamacpp.createDecoder({});
        const parsed = llamacpp.createDecoder({ frameTemplates: false });
        const input = frames(warmUp);
        decodeAll(templated, input);
        decodeAll(parsed, input);
        // The template is live here: a frame of its shape is read without JSON.parse.
        const control = partial('ok', warmUp + 1);
        const read = countingParses(() => outcome(templated, control));
        assert.equal(read.parses, 0, `${name}: the template was not live`);
        assert.deepEqual(read.value, outcome(parsed, control));
        assert.deepEqual(outcome(templated, probe), outcome(parsed, probe), `${name}: ${probe.data}`);
        // And the frame after it is still decoded right.
        const after = partial('next', warmUp + 3);
        assert.deepEqual(outcome(templated, after), outcome(parsed, after), `${name}: the frame after`);
      }
    });
  }

  it('gives the ids of a frame, not of the frame it learned from', () => {
    const events = decodeAll(llamacpp.createDecoder({}), [
      partial('a', 1),
      partial('b', 2, { tokens: '[10]' }),
      partial('c', 3, { tokens: '[11]' }),
      partial('d', 4, { tokens: '[12,13]' }),
      partial('', 5, { tokens: '[2]' }),
      partial('e', 6, { tokens: '[0]' }),
    ]);
    assert.deepEqual(
      events.filter((event) => event.type === 'text'),
      [
        { type: 'text', text: 'a', tokenIds: [7919] },
        { type: 'text', text: 'b', tokenIds: [10] },
        { type: 'text', text: 'c', tokenIds: [11] },
        { type: 'text', text: 'd', tokenIds: [12, 13] },
        // The id of the token with no text (unrendered) goes with the next text.
        { type: 'text', text: 'e', tokenIds: [2, 0] },
      ],
    );
  });

  it('keeps the ids of tokens with no text for the next text, read through the template or not', () => {
    const input = [
      ...Array.from({ length: 20 }, (_, i) => partial(`w${i}`, i + 1, { tokens: `[${i + 100}]` })),
      partial('', 21, { tokens: '[32046]' }),
      partial('', 22, { tokens: '[32047]' }),
      partial('x', 23, { tokens: '[7]' }),
      partial('', 24, { tokens: '[2]' }),
      FINAL,
    ];
    const templated = decodeAll(llamacpp.createDecoder({}), input);
    assert.deepEqual(templated, decodeAll(llamacpp.createDecoder({ frameTemplates: false }), input));
    const texts = templated.filter((event) => event.type === 'text');
    assert.deepEqual(texts.at(-1), { type: 'text', text: 'x', tokenIds: [32046, 32047, 7] });
    assert.deepEqual(
      texts.flatMap((event) => (event.type === 'text' ? (event.tokenIds ?? []) : [])).length,
      23,
      'the end-of-sequence token before the final event goes nowhere',
    );
  });
});
