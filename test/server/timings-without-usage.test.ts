import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import { serve } from '../../src/node/serve.ts';
import { createGateway } from '../../src/server/create-gateway.ts';
import { fixturePath } from '../helpers/paths.ts';
import { scriptServer } from '../helpers/script-server.ts';

/**
 * The gateway asks an OpenAI-chat upstream for usage itself; llama-server then writes its `timings` on the
 * usage chunk, not the finish chunk. A client that did not ask for usage gets that chunk less its usage,
 * so the server's timings still reach it (real capture c02, llama-server b10108).
 */
describe('a client that did not ask for usage, in front of llama-server', () => {
  const capture = readFileSync(
    fixturePath('real-captures/llamacpp-b10108/c02-chat-stream-include-usage.sse'),
  );
  const closers: (() => Promise<void>)[] = [];
  after(async () => {
    for (const close of closers) await close();
  });

  it("still gets the server's timings, without the usage it did not ask for", async () => {
    const upstream = await scriptServer({
      headers: { 'content-type': 'text/event-stream' },
      steps: [{ write: capture }],
    });
    closers.push(() => upstream.close());
    const gateway = createGateway({
      upstreams: [{ name: 'llama', url: upstream.url, dialects: ['openai-chat'] }],
    });
    const served = await serve(gateway.fetch);
    closers.push(async () => {
      await gateway.close();
      await served.close();
    });
    const response = await fetch(`${served.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'x', stream: true, messages: [{ role: 'user', content: 'hello' }] }),
    });
    const text = await response.text();
    const payloads = text
      .split('\n')
      .filter((line) => line.startsWith('data: {'))
      .map((line) => JSON.parse(line.slice(6)) as Record<string, unknown>);
    assert.ok(
      JSON.parse(upstream.requests[0]!.body).stream_options.include_usage,
      'the gateway asked for usage',
    );
    assert.ok(
      payloads.some((p) => p.timings !== undefined),
      "the server's timings arrive",
    );
    assert.ok(
      payloads.every((p) => p.usage === undefined),
      'no usage the client did not ask for',
    );
    assert.match(text, /data: \[DONE\]/);
  });
});
