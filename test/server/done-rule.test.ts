import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runStream } from '../../src/client/run-stream.ts';
import { createGateway } from '../../src/server/create-gateway.ts';

/*
 * The rule (README, "What goes wrong"): an OpenAI-style stream is complete when every choice's
 * `finish_reason` arrived (or `[DONE]` did); `[DONE]` alone is optional, as wire-formats.md says
 * (llama.cpp and Ollama's OpenAI layer omit it in cases). The client library and the gateway apply the
 * same rule to the same bytes: a stream closed after its finish_reason without `[DONE]` is complete for
 * both; one closed before it is incomplete for both, and the gateway ends its client's stream with the
 * dialect's error.
 */
const chunk = (delta: string, finish: string | null) =>
  `data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":${delta},"finish_reason":${finish === null ? 'null' : JSON.stringify(finish)}}]}\n\n`;
const FINISHED_NO_DONE = chunk('{"role":"assistant","content":"Hi"}', null) + chunk('{}', 'stop');
const CUT = chunk('{"role":"assistant","content":"Hi"}', null);

const upstreamOf = (bytes: string) => async () =>
  new Response(bytes, { headers: { 'content-type': 'text/event-stream' } });
const REQUEST = { model: 'm', messages: [{ role: 'user' as const, content: 'hi' }] };

async function bothSides(bytes: string) {
  const fetch = upstreamOf(bytes);
  const direct = await runStream(
    { url: 'http://up.test/v1/chat/completions', dialect: 'openai-chat', request: REQUEST },
    { fetch },
  );
  const gateway = createGateway({
    upstreams: [{ name: 'up', url: 'http://up.test', dialects: ['openai-chat'], fetch }],
  });
  try {
    const response = await gateway.fetch(
      new Request('http://gw.test/v1/chat/completions', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', stream: true, messages: REQUEST.messages }),
      }),
    );
    const relayed = await response.text();
    const viaGateway = await runStream(
      { url: 'http://gw.test/v1/chat/completions', dialect: 'openai-chat', request: REQUEST },
      { fetch: async () => new Response(relayed, { headers: { 'content-type': 'text/event-stream' } }) },
    );
    return { direct, viaGateway, relayed };
  } finally {
    await gateway.close();
  }
}

describe('OpenAI streams without [DONE]: one rule for the client and the gateway', () => {
  it('closed after its finish_reason: complete for both, and the gateway adds no error', async () => {
    const { direct, viaGateway, relayed } = await bothSides(FINISHED_NO_DONE);
    assert.equal(direct.complete, true);
    assert.equal(direct.finishReason, 'stop');
    assert.equal(viaGateway.complete, true);
    assert.equal(viaGateway.text, 'Hi');
    assert.ok(!relayed.includes('"error"'), relayed);
  });

  it('closed before any finish_reason: incomplete for both, and the gateway ends with the error', async () => {
    const { direct, viaGateway, relayed } = await bothSides(CUT);
    assert.equal(direct.complete, false);
    assert.equal(direct.incomplete, 'connection-closed');
    assert.equal(viaGateway.complete, false);
    assert.equal(viaGateway.text, 'Hi');
    assert.match(relayed, /data: \{"error":/);
  });
});
