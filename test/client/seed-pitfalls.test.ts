import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { complete, stream } from '../../src/client/token-stream.ts';
import type { StreamEvent } from '../../src/events/stream-event.ts';
import { bytewise, utf8 } from '../helpers/chunks.ts';

/**
 * The client pitfalls the seed documents name (000: six rules; 001: failure modes; 004: pitfalls), one
 * test each, in-process: a fetch that answers with exactly the reads given.
 */
function fetchOf(reads: (string | Uint8Array)[], contentType = 'text/event-stream', delayMs = 0) {
  return async (_request: Request): Promise<Response> => {
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        for (const read of reads) {
          if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
          controller.enqueue(typeof read === 'string' ? utf8(read) : read);
        }
        controller.close();
      },
    });
    return new Response(body, { headers: { 'content-type': contentType } });
  };
}

const url = 'http://server.test/v1/chat/completions';
const body = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };
const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
  `data: ${JSON.stringify({ object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
const ok = [
  chunk({ role: 'assistant', content: '' }),
  chunk({ content: 'Reykjav' }),
  chunk({ content: 'ík' }),
  chunk({}, 'stop'),
  'data: [DONE]\n\n',
];

describe('seed 000: the six rules of a client that survives all four servers', () => {
  it('1. buffers by delimiter, not by read: one byte per read decodes the same', async () => {
    const bytes = utf8(ok.join(''));
    const result = await complete({ url, body }, { fetch: fetchOf(bytewise(bytes)) });
    assert.equal(result.text, 'Reykjavík');
    assert.equal(result.complete, true);
  });

  it('2. handles the [DONE] sentinel before parsing JSON', async () => {
    const result = await complete({ url, body }, { fetch: fetchOf(ok) });
    assert.equal(result.error, undefined);
  });

  it('3. treats missing fields as absent: a role chunk without content, a finish chunk with an empty delta', async () => {
    const result = await complete(
      { url, body },
      { fetch: fetchOf([chunk({ role: 'assistant' }), chunk({ content: 'x' }), chunk({}, 'stop')]) },
    );
    assert.equal(result.text, 'x');
    assert.equal(result.complete, true);
  });

  it('4. decodes text statefully: a character split across reads is not replaced by U+FFFD', async () => {
    const bytes = utf8(ok.join(''));
    const at = bytes.indexOf(0xc3); // the first byte of "í"
    const result = await complete(
      { url, body },
      { fetch: fetchOf([bytes.slice(0, at + 1), bytes.slice(at + 1)]) },
    );
    assert.equal(result.text, 'Reykjavík');
  });

  it('5. has a read timeout ("no event for N ms") that keepalive comments do not reset', async () => {
    // Comments every 80 ms for half a second: if they counted as events, the idle timeout would never fire.
    const reads = [chunk({ content: 'a' }), ':\n\n', ': ping\n\n', ':\n\n', ':\n\n', ':\n\n', ':\n\n'];
    const result = await complete(
      { url, body },
      { fetch: fetchOf(reads, 'text/event-stream', 80), timeouts: { idleMs: 250 } },
    );
    assert.equal(result.text, 'a');
    assert.equal(result.incomplete, 'idle-timeout');
    assert.ok(result.metrics.keepaliveCount >= 1);
  });

  it('6. marks a mid-stream failure incomplete, keeping the partial text — never finished', async () => {
    const result = await complete({ url, body }, { fetch: fetchOf(ok.slice(0, 2)) });
    assert.equal(result.complete, false);
    assert.equal(result.incomplete, 'connection-closed');
    assert.equal(result.text, 'Reykjav');
  });

  it('reads the terminal event: length is a truncation, not a finished answer', async () => {
    const result = await complete(
      { url, body },
      { fetch: fetchOf([chunk({ content: 'cut' }), chunk({}, 'length'), 'data: [DONE]\n\n']) },
    );
    assert.equal(result.truncated, true);
  });

  it('handles the usage chunk with empty choices (include_usage)', async () => {
    const usage = `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } })}\n\n`;
    const result = await complete(
      { url, body },
      { fetch: fetchOf([...ok.slice(0, 4), usage, 'data: [DONE]\n\n']) },
    );
    assert.equal(result.usage?.outputTokens, 2);
  });

  it('accumulates tool-call argument fragments by index and parses them once, at the end', async () => {
    const reads = [
      chunk({
        tool_calls: [{ index: 0, id: 'c1', type: 'function', function: { name: 'f', arguments: '{"ci' } }],
      }),
      chunk({
        tool_calls: [{ index: 1, id: 'c2', type: 'function', function: { name: 'g', arguments: '{}' } }],
      }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: 'ty":"Oslo"}' } }] }),
      chunk({}, 'tool_calls'),
    ];
    const result = await complete({ url, body }, { fetch: fetchOf(reads) });
    assert.deepEqual(
      result.toolCalls.map((c) => [c.index, c.name, c.input]),
      [
        [0, 'f', { city: 'Oslo' }],
        [1, 'g', {}],
      ],
    );
  });

  it("reading Ollama's NDJSON with an SSE client is said at once, not a silent hang", async () => {
    const line =
      '{"model":"m","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":"Hi"},"done":false}\n';
    const result = await complete({ url, body }, { fetch: fetchOf([line], 'application/x-ndjson') });
    assert.equal(result.error?.code, 'wrong-framing');
  });
});

describe('seed 001: failure modes', () => {
  it('accepts data: with and without the space after the colon', async () => {
    const reads = ok.map((r) => r.replace('data: ', 'data:'));
    assert.equal((await complete({ url, body }, { fetch: fetchOf(reads) })).text, 'Reykjavík');
  });

  it('accumulates an event cut mid-JSON across reads until it is whole', async () => {
    const text = ok.join('');
    const cut = text.indexOf('Reykjav') + 3;
    assert.equal(
      (await complete({ url, body }, { fetch: fetchOf([text.slice(0, cut), text.slice(cut)]) })).text,
      'Reykjavík',
    );
  });

  it('passes on only the new part when a server repeats the whole text (overlapping chunks)', async () => {
    const reads = [
      chunk({ content: 'Quantum' }),
      chunk({ content: 'Quantum entanglement' }),
      chunk({}, 'stop'),
    ];
    assert.equal((await complete({ url, body }, { fetch: fetchOf(reads) })).text, 'Quantum entanglement');
  });
});

describe('seed 004: pitfalls', () => {
  it('does not count chunks as tokens: the server count wins, an estimate is flagged as one', async () => {
    const estimated = await complete({ url, body }, { fetch: fetchOf(ok) });
    assert.equal(estimated.metrics.outputTokensEstimated, true);
    const usage = `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 7, total_tokens: 10 } })}\n\n`;
    const counted = await complete({ url, body }, { fetch: fetchOf([...ok.slice(0, 4), usage]) });
    assert.equal(counted.metrics.outputTokens, 7);
    assert.equal(counted.metrics.outputTokensEstimated, false);
  });

  it('carries cancellation all the way down: the abort reaches the request the server sees', async () => {
    let seen: AbortSignal | undefined;
    const slow = async (request: Request) => {
      seen = request.signal;
      return fetchOf(
        Array.from({ length: 50 }, (_, i) => chunk({ content: `${i} ` })),
        'text/event-stream',
        20,
      )(request);
    };
    const controller = new AbortController();
    const tokens = stream({ url, body }, { fetch: slow, signal: controller.signal });
    const events: StreamEvent[] = [];
    for await (const event of tokens) {
      events.push(event);
      if (events.length === 3) controller.abort();
    }
    assert.equal(seen?.aborted, true);
    assert.equal((await tokens.result).incomplete, 'aborted');
  });

  it('treats partial text as partial: an incomplete Result is never complete, whatever it holds', async () => {
    const result = await complete({ url, body }, { fetch: fetchOf([chunk({ content: 'The answer is ' })]) });
    assert.equal(result.complete, false);
    assert.equal(result.finishReason, undefined);
  });
});
