import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setImmediate as turn } from 'node:timers/promises';
import fc from 'fast-check';
import { IncompleteStreamError } from '../../src/client/client-errors.ts';
import { stream } from '../../src/client/token-stream.ts';
import type { StreamEvent } from '../../src/events/stream-event.ts';
import { BODY, bodyOf, line, type Source, sourceOf, URL_CHAT } from '../helpers/ollama-chat-body.ts';

const encoder = new TextEncoder();

/** Many reads of many lines, so that a consumer that stops taking makes reading pause. */
function longSource(reads = 60, linesPerRead = 100): Source {
  const all: Uint8Array[] = [];
  for (let r = 0; r < reads; r++) {
    let text = '';
    for (let i = 0; i < linesPerRead; i++) text += line(`t${r * linesPerRead + i} `);
    all.push(encoder.encode(text));
  }
  all.push(encoder.encode(line('', true)));
  return sourceOf(all);
}

async function eventsByIterator(source: Source): Promise<StreamEvent[]> {
  const out: StreamEvent[] = [];
  for await (const event of stream({ url: URL_CHAT, body: BODY }, { fetch: source.fetch })) out.push(event);
  return out;
}

describe('stream().batches()', () => {
  it('delivers the event iterator’s events in order, in non-empty batches, whatever the reads', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.string({ unit: 'grapheme', maxLength: 6 }), { maxLength: 40 }),
        fc.array(fc.nat({ max: 4000 }), { maxLength: 30 }),
        async (pieces, cuts) => {
          const expected = await eventsByIterator(sourceOf(bodyOf(pieces, cuts)));
          const tokens = stream(
            { url: URL_CHAT, body: BODY },
            { fetch: sourceOf(bodyOf(pieces, cuts)).fetch },
          );
          const got: StreamEvent[] = [];
          for await (const batch of tokens.batches()) {
            assert.ok(batch.length > 0, 'a batch is never empty');
            got.push(...batch);
          }
          assert.deepEqual(got, expected);
          const result = await tokens.result;
          assert.equal(result.complete, true);
          assert.equal(result.text, pieces.join(''));
        },
      ),
      { numRuns: 60 },
    );
  });

  it('pauses reading while a batch waits untaken, then delivers every event in order', async () => {
    const source = longSource();
    const tokens = stream({ url: URL_CHAT, body: BODY }, { fetch: source.fetch });
    const batches = tokens.batches();
    const first = await batches.next();
    assert.equal(first.done, false);
    for (let i = 0; i < 50; i++) await turn();
    assert.ok(source.pulls() < 30, `read ${source.pulls()} of 61 reads ahead of the consumer`);
    const texts = (first.value as readonly StreamEvent[]).filter((e) => e.type === 'text');
    for (;;) {
      const next = await batches.next();
      if (next.done === true) break;
      for (const event of next.value) if (event.type === 'text') texts.push(event);
    }
    assert.deepEqual(
      texts.map((e) => (e.type === 'text' ? e.text : '')),
      [...Array(6000).keys()].map((i) => `t${i} `),
    );
    assert.equal((await tokens.result).complete, true);
  });

  it('breaking out of the loop aborts the request and cancels the body', async () => {
    const source = longSource();
    const tokens = stream({ url: URL_CHAT, body: BODY }, { fetch: source.fetch });
    let seen = 0;
    for await (const batch of tokens.batches()) {
      seen += batch.length;
      break;
    }
    assert.ok(seen > 0);
    const result = await tokens.result;
    assert.equal(result.incomplete, 'aborted');
    assert.ok(source.cancelled());
    assert.ok(source.pulls() < 61);
  });

  it('ends after the events read before a failure mid-stream; the Result says what happened', async () => {
    const reads = bodyOf(['a', 'b', 'c'], [30, 200], false);
    const tokens = stream(
      { url: URL_CHAT, body: BODY },
      { fetch: sourceOf(reads, new Error('reset')).fetch },
    );
    const texts: string[] = [];
    for await (const batch of tokens.batches())
      for (const e of batch) if (e.type === 'text') texts.push(e.text);
    assert.deepEqual(texts, ['a', 'b', 'c']);
    const result = await tokens.result;
    assert.equal(result.complete, false);
    assert.equal(result.text, 'abc');
  });

  it('throws IncompleteStreamError after the last batch with throwOnIncomplete', async () => {
    const reads = bodyOf(['a', 'b'], [40], false);
    const tokens = stream(
      { url: URL_CHAT, body: BODY },
      { fetch: sourceOf(reads, new Error('reset')).fetch, throwOnIncomplete: true },
    );
    const texts: string[] = [];
    await assert.rejects(async () => {
      for await (const batch of tokens.batches())
        for (const e of batch) if (e.type === 'text') texts.push(e.text);
    }, IncompleteStreamError);
    assert.deepEqual(texts, ['a', 'b']);
  });

  it('can be iterated once, and not together with the event iterator', () => {
    const a = stream({ url: URL_CHAT, body: BODY }, { fetch: sourceOf(bodyOf(['x'])).fetch });
    a.batches();
    assert.throws(() => a.batches(), TypeError);
    assert.throws(() => a[Symbol.asyncIterator](), TypeError);
    const b = stream({ url: URL_CHAT, body: BODY }, { fetch: sourceOf(bodyOf(['x'])).fetch });
    b[Symbol.asyncIterator]();
    assert.throws(() => b.batches(), TypeError);
    return Promise.all([a.result, b.result]).then(() => {});
  });

  it('answers next() calls made before earlier ones settled in call order, losing none', async () => {
    const reads = bodyOf(['a', 'b', 'c', 'd'], [1, 90, 91, 300]);
    const tokens = stream({ url: URL_CHAT, body: BODY }, { fetch: sourceOf(reads).fetch });
    const batches = tokens.batches();
    const calls = await Promise.all(Array.from({ length: 12 }, () => batches.next()));
    const events = calls.flatMap((c) => (c.done === true ? [] : [...c.value]));
    const firstDone = calls.findIndex((c) => c.done === true);
    assert.ok(firstDone > 0 && calls.slice(firstDone).every((c) => c.done === true));
    assert.deepEqual(
      events.filter((e) => e.type === 'text').map((e) => (e.type === 'text' ? e.text : '')),
      ['a', 'b', 'c', 'd'],
    );
  });
});

describe('stream() event iterator', () => {
  it('answers next() calls made before earlier ones settled in call order, losing none', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.string({ maxLength: 4 }), { maxLength: 20 }),
        fc.array(fc.nat({ max: 1500 }), { maxLength: 20 }),
        fc.array(fc.integer({ min: 1, max: 6 }), { minLength: 1, maxLength: 30 }),
        async (pieces, cuts, bursts) => {
          const expected = await eventsByIterator(sourceOf(bodyOf(pieces, cuts)));
          const iterator = stream(
            { url: URL_CHAT, body: BODY },
            { fetch: sourceOf(bodyOf(pieces, cuts)).fetch },
          )[Symbol.asyncIterator]();
          // Bursts of calls without awaiting, some continuing from inside a settled call's callback.
          const got: StreamEvent[] = [];
          let done = false;
          for (let b = 0; !done; b = (b + 1) % bursts.length) {
            const calls: Promise<IteratorResult<StreamEvent>>[] = [];
            for (let i = 0; i < bursts[b]!; i++) calls.push(iterator.next());
            let inner: Promise<IteratorResult<StreamEvent>> | undefined;
            calls[0]!.then(() => {
              inner = iterator.next();
            });
            const settled = await Promise.all(calls);
            await turn();
            const all = inner === undefined ? settled : [...settled, await inner];
            for (const r of all) {
              if (r.done === true) done = true;
              else {
                assert.equal(done, false, 'no event after the end');
                got.push(r.value);
              }
            }
          }
          assert.deepEqual(got, expected);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('return() stops the stream; later next() calls are done', async () => {
    const source = longSource();
    const tokens = stream({ url: URL_CHAT, body: BODY }, { fetch: source.fetch });
    const iterator = tokens[Symbol.asyncIterator]();
    assert.equal((await iterator.next()).done, false);
    assert.deepEqual(await iterator.return!(), { value: undefined, done: true });
    assert.equal((await iterator.next()).done, true);
    assert.equal((await tokens.result).incomplete, 'aborted');
    assert.ok(source.cancelled());
  });

  it('breaking out while reading is paused for the consumer ends the run (aborted)', async () => {
    const source = longSource();
    const tokens = stream({ url: URL_CHAT, body: BODY }, { fetch: source.fetch });
    let seen = 0;
    for await (const _event of tokens) {
      seen += 1;
      if (seen === 1) for (let i = 0; i < 20; i++) await turn();
      if (seen === 150) break;
    }
    const result = await tokens.result;
    assert.equal(result.incomplete, 'aborted');
    assert.ok(source.cancelled());
  });

  it('abort() while reading is paused for the consumer ends the run (aborted)', async () => {
    const source = longSource();
    const tokens = stream({ url: URL_CHAT, body: BODY }, { fetch: source.fetch });
    const iterator = tokens[Symbol.asyncIterator]();
    assert.equal((await iterator.next()).done, false);
    for (let i = 0; i < 20; i++) await turn();
    const pulled = source.pulls();
    tokens.abort();
    const result = await tokens.result;
    assert.equal(result.incomplete, 'aborted');
    assert.ok(source.pulls() <= pulled + 1);
  });
});
