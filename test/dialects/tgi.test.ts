import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { DialectError, RequestError } from '../../src/dialects/dialect.ts';
import { tgi } from '../../src/dialects/tgi/index.ts';
import type { StreamEvent } from '../../src/events/stream-event.ts';
import { splitAt, utf8 } from '../helpers/chunks.ts';
import { fold, runConformance } from '../helpers/conformance.ts';
import { decodeChunks, encodeEvents } from '../helpers/decode.ts';
import { readFixture } from '../helpers/paths.ts';

const EXAMPLE = 'wire-examples/tgi-generate-stream.sse';
const ERROR = 'wire-examples/tgi-generate-stream-midstream-error.sse';
const LEGACY = 'extra/tgi-generate-stream-legacy.sse';
const STOP_CR = 'extra/tgi-generate-stream-stop-sequence-cr.sse';
const NO_INDEX = 'extra/tgi-generate-stream-noindex.sse';
const VALIDATION = 'extra/tgi-generate-stream-validation-error.sse';
const NO_DETAILS = 'extra/tgi-generate-stream-no-details.sse';

runConformance(tgi, {
  fixtures: [EXAMPLE, ERROR, LEGACY, STOP_CR, NO_INDEX, VALIDATION, NO_DETAILS],
  // TGI 2.0's details had no input_length: usage cannot round-trip whole through the legacy flavor.
  capabilities: (flavor) => ({
    reasoning: false,
    toolCalls: false,
    usage: flavor !== 'legacy',
    finishReasons: ['stop', 'length'],
  }),
});

const text = (fixture: string): string => new TextDecoder().decode(readFixture(fixture));

function payloads(wire: string): Record<string, unknown>[] {
  return wire
    .split(/\r\n|\r|\n/)
    .filter((line) => line.startsWith('data:'))
    .map((line) => JSON.parse(line.slice(5)));
}

/** Keys in order and value types, recursively. */
function shape(value: unknown): unknown {
  if (Array.isArray(value)) return 'array';
  if (value === null) return 'null';
  if (typeof value === 'object') return Object.entries(value).map(([key, item]) => [key, shape(item)]);
  return typeof value;
}

function reencode(fixture: string, flavor: string): string {
  const decoded = decodeChunks(tgi, [readFixture(fixture)]);
  return encodeEvents(tgi, decoded.events, {
    flavor,
    ending: decoded.complete ? { kind: 'complete' } : { kind: 'cut' },
  });
}

/**
 * Without top_tokens the decoder reads no ids or logprobs, and the encoder invents none: `null`. The
 * end-of-sequence token is not carried either: the last text token carries the details.
 */
function withUnknownTokens(wire: string): string {
  return wire
    .replace(
      /"token":\{"id":\d+,("text":"(?:[^"\\]|\\.)*"),"logprob":[-0-9.e]+,"special":false\}/g,
      '"token":{"id":null,$1,"logprob":null,"special":false}',
    )
    .replace(/"logprob":[-0-9.e]+,"special":true/g, '"logprob":null,"special":true');
}

describe('tgi decoder', () => {
  it('reads the example: the end-of-sequence token is no text; details give finish and usage', () => {
    const decoded = decodeChunks(tgi, [readFixture(EXAMPLE)]);
    assert.equal(decoded.complete, true);
    assert.equal(decoded.terminated, true);
    assert.equal(decoded.sawTerminator, true);
    const result = fold(decoded.events);
    assert.equal(result.text, 'Hi there');
    assert.equal(result.finishReason, 'stop');
    assert.equal(result.rawFinishReason, 'eos_token');
    assert.equal(result.usage?.inputTokens, 9);
    assert.equal(result.usage?.outputTokens, 3);
    assert.ok(!decoded.events.some((e) => e.type === 'text' && e.text.includes('<|eot_id|>')));
  });

  it('reads TGI 2.0 (data: without a space), </s>, and mid-character tokens with text ""', () => {
    const decoded = decodeChunks(tgi, [readFixture(LEGACY)]);
    assert.equal(decoded.complete, true);
    assert.deepEqual(
      decoded.events.filter((e) => e.type === 'text').map((e) => e.text),
      ['Hello', ' ', '👋'],
    );
    const result = fold(decoded.events);
    assert.equal(result.rawFinishReason, 'eos_token');
    assert.equal(result.usage?.outputTokens, 7);
    assert.equal(result.usage?.inputTokens, undefined);
  });

  it('reads CR-only line ends, a keepalive between events, top_tokens and a stop_sequence finish', () => {
    const decoded = decodeChunks(tgi, [readFixture(STOP_CR)]);
    assert.equal(decoded.complete, true);
    const result = fold(decoded.events);
    // TGI keeps the stop sequence in the text (the last token is part of the answer).
    assert.equal(result.text, 'Hello!\n###');
    assert.equal(result.finishReason, 'stop');
    assert.equal(result.rawFinishReason, 'stop_sequence');
    assert.equal(result.usage?.inputTokens, 7);
    // A special token among the top_tokens alternatives is not text either.
    assert.ok(!result.text.includes('<|eot_id|>'));
  });

  it('reads very old TGI without index (and prompt_tokens-era details): length', () => {
    const decoded = decodeChunks(tgi, [readFixture(NO_INDEX)]);
    assert.equal(decoded.complete, true);
    const result = fold(decoded.events);
    assert.equal(result.text, ' The quick brown');
    assert.equal(result.finishReason, 'length');
    assert.equal(result.truncated, true);
    const old = decodeChunks(tgi, [
      utf8(
        'data:{"token":{"id":2,"text":"</s>","logprob":-0.1,"special":false},"generated_text":"Hi","details":{"finish_reason":"eos_token","prompt_tokens":4,"generated_tokens":2,"seed":null}}\n\n',
      ),
    ]);
    assert.equal(fold(old.events).usage?.inputTokens, 4);
  });

  it('treats a final token TGI did not mark (before `special` existed) as special when generated_text leaves it out', () => {
    const decoded = decodeChunks(tgi, [
      utf8(
        'data:{"token":{"id":1,"text":"Hi","logprob":-0.1},"generated_text":null,"details":null}\n\n' +
          'data:{"token":{"id":2,"text":"</s>","logprob":-0.1},"generated_text":"Hi","details":{"finish_reason":"eos_token","generated_tokens":2,"seed":null}}\n\n',
      ),
    ]);
    assert.equal(fold(decoded.events).text, 'Hi');
  });

  it('infers stop from a special final token when details were not asked for', () => {
    const decoded = decodeChunks(tgi, [readFixture(NO_DETAILS)]);
    assert.equal(decoded.complete, true);
    const result = fold(decoded.events);
    assert.equal(result.text, 'Hello');
    assert.equal(result.finishReason, 'stop');
    assert.equal(result.rawFinishReason, null);
    assert.equal(result.usage, undefined);
  });

  it('turns in-band errors (mid-stream, or a validation error as the only event) into error events', () => {
    for (const [fixture, errorType, partial] of [
      [ERROR, 'generation', 'Hi'],
      [VALIDATION, 'validation', ''],
    ] as const) {
      const decoded = decodeChunks(tgi, [readFixture(fixture)]);
      assert.equal(decoded.complete, false);
      assert.equal(decoded.terminated, true);
      assert.equal(decoded.sawTerminator, false);
      const error = decoded.events.find((e) => e.type === 'error');
      assert.ok(error?.type === 'error');
      assert.equal(error.errorType, errorType);
      assert.equal(fold(decoded.events).text, partial);
    }
  });

  it('is incomplete when the bytes end before the generated_text event', () => {
    const cut = text(EXAMPLE).split('\n\n').slice(0, 2).join('\n\n');
    const decoded = decodeChunks(tgi, [utf8(cut)]);
    assert.equal(decoded.complete, false);
    assert.equal(decoded.terminated, false);
    assert.equal(fold(decoded.events).text, 'Hi');
  });

  it('refuses a payload that is not a TGI event as malformed', () => {
    assert.throws(
      () => decodeChunks(tgi, [utf8('data: {"index":0,"content":"x","stop":false,"id_slot":-1}\n\n')]),
      (error: unknown) => error instanceof DialectError && error.code === 'malformed-payload',
    );
  });

  const specialToken = fc.constantFrom(
    '<|eot_id|>',
    '</s>',
    '<|im_end|>',
    '<|im_start|>',
    '<s>',
    '<|endoftext|>',
  );
  const plainToken = fc.oneof(
    fc.constant(''),
    fc.string({ unit: 'grapheme', minLength: 1, maxLength: 6 }),
    fc.constantFrom(' the', '東京', ' 👩‍👩‍👧', '\n'),
  );
  const token = fc.oneof(
    plainToken.map((t) => ({ text: t, special: false })),
    specialToken.map((t) => ({ text: t, special: true })),
  );

  it('never emits a special token as text, wherever it is and however the bytes are split', () => {
    fc.assert(
      fc.property(
        fc.array(token, { maxLength: 12 }),
        specialToken,
        fc.boolean(),
        fc.array(fc.nat(), { maxLength: 8 }),
        (tokens, eos, space, cuts) => {
          const all = [...tokens, { text: eos, special: true }];
          const generated = all
            .filter((t) => !t.special)
            .map((t) => t.text)
            .join('');
          let wire = '';
          all.forEach((t, i) => {
            const last = i === all.length - 1;
            const payload = {
              index: i + 1,
              token: { id: i, text: t.text, logprob: -0.5, special: t.special },
              generated_text: last ? generated : null,
              details: last
                ? { finish_reason: 'eos_token', generated_tokens: all.length, seed: null, input_length: 3 }
                : null,
            };
            wire += `${space ? 'data: ' : 'data:'}${JSON.stringify(payload)}\n\n`;
          });
          const decoded = decodeChunks(tgi, splitAt(utf8(wire), cuts));
          const texts = decoded.events.filter((e) => e.type === 'text').map((e) => e.text);
          assert.deepEqual(
            texts,
            all.filter((t) => !t.special && t.text !== '').map((t) => t.text),
          );
          assert.equal(decoded.complete, true);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('tgi encoder', () => {
  it('writes the example as TGI would, but for the unknown ids, logprobs and end-of-sequence token', () => {
    assert.equal(
      reencode(EXAMPLE, 'modern'),
      'data: {"index":1,"token":{"id":null,"text":"Hi","logprob":null,"special":false},"generated_text":null,"details":null}\n\n' +
        'data: {"index":2,"token":{"id":null,"text":" there","logprob":null,"special":false},"generated_text":"Hi there","details":{"finish_reason":"eos_token","generated_tokens":3,"seed":null,"input_length":9}}\n\n',
    );
  });

  it('writes the mid-stream error byte for byte, but for token ids and logprobs', () => {
    assert.equal(reencode(ERROR, 'modern'), withUnknownTokens(text(ERROR)));
  });

  it("writes the example's events with the same keys and key order", () => {
    const ours = payloads(reencode(EXAMPLE, 'modern'));
    const theirs = payloads(withUnknownTokens(text(EXAMPLE)));
    assert.deepEqual(shape(ours[0]), shape(theirs[0]));
    const last = shape(ours.at(-1)) as [string, unknown][];
    const theirLast = shape(theirs.at(-1)) as [string, unknown][];
    assert.deepEqual(
      last.map(([key]) => key),
      theirLast.map(([key]) => key),
    );
    assert.deepEqual(last.at(-1), theirLast.at(-1));
  });

  it('writes TGI 2.0 as it did: data: without the space, details without input_length, </s>', () => {
    const wire = reencode(LEGACY, 'legacy');
    assert.ok(
      wire
        .split('\n\n')
        .filter(Boolean)
        .every((event) => event.startsWith('data:{')),
    );
    const ours = payloads(wire);
    const theirs = payloads(text(LEGACY));
    // Tokens with text "" are not events, so there are fewer; each kind has the same shape.
    assert.deepEqual(shape(ours[0]), shape(payloads(withUnknownTokens(text(LEGACY)))[0]));
    assert.equal(theirs.length, 7);
    assert.equal(
      wire.split('\n\n').at(-2),
      'data:{"index":3,"token":{"id":null,"text":"👋","logprob":null,"special":false},"generated_text":"Hello 👋","details":{"finish_reason":"eos_token","generated_tokens":7,"seed":null}}',
    );
  });

  it('puts the details on the last text token (never an extra empty or special one)', () => {
    const events = (finish: StreamEvent): StreamEvent[] => [
      { type: 'start', id: 'x', model: 'm' },
      { type: 'reasoning', text: 'hmm' },
      { type: 'text', text: 'Hello' },
      finish,
      { type: 'usage', usage: { inputTokens: 5, outputTokens: 2 } },
    ];
    const length = payloads(encodeEvents(tgi, events({ type: 'finish', reason: 'length', raw: 'length' })));
    assert.deepEqual(length.at(-1), {
      index: 1,
      token: { id: null, text: 'Hello', logprob: null, special: false },
      generated_text: 'Hello',
      details: { finish_reason: 'length', generated_tokens: 2, seed: null, input_length: 5 },
    });
    const lastEvent = (finish: StreamEvent) => {
      const last = payloads(encodeEvents(tgi, events(finish))).at(-1);
      assert.ok(last !== undefined);
      return last as { token: Record<string, unknown>; details: Record<string, unknown> };
    };
    const stop = lastEvent({ type: 'finish', reason: 'stop', raw: 'stop', stopSequence: '###' });
    assert.equal(stop.details.finish_reason, 'stop_sequence');
    assert.equal(stop.token.special, false);
    assert.equal(
      lastEvent({ type: 'finish', reason: 'stop', raw: 'word' }).details.finish_reason,
      'stop_sequence',
    );
    // No end-of-sequence token is invented after a natural end.
    assert.equal(lastEvent({ type: 'finish', reason: 'stop', raw: 'stop' }).token.text, 'Hello');
    assert.equal(
      lastEvent({ type: 'finish', reason: 'stop', raw: 'stop' }).details.finish_reason,
      'eos_token',
    );
    // Reasoning has no field in this dialect: it is not written as text.
    assert.equal(
      fold(
        decodeChunks(tgi, [utf8(encodeEvents(tgi, events({ type: 'finish', reason: 'stop', raw: null })))])
          .events,
      ).text,
      'Hello',
    );
  });

  it('writes the in-band error shape, then nothing', () => {
    assert.equal(
      encodeEvents(tgi, [], {
        ending: { kind: 'error', error: { message: 'Model is overloaded', errorType: 'overloaded' } },
      }),
      'data: {"error":"Model is overloaded","error_type":"overloaded"}\n\n',
    );
    assert.equal(
      encodeEvents(tgi, [], { flavor: 'legacy', ending: { kind: 'error', error: { message: 'x' } } }),
      'data:{"error":"x","error_type":"generation"}\n\n',
    );
  });
});

describe('tgi dialect', () => {
  it('maps a native body to the normalized request and back', () => {
    const request = tgi.fromRequestBody({
      inputs: 'What is Deep Learning?',
      parameters: {
        max_new_tokens: 20,
        temperature: 0.5,
        top_k: 10,
        top_p: 0.95,
        seed: 7,
        stop: ['\n'],
        details: true,
        do_sample: true,
        repetition_penalty: 1.1,
      },
      stream: true,
    });
    assert.deepEqual(request, {
      prompt: 'What is Deep Learning?',
      stream: true,
      maxTokens: 20,
      temperature: 0.5,
      topK: 10,
      topP: 0.95,
      seed: 7,
      stop: ['\n'],
      repetitionPenalty: 1.1,
    });
    assert.deepEqual(tgi.toRequestBody(request), {
      inputs: 'What is Deep Learning?',
      parameters: {
        max_new_tokens: 20,
        temperature: 0.5,
        top_k: 10,
        top_p: 0.95,
        seed: 7,
        stop: ['\n'],
        repetition_penalty: 1.1,
        details: true,
      },
      stream: true,
    });
  });

  it("reads TGI's greedy default as temperature 0, and do_sample without a temperature as TGI's 1", () => {
    // TGI decodes greedily unless do_sample or a sampling field says otherwise (NextTokenChooser).
    assert.equal(tgi.fromRequestBody({ inputs: 'x' }).temperature, 0);
    assert.equal(tgi.fromRequestBody({ inputs: 'x', parameters: { max_new_tokens: 5 } }).temperature, 0);
    assert.equal(tgi.fromRequestBody({ inputs: 'x', parameters: { do_sample: false } }).temperature, 0);
    assert.equal(tgi.fromRequestBody({ inputs: 'x', parameters: { do_sample: true } }).temperature, 1);
    assert.equal(tgi.fromRequestBody({ inputs: 'x', parameters: { top_k: 5 } }).temperature, 1);
    assert.equal(tgi.fromRequestBody({ inputs: 'x', parameters: { temperature: 0.3 } }).temperature, 0.3);
  });

  it('renders chat turns and turns values TGI would refuse into what it accepts', () => {
    const body = tgi.toRequestBody({
      messages: [
        { role: 'system', content: 'Be brief' },
        { role: 'user', content: 'Hi' },
      ],
      maxTokens: 16,
      temperature: 0,
      topP: 1,
      topK: 0,
      seed: -1,
    });
    assert.deepEqual(body, {
      inputs: 'system: Be brief\nuser: Hi\nassistant:',
      parameters: { max_new_tokens: 16, do_sample: false, details: true },
      stream: true,
    });
  });

  it('names the bad field in a RequestError', () => {
    for (const [body, field] of [
      [{}, 'inputs'],
      [{ inputs: 42 }, 'inputs'],
      [{ inputs: 'x', parameters: [] }, 'parameters'],
      [{ inputs: 'x', parameters: { max_new_tokens: 0 } }, 'parameters.max_new_tokens'],
      [{ inputs: 'x', parameters: { max_new_tokens: 'ten' } }, 'parameters.max_new_tokens'],
      [{ inputs: 'x', parameters: { temperature: 0 } }, 'parameters.temperature'],
      [{ inputs: 'x', parameters: { top_k: -1 } }, 'parameters.top_k'],
      [{ inputs: 'x', parameters: { top_p: 1 } }, 'parameters.top_p'],
      [{ inputs: 'x', parameters: { seed: -5 } }, 'parameters.seed'],
      [{ inputs: 'x', parameters: { stop: [1] } }, 'parameters.stop'],
      [{ inputs: 'x', parameters: { details: 'yes' } }, 'parameters.details'],
      [{ inputs: 'x', stream: 'yes' }, 'stream'],
    ] as const) {
      assert.throws(
        () => tgi.fromRequestBody(body),
        (error: unknown) => error instanceof RequestError && error.field === field,
        JSON.stringify(body),
      );
    }
  });

  it('answers errors before streaming as TGI does', () => {
    assert.deepEqual(tgi.errorResponse({ status: 400, message: 'inputs is required' }), {
      status: 400,
      contentType: 'application/json',
      body: '{"error":"inputs is required","error_type":"validation"}',
    });
    assert.match(tgi.errorResponse({ status: 429, message: 'Model is overloaded' }).body, /"overloaded"/);
    assert.match(tgi.errorResponse({ status: 500, message: 'x' }).body, /"generation"/);
  });

  it("sends TGI's stream headers", () => {
    assert.deepEqual(tgi.responseHeaders(), {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
    });
  });

  it("detects its payloads and path, and not the other dialects'", () => {
    const [first] = payloads(text(EXAMPLE));
    const [old] = payloads(text(NO_INDEX));
    const [error] = payloads(text(VALIDATION));
    assert.equal(tgi.detect({ payload: first }), 1);
    assert.equal(tgi.detect({ payload: old }), 0.9);
    assert.ok(tgi.detect({ payload: error }) > 0);
    assert.ok(tgi.detect({ path: '/generate_stream' }) >= 0.8);
    assert.equal(tgi.detect({ path: '/generate' }), 0);
    assert.equal(tgi.detect({ payload: { error: 'model not found' } }), 0);
    assert.equal(tgi.detect({ payload: { index: 0, content: 'x', stop: false, id_slot: -1 } }), 0);
  });
});

describe('tgi encoder: what it writes of what it knows', () => {
  it("writes the request's seed in details (null only when none was given), and a token's own id and logprob", () => {
    const events = [
      { type: 'start' as const, model: 'm' },
      { type: 'text' as const, text: 'Hi', tokenIds: [13048], logprobs: [{ token: 'Hi', logprob: -0.25 }] },
      { type: 'finish' as const, reason: 'length' as const, raw: 'length' },
    ];
    const lines = (options: Parameters<typeof encodeEvents>[2]) =>
      encodeEvents(tgi, events, options)
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map(
          (line) =>
            JSON.parse(line.slice(5)) as {
              token: { id: number; logprob: number };
              details: { seed: unknown } | null;
            },
        );
    const seeded = lines({ sampling: { seed: 7 } });
    assert.equal(seeded.at(-1)!.details!.seed, 7);
    assert.equal(seeded[0]!.token.id, 13048);
    assert.equal(seeded[0]!.token.logprob, -0.25);
    assert.equal(lines({}).at(-1)!.details!.seed, null);
  });
});
