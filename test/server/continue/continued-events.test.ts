import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { StreamEvent } from '../../../src/events/stream-event.ts';
import { ContinuedEvents } from '../../../src/server/relay/continued-events.ts';
import { AnswerSoFar } from '../../../src/server/request/answer-so-far.ts';

function run(echo: string | undefined, events: StreamEvent[], tokensBefore = 0, inText = true) {
  const out: StreamEvent[] = [];
  const filter = new ContinuedEvents({ echo, tokensBefore, inText, emit: (event) => out.push(event) });
  let diverged = false;
  for (const event of events) if (filter.event(event) === 'diverged') diverged = true;
  filter.flush();
  return { out, diverged, text: out.map((event) => (event.type === 'text' ? event.text : '')).join('') };
}

/** `text` cut at the given offsets into text events. */
function chunks(text: string, cuts: number[]): StreamEvent[] {
  const at = [...new Set(cuts.map((cut) => cut % (text.length + 1)))].sort((a, b) => a - b);
  const events: StreamEvent[] = [];
  let from = 0;
  for (const cut of [...at, text.length]) {
    if (cut > from) events.push({ type: 'text', text: text.slice(from, cut) });
    from = cut;
  }
  return events;
}

describe('ContinuedEvents: a continuation joined to its stream', () => {
  it('takes the echoed prefill off, however the server cut it into events', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 30 }),
        fc.string({ maxLength: 30 }),
        fc.array(fc.nat(80), { maxLength: 6 }),
        (prefill, rest, cuts) => {
          assert.equal(run(prefill, chunks(prefill + rest, cuts)).text, rest);
        },
      ),
    );
  });

  it('passes a continuation that does not echo as it is, however it is cut', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 30 }),
        fc.string({ minLength: 1, maxLength: 30 }),
        fc.array(fc.nat(80), { maxLength: 6 }),
        (prefill, rest, cuts) => {
          fc.pre(!rest.startsWith(prefill));
          assert.equal(run(prefill, chunks(rest, cuts)).text, rest);
        },
      ),
    );
  });

  it('drops the continuation’s start and counts usage once for the whole answer', () => {
    const { out } = run(
      undefined,
      [
        { type: 'start', id: 'other' },
        { type: 'text', text: 'b' },
        {
          type: 'usage',
          usage: { inputTokens: 20, outputTokens: 5, totalTokens: 25, cachedInputTokens: 19 },
        },
        { type: 'timings', timings: { promptEvalTokens: 20, evalTokens: 5, evalMs: 10 } },
      ],
      8,
    );
    assert.deepEqual(
      out.map((event) => event.type),
      ['text', 'usage', 'timings'],
    );
    const second = out[1];
    const usage = second?.type === 'usage' ? second.usage : undefined;
    assert.deepEqual(
      [usage?.inputTokens, usage?.outputTokens, usage?.totalTokens, usage?.cachedInputTokens],
      [12, 13, 25, 12],
    );
    const third = out[2];
    const timings = third?.type === 'timings' ? third.timings : undefined;
    assert.deepEqual([timings?.promptEvalTokens, timings?.evalTokens, timings?.evalMs], [12, 13, 10]);
  });

  it('reports a continuation that starts reasoning when the answer was in its text as diverged', () => {
    assert.equal(run(undefined, [{ type: 'reasoning', text: 'hmm' }]).diverged, true);
    assert.equal(run(undefined, [{ type: 'reasoning', text: 'hmm' }], 0, false).diverged, false);
    assert.equal(
      run(undefined, [
        { type: 'text', text: 'a' },
        { type: 'reasoning', text: 'hmm' },
      ]).diverged,
      false,
      'reasoning after text it wrote is its own',
    );
  });
});

describe('AnswerSoFar: what the client has of the answer', () => {
  it('history() brings an encoder to as many text events as went out, with the same text', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ minLength: 1, maxLength: 5 }), { maxLength: 12 }), (pieces) => {
        const soFar = new AnswerSoFar(false);
        soFar.observe({ type: 'start', id: 'x' });
        for (const text of pieces) soFar.observe({ type: 'text', text });
        const history = soFar.history();
        const texts = history.filter((event) => event.type === 'text');
        assert.equal(
          texts.map((event) => (event.type === 'text' ? event.text : '')).join(''),
          pieces.join(''),
        );
        assert.ok(texts.length <= pieces.length);
        assert.equal(texts.length, Math.min(pieces.length, Array.from(pieces.join('')).length));
        assert.equal(history[0]?.type, 'start');
      }),
    );
  });

  it('keeps the token ids only while every text event carries them', () => {
    const soFar = new AnswerSoFar(true);
    soFar.observe({ type: 'text', text: 'a', tokenIds: [1] });
    soFar.observe({ type: 'text', text: 'b', tokenIds: [2, 3] });
    assert.deepEqual(soFar.ids, [1, 2, 3]);
    assert.equal(soFar.tokens, 3);
    soFar.observe({ type: 'text', text: 'c' });
    assert.equal(soFar.ids, undefined);
    assert.equal(soFar.tokens, 3, 'one per event without ids');
  });

  it('forgets the ids once reasoning came apart from the text (its tokens have no ids)', () => {
    const soFar = new AnswerSoFar(true);
    soFar.observe({ type: 'text', text: 'a', tokenIds: [1] });
    soFar.observe({ type: 'reasoning', text: 'r' });
    assert.equal(soFar.ids, undefined);
  });

  it('says where the answer stood: text, reasoning, a tool call; several choices; a finish', () => {
    const soFar = new AnswerSoFar(false);
    soFar.observe({ type: 'reasoning', text: 'r' });
    assert.equal(soFar.place, 'reasoning');
    soFar.observe({ type: 'text', text: 't' });
    assert.equal(soFar.place, 'text');
    soFar.observe({ type: 'tool-call-delta', index: 0, argumentsDelta: '{' });
    assert.equal(soFar.place, 'tool-call');
    assert.equal(soFar.toolCall, true);
    soFar.observe({ type: 'text', text: 'x', choice: 1 });
    assert.equal(soFar.otherChoices, true);
    soFar.observe({ type: 'finish', reason: 'stop', raw: 'stop' });
    assert.equal(soFar.finished, true);
  });
});
