import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { anthropicMessages } from '../../src/dialects/anthropic-messages/index.ts';
import { openAiResponses } from '../../src/dialects/openai-responses/index.ts';
import type { StreamEvent } from '../../src/events/stream-event.ts';
import { fold } from '../helpers/conformance.ts';
import { decodeChunks, encodeEvents } from '../helpers/decode.ts';

const utf8 = (text: string) => new TextEncoder().encode(text);

/** Two calls whose fragments interleave, as an OpenAI chat decoder emits them. */
const INTERLEAVED: StreamEvent[] = [
  { type: 'start', id: 'x', model: 'm' },
  { type: 'tool-call-delta', index: 0, id: 'call_a1', name: 'get_weather', argumentsDelta: '' },
  { type: 'tool-call-delta', index: 1, id: 'call_b2', name: 'get_time', argumentsDelta: '' },
  { type: 'tool-call-delta', index: 0, argumentsDelta: '{"ci' },
  { type: 'tool-call-delta', index: 1, argumentsDelta: '{"tz":' },
  { type: 'tool-call-delta', index: 0, argumentsDelta: 'ty": "東京' },
  { type: 'tool-call-delta', index: 1, argumentsDelta: ' "Asia/Tokyo"}' },
  { type: 'tool-call-delta', index: 0, argumentsDelta: ' 🗼"}' },
  {
    type: 'tool-call',
    index: 0,
    id: 'call_a1',
    name: 'get_weather',
    arguments: '{"city": "東京 🗼"}',
    input: { city: '東京 🗼' },
  },
  {
    type: 'tool-call',
    index: 1,
    id: 'call_b2',
    name: 'get_time',
    arguments: '{"tz": "Asia/Tokyo"}',
    input: { tz: 'Asia/Tokyo' },
  },
  { type: 'finish', reason: 'tool-calls', raw: 'tool_calls' },
];

const CALLS = [
  ['call_a1', 'get_weather', { city: '東京 🗼' }],
  ['call_b2', 'get_time', { tz: 'Asia/Tokyo' }],
];

/** The call held behind the first streams as one block once the first is complete (or at the end). */
const callsOf = (wire: string) =>
  fold(decodeChunks(anthropicMessages, [utf8(wire)]).events).toolCalls.map((c) => [c.id, c.name, c.input]);

describe('parallel tool calls whose fragments interleave', () => {
  for (const flavor of ['anthropic', 'vllm', 'llamacpp']) {
    it(`Messages (${flavor}): two whole tool_use blocks, their ids, names and arguments`, () => {
      const wire = encodeEvents(anthropicMessages, INTERLEAVED, { flavor });
      assert.deepEqual(callsOf(wire), CALLS);
      const starts = wire.match(/"type":"content_block_start"/g) ?? [];
      assert.equal(starts.length, 2, wire);
      if (flavor !== 'llamacpp') {
        // One block open at a time: block 0 stops before block 1 starts.
        assert.ok(
          wire.indexOf('{"type":"content_block_stop","index":0}') < wire.lastIndexOf('content_block_start'),
        );
      }
    });
  }

  it('Messages: without the whole-call events (a cut upstream), the held call still goes out at the end', () => {
    const cut = INTERLEAVED.filter((event) => event.type !== 'tool-call' && event.type !== 'finish');
    const wire = encodeEvents(anthropicMessages, cut, {});
    const calls = fold(decodeChunks(anthropicMessages, [utf8(wire)]).events).toolCalls;
    assert.deepEqual(
      calls.map((c) => [c.id, c.arguments]),
      [
        ['call_a1', '{"city": "東京 🗼"}'],
        ['call_b2', '{"tz": "Asia/Tokyo"}'],
      ],
    );
  });

  it('Messages: a third call that arrives whole while the first streams waits its turn', () => {
    const events: StreamEvent[] = [
      { type: 'start', id: 'x', model: 'm' },
      { type: 'tool-call-delta', index: 0, id: 'call_a', name: 'f', argumentsDelta: '{"a":' },
      { type: 'tool-call', index: 1, id: 'call_b', name: 'g', arguments: '{"b":2}', input: { b: 2 } },
      { type: 'tool-call-delta', index: 0, argumentsDelta: '1}' },
      { type: 'tool-call', index: 0, id: 'call_a', name: 'f', arguments: '{"a":1}', input: { a: 1 } },
      { type: 'finish', reason: 'tool-calls', raw: null },
    ];
    const wire = encodeEvents(anthropicMessages, events, {});
    assert.deepEqual(callsOf(wire), [
      ['call_a', 'f', { a: 1 }],
      ['call_b', 'g', { b: 2 }],
    ]);
  });

  for (const flavor of ['openai', 'vllm', 'llamacpp']) {
    it(`Responses (${flavor}): two function_call items, each done once, no delta after its done`, () => {
      const wire = encodeEvents(openAiResponses, INTERLEAVED, { flavor });
      const decoded = decodeChunks(openAiResponses, [utf8(wire)]);
      assert.equal(decoded.complete, true);
      assert.deepEqual(
        fold(decoded.events).toolCalls.map((c) => [c.id, c.name, c.input]),
        CALLS,
      );
      const payloads = wire
        .split('\n')
        .filter((line) => line.startsWith('data: '))
        .map(
          (line) => JSON.parse(line.slice(6)) as { type: string; item_id?: string; item?: { id: string } },
        );
      const doneIds = payloads.filter((p) => p.type === 'response.output_item.done').map((p) => p.item!.id);
      assert.equal(new Set(doneIds).size, doneIds.length, 'no item done twice');
      assert.equal(doneIds.length, 2);
      for (const id of doneIds) {
        const doneAt = payloads.findIndex((p) => p.type === 'response.output_item.done' && p.item?.id === id);
        const lastDelta = payloads.findLastIndex(
          (p) => p.type === 'response.function_call_arguments.delta' && p.item_id === id,
        );
        assert.ok(lastDelta < doneAt, `${flavor}: a delta for ${id} after its done`);
      }
    });
  }
});
