import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { complete, stream } from '../../src/client/token-stream.ts';
import type { StreamEvent } from '../../src/events/stream-event.ts';

const URL_CHAT = 'http://local.invalid/api/chat';
const BODY = { model: 'm', messages: [] };
const encoder = new TextEncoder();

function line(content: string, done = false): string {
  const tail = done ? ',"done":true,"done_reason":"stop"' : ',"done":false';
  return `{"model":"m","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":${JSON.stringify(content)}}${tail}}\n`;
}

/** A fetch answering an Ollama /api/chat body of these pieces, cut into reads at `cuts`, one read per pull. */
function fetchOf(pieces: readonly string[], cuts: readonly number[] = [], finish = true) {
  const bytes = encoder.encode(pieces.map((p) => line(p)).join('') + (finish ? line('', true) : ''));
  const points = [...new Set(cuts.map((c) => Math.max(0, Math.min(bytes.length, c))))].sort((a, b) => a - b);
  const reads: Uint8Array[] = [];
  let previous = 0;
  for (const point of [...points, bytes.length]) {
    if (point > previous) reads.push(bytes.slice(previous, point));
    previous = point;
  }
  const state = { pulls: 0, cancelled: false };
  const fetch = async () =>
    new Response(
      new ReadableStream<Uint8Array>(
        {
          pull(controller) {
            if (state.pulls === reads.length) return controller.close();
            controller.enqueue(reads[state.pulls]!);
            state.pulls += 1;
          },
          cancel() {
            state.cancelled = true;
          },
        },
        { highWaterMark: 0 },
      ),
      { headers: { 'content-type': 'application/x-ndjson' } },
    );
  return { fetch, state, reads: reads.length };
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
    assert.equal(source.state.cancelled, true, 'the body is cancelled, so the server sees the close');
    assert.ok(source.state.pulls < source.reads, `read ${source.state.pulls} of ${source.reads} reads`);
  });
});
