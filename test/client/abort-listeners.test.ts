import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { describe, it } from 'node:test';
import { runStream } from '../../src/client/run-stream.ts';

const CHAT = { messages: [{ role: 'user' as const, content: 'hi' }], model: 'sim' };
const FINISH =
  'data: {"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n';

/** A fetch handler whose answers stay open until `release()`, so every stream is in flight at once. */
function heldUpstream() {
  const bodies: ReadableStreamDefaultController<Uint8Array>[] = [];
  let arrived = 0;
  let onArrive: () => void = () => {};
  const fetch = (_request: Request): Promise<Response> => {
    arrived += 1;
    onArrive();
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        bodies.push(controller);
      },
    });
    return Promise.resolve(new Response(body, { headers: { 'content-type': 'text/event-stream' } }));
  };
  return {
    fetch,
    /** Resolves once `n` requests have arrived and their bodies are open. */
    arrived: (n: number) =>
      new Promise<void>((resolve) => {
        onArrive = () => {
          if (arrived >= n) setTimeout(resolve, 0);
        };
        onArrive();
      }),
    release: () => {
      for (const controller of bodies) {
        controller.enqueue(new TextEncoder().encode(FINISH));
        controller.close();
      }
    },
  };
}

describe('runStream abort listeners', () => {
  it('adds no listener per stream to a signal the caller shares between many streams', async () => {
    const upstream = heldUpstream();
    const shared = new AbortController();
    const runs = Array.from({ length: 300 }, () =>
      runStream(
        { url: 'http://up.test/v1/chat/completions', dialect: 'openai-chat', request: CHAT },
        { fetch: upstream.fetch, signal: shared.signal },
      ),
    );
    await upstream.arrived(300);
    // Let every stream reach its body read.
    await new Promise((resolve) => setTimeout(resolve, 10));
    assert.ok(
      getEventListeners(shared.signal, 'abort').length <= 2,
      `${getEventListeners(shared.signal, 'abort').length} listeners with 300 streams in flight`,
    );
    upstream.release();
    const results = await Promise.all(runs);
    assert.equal(results.filter((result) => result.complete).length, 300);
  });

  it('still ends every stream when the shared signal aborts', async () => {
    const upstream = heldUpstream();
    const shared = new AbortController();
    const runs = Array.from({ length: 20 }, () =>
      runStream(
        { url: 'http://up.test/v1/chat/completions', dialect: 'openai-chat', request: CHAT },
        { fetch: upstream.fetch, signal: shared.signal },
      ),
    );
    await upstream.arrived(20);
    await new Promise((resolve) => setTimeout(resolve, 10));
    shared.abort();
    const results = await Promise.all(runs);
    assert.deepEqual(
      results.map((result) => result.incomplete),
      Array(20).fill('aborted'),
    );
  });

  it('warns of no listener leak with 1600 streams in flight and no signal at all', async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => {
      if (warning.name === 'MaxListenersExceededWarning') warnings.push(warning.message);
    };
    process.on('warning', onWarning);
    try {
      const upstream = heldUpstream();
      const runs = Array.from({ length: 1600 }, () =>
        runStream(
          { url: 'http://up.test/v1/chat/completions', dialect: 'openai-chat', request: CHAT },
          {
            fetch: upstream.fetch,
          },
        ),
      );
      await upstream.arrived(1600);
      await new Promise((resolve) => setTimeout(resolve, 10));
      upstream.release();
      const results = await Promise.all(runs);
      assert.equal(results.filter((result) => result.complete).length, 1600);
      // Warnings are emitted on the next tick.
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(warnings, []);
    } finally {
      process.off('warning', onWarning);
    }
  });
});
