import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setImmediate as turn } from 'node:timers/promises';
import { stream } from '../../src/client/token-stream.ts';

const READS = 60;
const LINES_PER_READ = 100;

function line(content: string, done = false): string {
  const tail = done ? ',"done":true,"done_reason":"stop"' : ',"done":false';
  return `{"model":"m","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":${JSON.stringify(content)}}${tail}}\n`;
}

/** An Ollama /api/chat body of READS reads of LINES_PER_READ text lines, counting the reads pulled. */
function countingFetch(): { fetch: () => Promise<Response>; pulls: () => number } {
  let pulls = 0;
  const encoder = new TextEncoder();
  const fetch = async () =>
    new Response(
      new ReadableStream<Uint8Array>(
        {
          pull(controller) {
            if (pulls === READS) {
              controller.enqueue(encoder.encode(line('', true)));
              controller.close();
              return;
            }
            let text = '';
            for (let i = 0; i < LINES_PER_READ; i++) text += line(`t${pulls * LINES_PER_READ + i} `);
            pulls += 1;
            controller.enqueue(encoder.encode(text));
          },
        },
        { highWaterMark: 0 },
      ),
      { headers: { 'content-type': 'application/x-ndjson' } },
    );
  return { fetch, pulls: () => pulls };
}

describe('stream() iterator', () => {
  it('stops reading while a consumer lets events queue up, then delivers every event in order', async () => {
    const source = countingFetch();
    const events = stream(
      { url: 'http://local.invalid/api/chat', body: { model: 'm', messages: [] } },
      { fetch: source.fetch },
    );
    const iterator = events[Symbol.asyncIterator]();
    const first = iterator.next();
    // next() keeps the AsyncIterator contract: a promise, also when an event is already queued.
    assert.ok(first instanceof Promise);
    const head = await first;
    assert.equal(head.done, false);
    // The consumer stops taking events: reading must pause long before the body's end.
    for (let i = 0; i < 50; i++) await turn();
    const pulledWhilePaused = source.pulls();
    assert.ok(
      pulledWhilePaused < READS / 2,
      `read ${pulledWhilePaused} of ${READS} reads ahead of the consumer`,
    );
    let texts = 0;
    let expected = 0;
    let inOrder = true;
    const take = (value: { type: string; text?: string }) => {
      if (value.type !== 'text') return;
      if (value.text !== `t${expected} `) inOrder = false;
      expected += 1;
      texts += 1;
    };
    take(head.value);
    for (;;) {
      const next = iterator.next();
      assert.ok(next instanceof Promise);
      const { value, done } = await next;
      if (done === true) break;
      take(value);
    }
    assert.ok(inOrder);
    assert.equal(texts, READS * LINES_PER_READ);
    assert.equal(source.pulls(), READS);
    const result = await events.result;
    assert.equal(result.complete, true);
    assert.equal(
      result.text.length,
      [...Array(READS * LINES_PER_READ).keys()].map((i) => `t${i} `).join('').length,
    );
  });
});
