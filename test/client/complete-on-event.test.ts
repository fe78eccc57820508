import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { complete, stream } from '../../src/client/token-stream.ts';
import type { StreamEvent } from '../../src/events/stream-event.ts';
import { BODY, bodyOf, line, sourceOf, URL_CHAT } from '../helpers/ollama-chat-body.ts';

/** A fetch of an Ollama /api/chat body of these pieces, cut into reads at `cuts`, with how it was read. */
function fetchOf(pieces: readonly string[], cuts: readonly number[] = [], finish = true) {
  const reads = bodyOf(pieces, cuts, finish);
  return { ...sourceOf(reads), reads: reads.length };
}

describe('complete({ onEvent })', () => {
  it('hands over the same events, in the same order, as stream() yields, and its Result is the same', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.string({ minLength: 1, maxLength: 8 }), { maxLength: 20 }),
        fc.array(fc.nat(600), { maxLength: 8 }),
        fc.boolean(),
        async (pieces, cuts, finish) => {
          const seen: StreamEvent[] = [];
          const viaCallback = await complete(
            { url: URL_CHAT, body: BODY },
            { fetch: fetchOf(pieces, cuts, finish).fetch, onEvent: (event) => seen.push(event) },
          );
          const tokens = stream(
            { url: URL_CHAT, body: BODY },
            { fetch: fetchOf(pieces, cuts, finish).fetch },
          );
          const iterated: StreamEvent[] = [];
          for await (const event of tokens) iterated.push(event);
          const viaIterator = await tokens.result;
          assert.deepEqual(seen, iterated);
          assert.equal(viaCallback.text, pieces.join(''));
          assert.equal(viaCallback.complete, finish);
          assert.equal(viaCallback.incomplete, viaIterator.incomplete);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('every event has arrived by the time complete() resolves', async () => {
    let texts = 0;
    const result = await complete(
      { url: URL_CHAT, body: BODY },
      {
        fetch: fetchOf(['a', 'b', 'c'], [40, 200]).fetch,
        onEvent: (event) => {
          if (event.type === 'text') texts += 1;
        },
      },
    );
    assert.equal(texts, 3);
    assert.equal(result.text, 'abc');
  });

  it('a throw in onEvent stops the request, no later event is handed over, and complete() rejects with it', async () => {
    const pieces = Array.from({ length: 50 }, (_, i) => `p${i} `);
    // One line per read, so the body is not all read when the callback throws.
    const source = fetchOf(
      pieces,
      pieces.map((_, i) => (i + 1) * line('p0 ').length),
    );
    const stop = new Error('the consumer had enough');
    const texts: string[] = [];
    await assert.rejects(
      complete(
        { url: URL_CHAT, body: BODY },
        {
          fetch: source.fetch,
          onEvent: (event) => {
            if (event.type !== 'text') return;
            texts.push(event.text);
            if (texts.length === 3) throw stop;
          },
        },
      ),
      (error) => error === stop,
    );
    assert.deepEqual(texts, ['p0 ', 'p1 ', 'p2 ']);
    assert.equal(source.cancelled(), true, 'the body is cancelled, so the server sees the close');
    assert.ok(source.pulls() < source.reads, `read ${source.pulls()} of ${source.reads} reads`);
  });
});
