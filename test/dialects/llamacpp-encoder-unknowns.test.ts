import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { llamacpp } from '../../src/dialects/llamacpp/index.ts';
import type { StreamEvent } from '../../src/events/stream-event.ts';
import { encodeEvents } from '../helpers/decode.ts';

function payloads(wire: string): Record<string, unknown>[] {
  return wire
    .split('\n')
    .filter((line) => line.startsWith('data: ') || line.startsWith('error:'))
    .map((line) => JSON.parse(line.slice(line.indexOf(':') + 1)) as Record<string, unknown>);
}

/**
 * A llama.cpp native stream translated from another server's (an OpenAI-chat one that
 * reported no counts, as llama-server's chat route without `include_usage`) writes what no upstream
 * said nowhere: no `tokens_evaluated: 0` on each chunk, no slot number, no cache fill or truncation
 * made up from zeros.
 */
describe('llama.cpp encoder: values no upstream said are left out', () => {
  const events: StreamEvent[] = [
    { type: 'start', id: 'chatcmpl-1', model: 'm' },
    { type: 'text', text: 'Hello' },
    { type: 'text', text: ' world' },
    { type: 'finish', reason: 'stop', raw: 'stop' },
  ];

  it('modern: partial events carry no tokens_evaluated; the final event no id_slot, tokens_evaluated, tokens_cached or truncated', () => {
    const out = payloads(encodeEvents(llamacpp, events));
    assert.deepEqual(out.slice(0, 2), [
      { index: 0, content: 'Hello', stop: false, id_slot: -1, tokens_predicted: 1 },
      { index: 0, content: ' world', stop: false, id_slot: -1, tokens_predicted: 2 },
    ]);
    const final = out.at(-1)!;
    assert.equal(final.stop, true);
    for (const key of ['id_slot', 'tokens_evaluated', 'tokens_cached', 'truncated']) {
      assert.equal(key in final, false, `${key} was invented: ${JSON.stringify(final)}`);
    }
    // What is known is still there: the count of tokens written, the finish.
    assert.equal(final.tokens_predicted, 3);
    assert.equal(final.stop_type, 'eos');
  });

  it('legacy: no slot number invented on partial or final events', () => {
    const out = payloads(encodeEvents(llamacpp, events, { flavor: 'legacy' }));
    for (const payload of out) assert.equal('id_slot' in payload, false, JSON.stringify(payload));
    assert.equal('tokens_evaluated' in out.at(-1)!, false);
  });

  it('counts the upstream did report are written (usage before the text: on every partial event)', () => {
    const withUsage: StreamEvent[] = [
      events[0]!,
      { type: 'usage', usage: { inputTokens: 5 } },
      events[1]!,
      { type: 'finish', reason: 'stop', raw: 'stop' },
      { type: 'usage', usage: { inputTokens: 5, outputTokens: 1, totalTokens: 6 } },
    ];
    const out = payloads(encodeEvents(llamacpp, withUsage));
    assert.equal(out[0]!.tokens_evaluated, 5);
    const final = out.at(-1)!;
    assert.equal(final.tokens_evaluated, 5);
    assert.equal(final.tokens_cached, 5);
  });
});
