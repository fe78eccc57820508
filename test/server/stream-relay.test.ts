import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Dialect } from '../../src/dialects/dialect.ts';
import { DIALECTS } from '../../src/dialects/registry.ts';
import type { StreamEvent } from '../../src/events/stream-event.ts';
import { StreamRelay } from '../../src/server/relay/stream-relay.ts';
import { MemoryResumeStore } from '../../src/server/resume/memory-resume-store.ts';
import { resumedBody } from '../../src/server/resume/resumed-body.ts';

const EVENTS: StreamEvent[] = [
  { type: 'start', id: 'chatcmpl-1', model: 'm', created: 1767225600 },
  { type: 'text', text: 'Hello' },
  { type: 'text', text: ' wörld,\nline two\r\n東京 👩‍👩‍👧' },
  { type: 'text', text: ' "quoted" \\ \u2028' },
  { type: 'finish', reason: 'stop', raw: 'stop' },
  { type: 'usage', usage: { inputTokens: 7, outputTokens: 3 } },
];

/** What the relay writes for EVENTS (ending cleanly or with a mid-stream error), and its store. */
async function relayed(dialect: Dialect, flavor: string, ending: 'end' | 'fail') {
  const store = new MemoryResumeStore();
  const streamId = 'c0ffee00c0ffee00aa';
  await store.open(streamId, { dialect: dialect.id, flavor, headers: {}, model: 'm', createdAt: 0 });
  const relay = new StreamRelay({
    streamId,
    dialect,
    encoder: dialect.createEncoder({ flavor, includeUsage: true, model: 'm', created: 1767225600 }),
    store,
    now: () => 0,
    onCancel: () => {},
  });
  for (const event of EVENTS) relay.event(event);
  relay.flushEncoder();
  if (ending === 'end') relay.end();
  else relay.fail({ message: 'backend failed: CUDA out of memory', status: 500 });
  await store.close(streamId, ending === 'end' ? 'complete' : 'failed');
  return { store, streamId, wire: await new Response(relay.body).text() };
}

describe('StreamRelay and the resume store', () => {
  const sse = Object.values(DIALECTS).filter((d) => d.framing === 'sse');
  for (const dialect of sse) {
    for (const flavor of dialect.flavors) {
      for (const ending of ['end', 'fail'] as const) {
        it(`replays a ${dialect.id} (${flavor}) stream that ended with ${ending} byte for byte after any id`, async () => {
          const { store, streamId, wire } = await relayed(dialect, flavor, ending);
          // Every event is one block ending in a blank line (payloads are one line: FrameSink).
          const blocks = wire.split('\n\n').slice(0, -1);
          assert.ok(blocks.length >= 3, wire);
          for (let after = 0; after < blocks.length; after++) {
            const subscription = await store.subscribe(streamId, after, new AbortController().signal);
            assert.ok(subscription !== undefined);
            const text = await new Response(
              resumedBody(subscription, streamId, after, 1000, () => {}),
            ).text();
            assert.equal(
              text,
              `retry: 1000\n\n${blocks
                .slice(after)
                .map((b) => `${b}\n\n`)
                .join('')}`,
            );
          }
        });
      }
    }
  }
});
