import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RequestError } from '../../src/dialects/dialect.ts';
import { nonStreamBody } from '../../src/dialects/non-stream-body.ts';
import { openAiResponses } from '../../src/dialects/openai-responses/index.ts';
import { getDialect } from '../../src/dialects/registry.ts';
import { untranslatableFields } from '../../src/dialects/request-field-table.ts';
import type { StreamEvent, TextEvent, TokenLogprob } from '../../src/events/stream-event.ts';
import { utf8 } from '../helpers/chunks.ts';
import { fold } from '../helpers/conformance.ts';
import { decodeChunks, encodeEvents } from '../helpers/decode.ts';

/**
 * The Responses dialect's log probabilities. Asked with `top_logprobs: K` and
 * `include: ["message.output_text.logprobs"]`; streamed on each `response.output_text.delta` as
 * `logprobs: [{token, logprob, top_logprobs: [{token, logprob}]}]` (openai `ResponseTextDeltaEvent`),
 * accumulated on `response.output_text.done`, and on the `output_text` part as
 * `[{token, bytes, logprob, top_logprobs: [{token, bytes, logprob}]}]` (`ResponseOutputText.Logprob`).
 */

const HI: TokenLogprob = {
  token: 'Hi',
  logprob: -0.5,
  bytes: [72, 105],
  top: [
    { token: 'Hi', logprob: -0.5, bytes: [72, 105] },
    { token: 'Hey', logprob: -1.5, bytes: [72, 101, 121] },
  ],
};
const THERE: TokenLogprob = { token: ' there', logprob: -1.25, top: [{ token: ' there', logprob: -1.25 }] };

const ITEM = 'msg_1';
const EVENTS: StreamEvent[] = [
  { type: 'start', id: 'resp_1', model: 'm', created: 1767225600 },
  { type: 'text', text: 'Hi', itemId: ITEM, logprobs: [HI] },
  { type: 'text', text: ' there', logprobs: [THERE] },
  { type: 'finish', reason: 'stop', raw: 'completed' },
  { type: 'usage', usage: { inputTokens: 3, outputTokens: 2 } },
];

/** The SSE payloads of a stream, parsed. */
function payloads(wire: string): Record<string, unknown>[] {
  return wire
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => JSON.parse(line.slice(6)) as Record<string, unknown>);
}

function dataLines(wire: string, type: string): string[] {
  return wire
    .split('\n')
    .filter((line) => line.startsWith(`data: {"type":"${type}"`))
    .map((line) => line.slice(6));
}

function texts(events: readonly StreamEvent[]): TextEvent[] {
  return events.filter((event): event is TextEvent => event.type === 'text');
}

const HI_DELTA =
  '[{"token":"Hi","logprob":-0.5,"bytes":[72,105],"top_logprobs":[{"token":"Hi","logprob":-0.5,"bytes":[72,105]},{"token":"Hey","logprob":-1.5,"bytes":[72,101,121]}]}]';
const HI_PART = {
  token: 'Hi',
  bytes: [72, 105],
  logprob: -0.5,
  top_logprobs: [
    { token: 'Hi', bytes: [72, 105], logprob: -0.5 },
    { token: 'Hey', bytes: [72, 101, 121], logprob: -1.5 },
  ],
};
// No bytes from the upstream: the part's required `bytes` are the token's UTF-8 bytes.
const THERE_PART = {
  token: ' there',
  bytes: [32, 116, 104, 101, 114, 101],
  logprob: -1.25,
  top_logprobs: [{ token: ' there', bytes: [32, 116, 104, 101, 114, 101], logprob: -1.25 }],
};

describe('responses encoder: logprobs', () => {
  it('openai: each delta’s logprobs, the done event’s and the part’s accumulated, in the SDK types’ shapes', () => {
    const wire = encodeEvents(openAiResponses, EVENTS, { flavor: 'openai' });
    const deltas = dataLines(wire, 'response.output_text.delta');
    assert.deepEqual(deltas, [
      `{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi","logprobs":${HI_DELTA}}`,
      `{"type":"response.output_text.delta","sequence_number":5,"item_id":"msg_1","output_index":0,"content_index":0,"delta":" there","logprobs":[{"token":" there","logprob":-1.25,"top_logprobs":[{"token":" there","logprob":-1.25}]}]}`,
    ]);
    const all = payloads(wire);
    const done = all.find((p) => p.type === 'response.output_text.done')!;
    assert.deepEqual(done.logprobs, [
      JSON.parse(HI_DELTA)[0],
      { token: ' there', logprob: -1.25, top_logprobs: [{ token: ' there', logprob: -1.25 }] },
    ]);
    const part = all.find((p) => p.type === 'response.content_part.done')!.part as Record<string, unknown>;
    assert.deepEqual(part.logprobs, [HI_PART, THERE_PART]);
    assert.equal(
      JSON.stringify((part.logprobs as unknown[])[0]),
      JSON.stringify(HI_PART),
      'ResponseOutputText.Logprob key order: token, bytes, logprob, top_logprobs',
    );
    const item = all.find((p) => p.type === 'response.output_item.done')!.item as {
      content: { logprobs: unknown }[];
    };
    assert.deepEqual(item.content[0]!.logprobs, [HI_PART, THERE_PART]);
    const completed = all.find((p) => p.type === 'response.completed')!.response as {
      output: { content: { logprobs: unknown }[] }[];
    };
    assert.deepEqual(completed.output[0]!.content[0]!.logprobs, [HI_PART, THERE_PART]);
  });

  it('writes [] everywhere when the events carry none (not asked for)', () => {
    const plain = EVENTS.map((event) =>
      event.type === 'text' ? { type: 'text' as const, text: event.text, itemId: ITEM } : event,
    );
    for (const flavor of ['openai', 'vllm', 'ollama']) {
      const all = payloads(encodeEvents(openAiResponses, plain, { flavor }));
      for (const p of all.filter(
        (x) => x.type === 'response.output_text.delta' || x.type === 'response.output_text.done',
      ))
        assert.deepEqual(p.logprobs, [], flavor);
      const part = all.find((p) => p.type === 'response.content_part.done')!.part as Record<string, unknown>;
      assert.deepEqual(part.logprobs, [], flavor);
    }
    // llama-server writes no `logprobs` on its deltas: none is added when there are none.
    const llama = dataLines(
      encodeEvents(openAiResponses, plain, { flavor: 'llamacpp' }),
      'response.output_text.delta',
    );
    assert.ok(
      llama.every((line) => !line.includes('logprobs')),
      llama.join('\n'),
    );
  });

  for (const flavor of ['openai', 'vllm', 'llamacpp', 'ollama']) {
    it(`${flavor}: decode(encode(events)) gives the logprobs back`, () => {
      const decoded = decodeChunks(openAiResponses, [
        utf8(encodeEvents(openAiResponses, EVENTS, { flavor })),
      ]);
      assert.ok(decoded.complete);
      assert.deepEqual(
        texts(decoded.events).map((event) => event.logprobs),
        [[HI], [THERE]],
      );
    });
  }

  it('the non-stream Response carries the logprobs on its output_text part', () => {
    const body = nonStreamBody('openai-responses', fold(EVENTS), 'm', 1767225600000) as {
      output: { content: { logprobs: unknown }[] }[];
    };
    assert.deepEqual(body.output[0]!.content[0]!.logprobs, [HI_PART, THERE_PART]);
    const plain = nonStreamBody(
      'openai-responses',
      fold([{ type: 'text', text: 'x' }]),
      'm',
      0,
    ) as typeof body;
    assert.deepEqual(plain.output[0]!.content[0]!.logprobs, []);
  });
});

describe('responses decoder: logprobs', () => {
  const delta = (seq: number, text: string, logprobs: string) =>
    `event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":${seq},"item_id":"msg_1","output_index":0,"content_index":0,"delta":"${text}","logprobs":${logprobs}}\n\n`;

  it('reads each delta’s logprobs; [] is none; a template learned from bare deltas never drops them', () => {
    let wire = '';
    let seq = 0;
    // Bare deltas teach the decoder's text-frame template ...
    for (const t of ['a', 'b', 'c', 'd']) wire += delta(seq++, t, '[]');
    // ... then deltas that carry the same logprobs bytes each: read in full, every one.
    for (const t of ['e', 'f', 'g'])
      wire += delta(seq++, t, '[{"token":"x","logprob":-0.25,"top_logprobs":[]}]');
    for (const t of ['h', 'i']) wire += delta(seq++, t, '[]');
    const decoded = decodeChunks(openAiResponses, [utf8(wire)]);
    assert.deepEqual(
      texts(decoded.events).map((event) => [event.text, event.logprobs]),
      [
        ['a', undefined],
        ['b', undefined],
        ['c', undefined],
        ['d', undefined],
        ['e', [{ token: 'x', logprob: -0.25, top: [] }]],
        ['f', [{ token: 'x', logprob: -0.25, top: [] }]],
        ['g', [{ token: 'x', logprob: -0.25, top: [] }]],
        ['h', undefined],
        ['i', undefined],
      ],
    );
  });

  it('reads the logprobs of a message that came whole in its done item', () => {
    const wire =
      'event: response.output_item.done\ndata: {"type":"response.output_item.done","item":{"id":"msg_9","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"logprobs":[{"token":"Hi","bytes":[72,105],"logprob":-0.5,"top_logprobs":[]}],"text":"Hi"}]}}\n\n';
    const decoded = decodeChunks(openAiResponses, [utf8(wire)]);
    assert.deepEqual(texts(decoded.events), [
      {
        type: 'text',
        text: 'Hi',
        itemId: 'msg_9',
        logprobs: [{ token: 'Hi', logprob: -0.5, bytes: [72, 105], top: [] }],
      },
    ]);
  });
});

describe('responses requests: logprobs', () => {
  const body = (extra: Record<string, unknown>) => ({ model: 'm', input: 'hi', ...extra });
  const INCLUDE = 'message.output_text.logprobs';

  it('reads include message.output_text.logprobs with top_logprobs as the top-K count; other includes stay', () => {
    assert.equal(openAiResponses.fromRequestBody(body({ include: [INCLUDE], top_logprobs: 3 })).logprobs, 3);
    assert.equal(openAiResponses.fromRequestBody(body({ include: [INCLUDE] })).logprobs, 0);
    const both = openAiResponses.fromRequestBody(
      body({ include: ['reasoning.encrypted_content', INCLUDE], top_logprobs: 1 }),
    );
    assert.equal(both.logprobs, 1);
    assert.deepEqual(both.extra, { include: ['reasoning.encrypted_content'] });
    // top_logprobs alone turns nothing on, and is not reported lost.
    const alone = openAiResponses.fromRequestBody(body({ top_logprobs: 2 }));
    assert.equal(alone.logprobs, undefined);
    assert.equal(alone.extra, undefined);
    assert.equal(openAiResponses.fromRequestBody(body({ include: [INCLUDE] })).extra, undefined);
  });

  it('refuses top_logprobs outside 0–20 and an include that is not a list of strings', () => {
    for (const bad of [
      body({ include: [INCLUDE], top_logprobs: 21 }),
      body({ include: [INCLUDE], top_logprobs: -1 }),
      body({ include: INCLUDE }),
      body({ include: [1] }),
    ]) {
      assert.throws(() => openAiResponses.fromRequestBody(bad), RequestError, JSON.stringify(bad));
    }
  });

  it('writes include and top_logprobs (left out for 0), beside the client’s other includes', () => {
    const out = openAiResponses.toRequestBody({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
      logprobs: 2,
    });
    assert.deepEqual(out.include, [INCLUDE]);
    assert.equal(out.top_logprobs, 2);
    const zero = openAiResponses.toRequestBody({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
      logprobs: 0,
    });
    assert.deepEqual(zero.include, [INCLUDE]);
    assert.equal('top_logprobs' in zero, false);
    const merged = openAiResponses.toRequestBody(
      openAiResponses.fromRequestBody(
        body({ include: ['reasoning.encrypted_content', INCLUDE], top_logprobs: 1 }),
      ),
    );
    assert.deepEqual(merged.include, ['reasoning.encrypted_content', INCLUDE]);
    const none = openAiResponses.toRequestBody({ model: 'm', messages: [{ role: 'user', content: 'x' }] });
    assert.equal('include' in none, false);
  });

  it('translates to and from OpenAI chat and Ollama, losing nothing', () => {
    const request = openAiResponses.fromRequestBody(body({ include: [INCLUDE], top_logprobs: 2 }));
    for (const upstream of ['openai-chat', 'ollama-chat', 'llamacpp'] as const)
      assert.deepEqual(untranslatableFields(request, 'openai-responses', upstream), [], upstream);
    const chat = getDialect('openai-chat').toRequestBody(request);
    assert.equal(chat.logprobs, true);
    assert.equal(chat.top_logprobs, 2);
    const fromChat = getDialect('openai-chat').fromRequestBody({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
      logprobs: true,
      top_logprobs: 5,
    });
    assert.deepEqual(untranslatableFields(fromChat, 'openai-chat', 'openai-responses'), []);
    const out = openAiResponses.toRequestBody(fromChat);
    assert.deepEqual(out.include, [INCLUDE]);
    assert.equal(out.top_logprobs, 5);
    assert.deepEqual(untranslatableFields(request, 'openai-responses', 'anthropic-messages'), [
      'top_logprobs',
    ]);
  });
});
