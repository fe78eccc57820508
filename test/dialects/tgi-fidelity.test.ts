import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FrameKind } from '../../src/dialects/dialect.ts';
import { frameText } from '../../src/dialects/frame-text.ts';
import { StreamDecoder } from '../../src/dialects/stream-decoder.ts';
import { TgiDecoder } from '../../src/dialects/tgi/decoder.ts';
import { TgiEncoder, type TgiEncoderOptions } from '../../src/dialects/tgi/encoder.ts';
import { tgi } from '../../src/dialects/tgi/index.ts';
import type { StreamEvent, TextEvent } from '../../src/events/stream-event.ts';
import { utf8 } from '../helpers/chunks.ts';
import { fold } from '../helpers/conformance.ts';
import { decodeChunks } from '../helpers/decode.ts';
import { readFixture } from '../helpers/paths.ts';

/**
 * "TGI output is not TGI's": the native stream a translated answer is written as has one
 * token event per generated token, the last one carrying generated_text and details (no extra empty
 * event, no invented end-of-sequence token), no made-up ids or log probabilities, the stop-sequence
 * finish and the request's seed; and TGI's own log probabilities reach the events.
 */

const text = (fixture: string): string => new TextDecoder().decode(readFixture(fixture));

type Ending = { kind: 'complete' } | { kind: 'error'; message: string } | { kind: 'cut' };

function encode(
  events: readonly StreamEvent[],
  options: TgiEncoderOptions = {},
  ending: Ending = { kind: 'complete' },
) {
  const encoder = new TgiEncoder(options);
  let out = '';
  const sink = (data: string, kind?: FrameKind) => {
    out += frameText(encoder, data, kind);
  };
  for (const event of events) encoder.event(event, sink);
  if (ending.kind === 'complete') encoder.end(sink);
  else if (ending.kind === 'error') encoder.error({ message: ending.message }, sink);
  return out;
}

function payloads(wire: string): Record<string, unknown>[] {
  return wire
    .split(/\r\n|\r|\n/)
    .filter((line) => line.startsWith('data:'))
    .map((line) => JSON.parse(line.slice(5)) as Record<string, unknown>);
}

/** Decodes with the TGI decoder's options (the test helper uses the defaults). */
function decodeWith(bytes: Uint8Array, logprobs: boolean): StreamEvent[] {
  const events: StreamEvent[] = [];
  const decoder = new StreamDecoder(
    { ...tgi, createDecoder: (options) => new TgiDecoder({ ...options, logprobs }) },
    (event) => events.push(event),
  );
  decoder.feed(bytes);
  decoder.end();
  return events;
}

const sixteen: StreamEvent[] = [
  { type: 'start', model: 'm' },
  ...Array.from({ length: 16 }, (_, i): StreamEvent => ({ type: 'text', text: `t${i}` })),
  { type: 'finish', reason: 'length', raw: 'length' },
  { type: 'usage', usage: { inputTokens: 9, outputTokens: 16 } },
];

describe('tgi encoder: one event per generated token', () => {
  it('writes 16 token events for generated_tokens 16, the last with generated_text and details', () => {
    const events = payloads(encode(sixteen));
    assert.equal(events.length, 16);
    assert.deepEqual(
      events.map((event) => event.index),
      Array.from({ length: 16 }, (_, i) => i + 1),
    );
    const last = events.at(-1) as {
      token: Record<string, unknown>;
      generated_text: unknown;
      details: unknown;
    };
    assert.deepEqual(last.token, { id: null, text: 't15', logprob: null, special: false });
    assert.equal(last.generated_text, Array.from({ length: 16 }, (_, i) => `t${i}`).join(''));
    assert.deepEqual(last.details, {
      finish_reason: 'length',
      generated_tokens: 16,
      seed: null,
      input_length: 9,
    });
    for (const event of events.slice(0, -1)) {
      assert.equal(event.generated_text, null);
      assert.equal(event.details, null);
    }
  });

  it('writes these bytes: no invented end-of-sequence token, no made-up ids or log probabilities', () => {
    const wire = encode([
      { type: 'start' },
      { type: 'text', text: 'Hi' },
      { type: 'text', text: ' there' },
      { type: 'finish', reason: 'stop', raw: 'stop' },
      { type: 'usage', usage: { inputTokens: 9, outputTokens: 2 } },
    ]);
    assert.equal(
      wire,
      'data: {"index":1,"token":{"id":null,"text":"Hi","logprob":null,"special":false},"generated_text":null,"details":null}\n\n' +
        'data: {"index":2,"token":{"id":null,"text":" there","logprob":null,"special":false},"generated_text":"Hi there","details":{"finish_reason":"eos_token","generated_tokens":2,"seed":null,"input_length":9}}\n\n',
    );
    assert.doesNotMatch(wire, /eot_id|128009|<\/s>|"id":0|"logprob":0\.0/);
  });

  it('counts the token events when the upstream sent no output count, and writes null for an unknown input length', () => {
    const last = payloads(
      encode([
        { type: 'text', text: 'a' },
        { type: 'text', text: 'b' },
        { type: 'text', text: 'c' },
        { type: 'finish', reason: 'stop', raw: 'stop' },
      ]),
    ).at(-1) as { details: Record<string, unknown> };
    assert.equal(last.details.generated_tokens, 3);
    assert.equal(last.details.input_length, null);
  });

  it("writes the model's own end-of-sequence token when the writer knows it, counted as a token", () => {
    const events = payloads(
      encode(
        [
          { type: 'text', text: 'Hi' },
          { type: 'finish', reason: 'stop', raw: 'stop' },
        ],
        { endOfSequence: { id: 128009, text: '<|eot_id|>' } },
      ),
    );
    assert.equal(events.length, 2);
    assert.deepEqual(events[1], {
      index: 2,
      token: { id: 128009, text: '<|eot_id|>', logprob: null, special: true },
      generated_text: 'Hi',
      details: { finish_reason: 'eos_token', generated_tokens: 2, seed: null, input_length: null },
    });
    // Not after a length finish: the last generated token was text.
    const length = payloads(
      encode(
        [
          { type: 'text', text: 'Hi' },
          { type: 'finish', reason: 'length', raw: 'length' },
        ],
        { endOfSequence: { id: 128009, text: '<|eot_id|>' } },
      ),
    );
    assert.equal(length.length, 1);
  });

  it('ends a stream with no text with one event a TGI client can parse: empty text, null id and logprob', () => {
    const eos = payloads(encode([{ type: 'start' }, { type: 'finish', reason: 'stop', raw: 'stop' }]));
    assert.deepEqual(eos, [
      {
        index: 1,
        token: { id: null, text: '', logprob: null, special: true },
        generated_text: '',
        details: { finish_reason: 'eos_token', generated_tokens: 0, seed: null, input_length: null },
      },
    ]);
    const length = payloads(
      encode([
        { type: 'reasoning', text: 'thinking' },
        { type: 'finish', reason: 'length', raw: 'length' },
        { type: 'usage', usage: { inputTokens: 3, outputTokens: 4 } },
      ]),
    );
    assert.equal(length.length, 1);
    assert.deepEqual(length[0]!.token, { id: null, text: '', logprob: null, special: false });
    assert.deepEqual(length[0]!.details, {
      finish_reason: 'length',
      generated_tokens: 4,
      seed: null,
      input_length: 3,
    });
    // The decoder reads it back as an empty, finished answer.
    const decoded = decodeChunks(tgi, [utf8(encode([{ type: 'finish', reason: 'stop', raw: 'stop' }]))]);
    assert.equal(decoded.complete, true);
    assert.equal(fold(decoded.events).text, '');
  });

  it('writes the held token before a mid-stream error, and no details', () => {
    const wire = encode(
      [
        { type: 'text', text: 'Hi' },
        { type: 'text', text: ' there' },
      ],
      {},
      { kind: 'error', message: 'Request failed during generation: boom' },
    );
    assert.equal(
      wire,
      'data: {"index":1,"token":{"id":null,"text":"Hi","logprob":null,"special":false},"generated_text":null,"details":null}\n\n' +
        'data: {"index":2,"token":{"id":null,"text":" there","logprob":null,"special":false},"generated_text":null,"details":null}\n\n' +
        'data: {"error":"Request failed during generation: boom","error_type":"generation"}\n\n',
    );
  });

  it("writes another server's error type as TGI's word for its status, and keeps TGI's own", () => {
    const errorType = (error: { message: string; errorType?: string; status?: number }) => {
      const encoder = new TgiEncoder();
      let out = '';
      encoder.error(error, (data) => {
        out = data;
      });
      return (JSON.parse(out) as { error_type: string }).error_type;
    };
    assert.equal(errorType({ message: 'x', errorType: 'InternalServerError', status: 500 }), 'generation');
    assert.equal(errorType({ message: 'x', errorType: 'server_error' }), 'generation');
    assert.equal(errorType({ message: 'x', errorType: 'BadRequestError', status: 400 }), 'validation');
    assert.equal(errorType({ message: 'x', status: 429 }), 'overloaded');
    assert.equal(
      errorType({ message: 'x', errorType: 'incomplete_generation', status: 500 }),
      'incomplete_generation',
    );
  });

  it('writes the legacy flavor the same way: data: without a space, details without input_length', () => {
    const wire = encode(sixteen.slice(0, 3).concat(sixteen.slice(-2)), {
      flavor: 'legacy',
      sampling: { seed: 42 },
    });
    assert.equal(
      wire,
      'data:{"index":1,"token":{"id":null,"text":"t0","logprob":null,"special":false},"generated_text":null,"details":null}\n\n' +
        'data:{"index":2,"token":{"id":null,"text":"t1","logprob":null,"special":false},"generated_text":"t0t1","details":{"finish_reason":"length","generated_tokens":16,"seed":42}}\n\n',
    );
  });
});

describe('tgi encoder: finish words and seed', () => {
  const lastDetails = (finish: StreamEvent, seed?: number) => {
    const events = payloads(
      encode([{ type: 'text', text: 'Hello ###' }, finish], seed === undefined ? {} : { sampling: { seed } }),
    );
    return (events.at(-1) as { details: Record<string, unknown> }).details;
  };

  it('reports every upstream dialect’s stop-string finish as stop_sequence', () => {
    const stopSequence: [string, StreamEvent][] = [
      // vLLM (OpenAI chat and completions): `stop` with the matched string in `stop_reason`.
      ['vLLM stop_reason', { type: 'finish', reason: 'stop', raw: 'stop', stopSequence: '###' }],
      // llama-server native: `stop_type: "word"` + `stopping_word`; older `stopped_word: true`.
      ['llama.cpp word', { type: 'finish', reason: 'stop', raw: 'word', stopSequence: '###' }],
      [
        'llama.cpp stopped_word',
        { type: 'finish', reason: 'stop', raw: 'stopped_word', stopSequence: '###' },
      ],
      // TGI's own OpenAI routes pass it through; Anthropic names it.
      ['TGI chat', { type: 'finish', reason: 'stop', raw: 'stop_sequence' }],
      ['Anthropic', { type: 'finish', reason: 'stop', raw: 'stop_sequence', stopSequence: '###' }],
    ];
    for (const [name, finish] of stopSequence) {
      assert.equal(lastDetails(finish).finish_reason, 'stop_sequence', name);
    }
    // Ollama and llama-server's OpenAI routes do not say a stop string fired: an end of sequence.
    assert.equal(lastDetails({ type: 'finish', reason: 'stop', raw: 'stop' }).finish_reason, 'eos_token');
    // vLLM's integer stop_reason (a stop token id) is no stop string either.
    assert.equal(lastDetails({ type: 'finish', reason: 'stop', raw: 'eos' }).finish_reason, 'eos_token');
    assert.equal(
      lastDetails({ type: 'finish', reason: 'length', raw: 'max_tokens' }).finish_reason,
      'length',
    );
    assert.equal(lastDetails({ type: 'finish', reason: 'length', raw: 'limit' }).finish_reason, 'length');
  });

  it("writes the request's seed, null when it gave none", () => {
    assert.equal(lastDetails({ type: 'finish', reason: 'length', raw: 'length' }, 1234).seed, 1234);
    assert.equal(lastDetails({ type: 'finish', reason: 'length', raw: 'length' }).seed, null);
  });
});

describe('tgi encoder: log probabilities', () => {
  it("writes the upstream's ids, log probabilities (as serde writes an f32) and top alternatives", () => {
    const wire = encode([
      {
        type: 'text',
        text: 'Hi',
        tokenIds: [13347],
        logprobs: [
          {
            token: 'Hi',
            logprob: -1,
            id: 13347,
            top: [
              { token: 'Hi', logprob: -1, id: 13347 },
              { token: 'Hey', logprob: -1.5 },
            ],
          },
        ],
      },
      { type: 'finish', reason: 'length', raw: 'length' },
    ]);
    assert.equal(
      wire,
      'data: {"index":1,"token":{"id":13347,"text":"Hi","logprob":-1.0,"special":false},"top_tokens":[{"id":13347,"text":"Hi","logprob":-1.0,"special":false},{"id":null,"text":"Hey","logprob":-1.5,"special":false}],"generated_text":"Hi","details":{"finish_reason":"length","generated_tokens":1,"seed":null,"input_length":null}}\n\n',
    );
  });

  it('writes a chunk of several tokens as one event per token, and a non-finite log probability as null', () => {
    const events = payloads(
      encode([
        {
          type: 'text',
          text: 'Hello world',
          tokenIds: [1, 2],
          logprobs: [
            { token: 'Hello', logprob: -0.5 },
            { token: ' world', logprob: Number.NEGATIVE_INFINITY },
          ],
        },
        { type: 'finish', reason: 'length', raw: 'length' },
      ]),
    );
    assert.deepEqual(
      events.map((event) => event.token),
      [
        { id: 1, text: 'Hello', logprob: -0.5, special: false },
        { id: 2, text: ' world', logprob: null, special: false },
      ],
    );
    assert.equal((events[1]!.details as Record<string, unknown>).generated_tokens, 2);
  });

  it('re-encodes a TGI stream with top_tokens byte for byte, but for line ends, the keepalive and special alternatives', () => {
    const fixture = 'extra/tgi-generate-stream-stop-sequence-cr.sse';
    const decoded = decodeChunks(tgi, [readFixture(fixture)]);
    const expected = text(fixture)
      .replace(/\r/g, '\n')
      .replace(/:\n\n/g, '')
      .replace(
        '"text":"<|eot_id|>","logprob":-0.875,"special":true',
        '"text":"<|eot_id|>","logprob":-0.875,"special":false',
      );
    assert.equal(encode(decoded.events), expected);
  });

  it('re-encodes TGI 2.0 with its mid-character tokens byte for byte, given the model’s </s> (its logprob unknown)', () => {
    const fixture = 'extra/tgi-generate-stream-legacy.sse';
    const events = decodeWith(readFixture(fixture), true);
    const expected = text(fixture).replace(
      '"text":"</s>","logprob":-0.13574219',
      '"text":"</s>","logprob":null',
    );
    assert.equal(encode(events, { flavor: 'legacy', endOfSequence: { id: 2, text: '</s>' } }), expected);
  });
});

describe('tgi decoder: log probabilities', () => {
  it('puts each token’s logprob, its top_tokens and its id on the text event', () => {
    const decoded = decodeChunks(tgi, [readFixture('extra/tgi-generate-stream-stop-sequence-cr.sse')]);
    const texts = decoded.events.filter((event): event is TextEvent => event.type === 'text');
    assert.deepEqual(texts[0], {
      type: 'text',
      text: 'Hello',
      logprobs: [
        {
          token: 'Hello',
          logprob: -0.25,
          id: 9906,
          top: [
            { token: 'Hello', logprob: -0.25, id: 9906 },
            { token: 'Hi', logprob: -1.75, id: 13347 },
          ],
        },
      ],
      tokenIds: [9906],
    });
    assert.deepEqual(
      texts.map((event) => event.tokenIds),
      [[9906], [0], [198], [14711]],
    );
    // The final token (a stop sequence is text in TGI) has its own.
    assert.equal(texts.at(-1)!.logprobs![0]!.logprob, -0.125);
  });

  it('leaves them out when the request did not ask (no top_tokens), so other encoders write none', () => {
    const decoded = decodeChunks(tgi, [readFixture('wire-examples/tgi-generate-stream.sse')]);
    for (const event of decoded.events) {
      if (event.type === 'text') {
        assert.equal(event.logprobs, undefined);
        assert.equal(event.tokenIds, undefined);
      }
    }
  });

  it('with the logprobs option reads them on every token; a mid-character token’s goes with the next text', () => {
    const example = decodeWith(readFixture('wire-examples/tgi-generate-stream.sse'), true);
    assert.deepEqual(
      example.filter((event) => event.type === 'text'),
      [
        {
          type: 'text',
          text: 'Hi',
          logprobs: [{ token: 'Hi', logprob: -0.51, id: 13347 }],
          tokenIds: [13347],
        },
        {
          type: 'text',
          text: ' there',
          logprobs: [{ token: ' there', logprob: -1.25, id: 1070 }],
          tokenIds: [1070],
        },
      ],
    );
    const legacy = decodeWith(readFixture('extra/tgi-generate-stream-legacy.sse'), true);
    const wave = legacy.find((event): event is TextEvent => event.type === 'text' && event.text === '👋');
    assert.deepEqual(wave?.tokenIds, [243, 162, 148, 142]);
    assert.deepEqual(
      wave?.logprobs?.map((entry) => entry.token),
      ['', '', '', '👋'],
    );
  });

  it('gives no entry for a log probability serde wrote as null (not finite), keeping the id', () => {
    const wire =
      'data: {"index":1,"token":{"id":5,"text":"x","logprob":null,"special":false},"top_tokens":[{"id":5,"text":"x","logprob":null,"special":false}],"generated_text":"x","details":null}\n\n';
    const [, event] = decodeChunks(tgi, [utf8(wire)]).events;
    assert.deepEqual(event, { type: 'text', text: 'x', tokenIds: [5] });
  });
});

describe('tgi request: top_n_tokens is the normalized logprobs count', () => {
  it('reads top_n_tokens K ≥ 1 as logprobs K, and 0 as not asking', () => {
    assert.equal(tgi.fromRequestBody({ inputs: 'x', parameters: { top_n_tokens: 3 } }).logprobs, 3);
    assert.equal(tgi.fromRequestBody({ inputs: 'x', parameters: { top_n_tokens: 0 } }).logprobs, undefined);
    assert.equal(tgi.fromRequestBody({ inputs: 'x', parameters: { top_n_tokens: 0 } }).extra, undefined);
    assert.throws(
      () => tgi.fromRequestBody({ inputs: 'x', parameters: { top_n_tokens: -1 } }),
      /top_n_tokens/,
    );
    assert.throws(
      () => tgi.fromRequestBody({ inputs: 'x', parameters: { top_n_tokens: 1.5 } }),
      /top_n_tokens/,
    );
  });

  it('writes logprobs K as top_n_tokens K, 0 included (the mark that log probabilities were asked for)', () => {
    const parameters = (logprobs?: number) =>
      tgi.toRequestBody(logprobs === undefined ? { prompt: 'x' } : { prompt: 'x', logprobs })
        .parameters as Record<string, unknown>;
    assert.equal(parameters(2).top_n_tokens, 2);
    assert.equal(parameters(0).top_n_tokens, 0);
    assert.equal('top_n_tokens' in parameters(), false);
  });

  it('reads do_sample: false (and no parameters) as greedy: temperature 0 for the upstream', () => {
    assert.equal(
      tgi.fromRequestBody({ inputs: 'x', parameters: { do_sample: false, max_new_tokens: 4 } }).temperature,
      0,
    );
    assert.equal(
      tgi.fromRequestBody({ inputs: 'x', parameters: { do_sample: false, seed: 3 } }).temperature,
      0,
    );
  });
});
