import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { HttpError } from '../../src/client/client-errors.ts';
import { complete } from '../../src/client/token-stream.ts';
import { openAiChat } from '../../src/dialects/openai-chat/index.ts';
import { createUndiciFetch } from '../../src/node/undici-fetch.ts';
import { decodeChunks } from '../helpers/decode.ts';
import { startGateway, type TestGateway } from '../helpers/gateway.ts';
import { readSse } from '../helpers/sse-read.ts';

const gateways: TestGateway[] = [];
after(() => Promise.all(gateways.map((g) => g.close())));
async function gatewayWith(...args: Parameters<typeof startGateway>): Promise<TestGateway> {
  const g = await startGateway(...args);
  gateways.push(g);
  return g;
}

const chat = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    model: 'sim',
    stream: true,
    messages: [{ role: 'user', content: 'hello there' }],
    max_tokens: 30,
    ...extra,
  });
const post = (url: string, body: string, headers: Record<string, string> = {}) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });

function metricValue(text: string, name: string, labels: Record<string, string>): number {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`)))
      return Number(line.split(' ').pop());
  }
  return 0;
}

describe('gateway', () => {
  it('answers a malformed request with a 4xx JSON error in the dialect shape, before any streaming', async () => {
    const g = await gatewayWith();
    const cases: [string, string, number, (body: unknown) => void][] = [
      [
        '/v1/chat/completions',
        '{not json',
        400,
        (b) => assert.match((b as { error: { message: string } }).error.message, /not valid JSON/),
      ],
      [
        '/v1/chat/completions',
        '{"messages":"hi"}',
        400,
        (b) => assert.match((b as { error: { message: string } }).error.message, /messages/),
      ],
      [
        '/api/chat',
        '{"model":"sim","messages":[{"role":"wizard","content":"x"}]}',
        400,
        (b) => assert.match((b as { error: string }).error, /role/),
      ],
      [
        '/generate_stream',
        '{"inputs":"x","parameters":{"max_new_tokens":-3}}',
        400,
        (b) => assert.match((b as { error: string }).error, /max_new_tokens/),
      ],
      [
        '/completion',
        '{"prompt":7}',
        400,
        (b) => assert.match((b as { error: { message: string } }).error.message, /prompt/),
      ],
    ];
    for (const [path, body, status, check] of cases) {
      const response = await post(`${g.url}${path}`, body);
      assert.equal(response.status, status, path);
      assert.match(response.headers.get('content-type') ?? '', /application\/json/);
      check(await response.json());
    }
    const big = await post(
      `${g.url}/v1/chat/completions`,
      JSON.stringify({ messages: [{ role: 'user', content: 'x'.repeat(5 * 1024 * 1024) }] }),
    );
    assert.equal(big.status, 413);
  });

  it('sends headers that stop proxies from buffering, ids on every event, and retry', async () => {
    const g = await gatewayWith();
    const response = await post(`${g.url}/v1/chat/completions`, chat());
    assert.equal(response.headers.get('cache-control'), 'no-cache');
    assert.equal(response.headers.get('x-accel-buffering'), 'no');
    assert.equal(response.headers.get('content-encoding'), null);
    const raw = await readSse(response);
    assert.ok(raw.frames.length > 5);
    const streamId = response.headers.get('x-tokenwire-stream-id');
    raw.frames.forEach((frame, i) => {
      assert.equal(frame.id, `${streamId}.${i + 1}`);
    });
    assert.equal(raw.frames.at(-1)?.data, '[DONE]');
  });

  it('honours include_usage: the usage chunk only when asked, from the upstream counts', async () => {
    const g = await gatewayWith();
    const without = await readSse(await post(`${g.url}/v1/chat/completions`, chat()));
    assert.ok(!without.frames.some((f) => f.data.includes('"usage":{')));
    const withUsage = await readSse(
      await post(`${g.url}/v1/chat/completions`, chat({ stream_options: { include_usage: true } })),
    );
    const usage = withUsage.frames.find((f) => f.data.includes('"choices":[]'));
    assert.match(usage?.data ?? '', /"completion_tokens":30/);
  });

  it('writes keepalive comments while the upstream is silent, before the first token too', async () => {
    const g = await gatewayWith({
      gateway: { keepaliveMs: 50 },
      sim: { timing: { ttftMs: 400, tokensPerSecond: 2000 } },
    });
    const response = await post(`${g.url}/v1/chat/completions`, chat({ max_tokens: 3 }));
    const raw = await readSse(response);
    assert.ok(raw.comments.length >= 3, `keepalives: ${raw.comments.length}`);
    assert.equal(raw.frames.at(-1)?.data, '[DONE]');
  });

  it('resumes a cut stream from Last-Event-ID: exactly the missed events, nothing lost, nothing repeated', async () => {
    const g = await gatewayWith({
      gateway: { keepStreamOnDisconnect: true },
      sim: { timing: { tokensPerSecond: 200 } },
    });
    const reference = decodeChunks(openAiChat, [
      new TextEncoder().encode(await (await post(`${g.url}/v1/chat/completions`, chat())).text()),
    ]);
    const first = await readSse(
      await post(`${g.url}/v1/chat/completions`, chat()),
      (frames) => frames.length >= 6,
    );
    // One read may carry several frames (a loaded machine): resume after the last one received.
    assert.ok(first.frames.length >= 6);
    const lastId = first.frames.at(-1)!.id!;
    const resumed = await readSse(
      await post(`${g.url}/v1/chat/completions`, chat(), { 'last-event-id': lastId }),
    );
    const all = [...first.frames, ...resumed.frames];
    const seqs = all.map((f) => Number(f.id!.split('.')[1]));
    assert.deepEqual(
      seqs,
      seqs.map((_, i) => i + 1),
      'ids contiguous: nothing lost, nothing repeated',
    );
    const decoded = decodeChunks(openAiChat, [
      new TextEncoder().encode(all.map((f) => `data: ${f.data}\n\n`).join('')),
    ]);
    assert.equal(decoded.complete, true);
    const text = (events: typeof decoded.events) =>
      events.map((e) => (e.type === 'text' ? e.text : '')).join('');
    assert.equal(text(decoded.events), text(reference.events));
    // A GET with the header works too (EventSource reconnects with GET).
    const again = await readSse(
      await fetch(`${g.url}/v1/chat/completions`, { headers: { 'last-event-id': lastId } }),
    );
    assert.equal(again.frames.length, resumed.frames.length);
  });

  it('refuses to resume an unknown stream or a malformed id, in the dialect shape', async () => {
    const g = await gatewayWith();
    const unknown = await post(`${g.url}/v1/chat/completions`, chat(), { 'last-event-id': 'deadbeef.3' });
    assert.equal(unknown.status, 404);
    const bad = await post(`${g.url}/v1/chat/completions`, chat(), { 'last-event-id': 'nope' });
    assert.equal(bad.status, 400);
  });

  for (const [how, extra] of [
    ['the global fetch', {}],
    [
      'the undici fetch, upstream timeouts set',
      { upstreamFetch: createUndiciFetch(), upstreamTimeouts: { connectMs: 5000, idleMs: 5000 } },
    ],
  ] as const)
    it(`aborts the upstream (over HTTP, ${how}) when the client leaves, and counts the cancelled tokens`, async () => {
      const g = await gatewayWith({ simOverHttp: true, sim: { timing: { tokensPerSecond: 100 } }, ...extra });
      const controller = new AbortController();
      const response = await fetch(`${g.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: chat({ max_tokens: 2000 }),
        signal: controller.signal,
      });
      const reader = response.body!.getReader();
      let received = 0;
      while (received < 10) {
        const next = await reader.read();
        if (next.done) break;
        received += 1;
      }
      controller.abort();
      await g.sim.idle();
      const record = g.sim.stats.log.at(-1)!;
      // The upstream generation stopped early (2000 tokens at 100 a second would take 20 s); how soon after
      // the client left is measured in `npm run bench`, not here.
      assert.equal(record.outcome, 'cancelled');
      assert.ok(record.outputTokens > 0 && record.outputTokens < 2000);
      // Give the relay a moment to account for the stream.
      for (let i = 0; i < 50 && g.gateway.activeStreams() > 0; i++)
        await new Promise((r) => setTimeout(r, 10));
      const metrics = await (await fetch(`${g.url}/metrics`)).text();
      assert.equal(
        metricValue(metrics, 'tokenwire_streams_total', { outcome: 'cancelled', route: 'openai-chat' }),
        1,
      );
      assert.ok(metricValue(metrics, 'tokenwire_output_tokens_total', { route: 'openai-chat' }) > 0);
    });

  it('passes an upstream HTTP error before the stream on as that status, in the dialect shape', async () => {
    const g = await gatewayWith();
    const response = await post(`${g.url}/v1/chat/completions`, chat(), {
      'x-tokenwire-fault': 'status=429',
    });
    assert.equal(response.status, 429);
    const body = (await response.json()) as { error: { message: string } };
    assert.match(body.error.message, /429/);
    await assert.rejects(
      complete({
        url: `${g.url}/api/chat`,
        body: { model: 'sim', messages: [{ role: 'user', content: 'x' }] },
        headers: { 'x-tokenwire-fault': 'status=503' },
      }),
      (error: unknown) => error instanceof HttpError && error.status === 503 && /503/.test(error.message),
    );
  });

  it('ends a stream whose upstream fails mid-way with the dialect error shape, never as complete', async () => {
    const g = await gatewayWith();
    for (const fault of ['cut-after=5', 'error-after=5']) {
      const result = await complete({ url: `${g.url}/v1/chat/completions`, body: JSON.parse(chat()) }, {});
      assert.equal(result.complete, true);
      const cut = await complete({
        url: `${g.url}/v1/chat/completions`,
        body: JSON.parse(chat()),
        headers: { 'x-tokenwire-fault': fault },
      });
      assert.equal(cut.complete, false, fault);
      assert.equal(cut.incomplete, 'server-error', fault);
      assert.ok(cut.text.length > 0, fault);
    }
  });

  it('shuts down gracefully: in-flight streams end with an error event, not a silent close', async () => {
    const g = await startGateway({ sim: { timing: { tokensPerSecond: 50 } } });
    const pending = complete({
      url: `${g.url}/v1/chat/completions`,
      body: JSON.parse(chat({ max_tokens: 200 })),
    });
    await new Promise((r) => setTimeout(r, 150));
    await g.close();
    const result = await pending;
    assert.equal(result.complete, false);
    assert.equal(result.incomplete, 'server-error');
    assert.match(result.error!.message, /shutting down/);
  });

  it('coalesces text by delimiter when asked, and by default writes one event per token', async () => {
    const plain = await gatewayWith();
    const perToken = await readSse(await post(`${plain.url}/v1/chat/completions`, chat({ max_tokens: 60 })));
    const coalesced = await gatewayWith({ gateway: { flush: { delimiter: ' ' } } });
    const merged = await readSse(
      await post(`${coalesced.url}/v1/chat/completions`, chat({ max_tokens: 60 })),
    );
    const texts = (frames: typeof merged.frames) =>
      frames.flatMap((f) => {
        try {
          const content = (JSON.parse(f.data) as { choices?: { delta?: { content?: string } }[] })
            .choices?.[0]?.delta?.content;
          return content ? [content] : [];
        } catch {
          return [];
        }
      });
    assert.equal(texts(perToken.frames).join(''), texts(merged.frames).join(''));
    assert.ok(texts(merged.frames).length < texts(perToken.frames).length);
    // Every merged piece but the last ends at the delimiter.
    for (const piece of texts(merged.frames).slice(0, -1))
      assert.ok(piece.endsWith(' '), JSON.stringify(piece));
  });

  it('lists models for SDKs and reports health', async () => {
    const g = await gatewayWith();
    const models = (await (await fetch(`${g.url}/v1/models`)).json()) as { data: { id: string }[] };
    assert.deepEqual(
      models.data.map((m) => m.id),
      ['sim'],
    );
    const tags = (await (await fetch(`${g.url}/api/tags`)).json()) as { models: { name: string }[] };
    assert.deepEqual(
      tags.models.map((m) => m.name),
      ['sim'],
    );
    assert.equal((await fetch(`${g.url}/healthz`)).status, 200);
  });
});
