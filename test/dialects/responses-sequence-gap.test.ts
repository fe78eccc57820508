import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { complete } from '../../src/client/token-stream.ts';
import { openAiResponses } from '../../src/dialects/openai-responses/index.ts';
import { serve } from '../../src/node/serve.ts';
import { createGateway } from '../../src/server/create-gateway.ts';
import { decodeChunks } from '../helpers/decode.ts';
import { readFixture } from '../helpers/paths.ts';
import { scriptServer } from '../helpers/script-server.ts';

// The fixture loses event 4, the first text delta ("Hello"); its terminal event says completed.
const GAP = 'wire-examples/openai-responses-sequence-gap.sse';

describe('a Responses stream with a sequence_number gap', () => {
  it('is incomplete (malformed), names the gap, and keeps the text that arrived', async () => {
    const upstream = await scriptServer({
      headers: { 'content-type': 'text/event-stream' },
      steps: [{ write: readFixture(GAP) }],
    });
    try {
      const result = await complete({
        url: `${upstream.url}/v1/responses`,
        body: { model: 'x', input: 'hi' },
      });
      assert.equal(result.complete, false);
      assert.equal(result.incomplete, 'malformed');
      assert.equal(result.error?.code, 'malformed-payload');
      assert.match(
        result.error?.message ?? '',
        /sequence_number 5 after 3 \(expected 4\): an event was lost/,
      );
      assert.equal(result.text, ' world');
      assert.equal(result.finishReason, undefined);

      // Through the gateway (a Responses upstream, re-encoded): the client is told too, never "completed".
      const gateway = createGateway({
        upstreams: [{ name: 'gap', url: upstream.url, dialects: ['openai-responses'], models: ['x'] }],
      });
      const served = await serve(gateway.fetch);
      try {
        const relayed = await complete({
          url: `${served.url}/v1/responses`,
          body: { model: 'x', input: 'hi' },
        });
        assert.equal(relayed.complete, false);
        assert.equal(relayed.text, ' world');
        assert.match(relayed.error?.message ?? '', /sequence_number 5 after 3/);
      } finally {
        await gateway.close();
        await served.close();
      }
    } finally {
      await upstream.close();
    }
  });

  it('the decoder throws at the terminal event, not before: every event up to it is read', () => {
    assert.throws(
      () => decodeChunks(openAiResponses, [readFixture(GAP)]),
      (error: Error) =>
        /sequence_number 5 after 3.*response\.completed not taken as its end/.test(error.message),
    );
  });
});
