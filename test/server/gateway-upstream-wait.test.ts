import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { complete } from '../../src/client/token-stream.ts';
import { type ServedHandler, serve } from '../../src/node/serve.ts';
import { createUndiciFetch } from '../../src/node/undici-fetch.ts';
import { createGateway, type Gateway } from '../../src/server/create-gateway.ts';
import { type ScriptedResponse, type ScriptServer, scriptServer } from '../helpers/script-server.ts';

// The gateway sends its upstream request before it builds the stream's relay, and builds the relay
// when the upstream answers (or when it stops waiting for that answer): these cover the moments
// around that, with a real HTTP upstream whose headers come late.

const chunk = (delta: string, finish: string | null = null) =>
  `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":${delta},"finish_reason":${finish === null ? 'null' : `"${finish}"`}}]}\n\n`;
const answer: ScriptedResponse['steps'] = [
  { write: chunk('{"role":"assistant","content":""}') },
  { write: chunk('{"content":"Hello"}') },
  { write: chunk('{"content":" world"}') },
  { write: chunk('{}', 'stop') },
  { write: 'data: [DONE]\n\n' },
];

const closers: (() => Promise<void>)[] = [];
after(() => Promise.all(closers.map((close) => close())));

async function gatewayBefore(
  upstream: ScriptServer,
  waitMs: number,
): Promise<{ url: string; gateway: Gateway; served: ServedHandler }> {
  const gateway = createGateway({
    upstreams: [
      {
        name: 'slow',
        url: upstream.url,
        dialects: ['openai-chat'],
        models: ['m'],
        fetch: createUndiciFetch(),
      },
    ],
    upstreamHeadersWaitMs: waitMs,
  });
  const served = await serve(gateway.fetch);
  closers.push(async () => {
    await gateway.close();
    await served.close();
    await upstream.close();
  });
  return { url: served.url, gateway, served };
}

const body = (extra: Record<string, unknown> = {}) => ({
  model: 'm',
  stream: true,
  messages: [{ role: 'user', content: 'say hello' }],
  ...extra,
});

describe('gateway: the upstream answers late', () => {
  it('answers the client when it stops waiting, then relays the stream once the upstream answers', async () => {
    const upstream = await scriptServer({ headersDelayMs: 300, steps: answer });
    const { url } = await gatewayBefore(upstream, 30);
    const result = await complete({
      url: `${url}/v1/chat/completions`,
      body: body({ stream_options: { include_prompt: true } }),
    });
    assert.equal(result.complete, true, result.error?.message);
    assert.equal(result.text, 'say helloHello world', 'the echoed prompt first, then the answer');
    assert.equal(result.finishReason, 'stop');
  });

  it('carries a client that leaves before the upstream answered to the upstream', async () => {
    const upstream = await scriptServer({ headersDelayMs: 5000, steps: answer });
    const { url } = await gatewayBefore(upstream, 1000);
    const leaving = new AbortController();
    const pending = fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body()),
      signal: leaving.signal,
    }).catch((error: unknown) => error);
    while (upstream.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    leaving.abort();
    await pending;
    await upstream.requests[0]!.closed;
    assert.ok(upstream.requests[0]!.closedEarlyAtMs !== undefined, 'the upstream connection was closed');
  });

  it('ends a stream still waiting for its upstream when the gateway shuts down', async () => {
    const upstream = await scriptServer({ headersDelayMs: 5000, steps: answer });
    const { url, gateway } = await gatewayBefore(upstream, 1000);
    const pending = fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body()),
    });
    while (upstream.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    await gateway.close();
    const response = await pending;
    assert.ok(response.status >= 500, `status ${response.status}`);
    await upstream.requests[0]!.closed;
    assert.equal(gateway.activeStreams(), 0);
  });
});
