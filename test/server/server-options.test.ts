import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { complete, stream } from '../../src/client/token-stream.ts';
import { DIALECT_IDS, type DialectId } from '../../src/dialects/dialect.ts';
import { getDialect } from '../../src/dialects/registry.ts';
import type { StreamEvent } from '../../src/events/stream-event.ts';
import { serve } from '../../src/node/serve.ts';
import { createGateway } from '../../src/server/create-gateway.ts';
import { createSim } from '../../src/sim/create-sim.ts';
import { decodeChunks } from '../helpers/decode.ts';
import { startGateway, type TestGateway } from '../helpers/gateway.ts';
import { readSse } from '../helpers/sse-read.ts';

const gateways: { close(): Promise<void> }[] = [];
after(() => Promise.all(gateways.map((g) => g.close())));
async function gatewayWith(...args: Parameters<typeof startGateway>): Promise<TestGateway> {
  const g = await startGateway(...args);
  gateways.push(g);
  return g;
}

const PROMPT = 'Say something about rivers';
const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
const chatBody = (extra: Record<string, unknown> = {}) => ({
  model: 'sim',
  stream: true,
  messages: [{ role: 'user', content: PROMPT }],
  max_tokens: 60,
  ...extra,
});

/** A streaming request for each dialect, capped at `max` tokens. */
function dialectRequest(dialect: DialectId, max: number): { path: string; body: Record<string, unknown> } {
  switch (dialect) {
    case 'openai-chat':
      return { path: '/v1/chat/completions', body: chatBody({ max_tokens: max }) };
    case 'openai-completions':
      return {
        path: '/v1/completions',
        body: { model: 'sim', stream: true, prompt: PROMPT, max_tokens: max },
      };
    case 'ollama-chat':
      return {
        path: '/api/chat',
        body: { model: 'sim', messages: [{ role: 'user', content: PROMPT }], options: { num_predict: max } },
      };
    case 'ollama-generate':
      return { path: '/api/generate', body: { model: 'sim', prompt: PROMPT, options: { num_predict: max } } };
    case 'llamacpp':
      return { path: '/completion', body: { prompt: PROMPT, n_predict: max, stream: true } };
    case 'tgi':
      return { path: '/generate_stream', body: { inputs: PROMPT, parameters: { max_new_tokens: max } } };
    case 'openai-responses':
      return {
        path: '/v1/responses',
        body: { model: 'sim', stream: true, input: PROMPT, max_output_tokens: max },
      };
    case 'anthropic-messages':
      return { path: '/v1/messages', body: chatBody({ max_tokens: max }) };
  }
}

/** The text events of an SSE chat stream, as the client decodes them. */
async function chatTexts(response: Response): Promise<string[]> {
  const bytes = new Uint8Array(await response.arrayBuffer());
  const decoded = decodeChunks(getDialect('openai-chat'), [bytes]);
  return decoded.events
    .filter((e): e is Extract<StreamEvent, { type: 'text' }> => e.type === 'text')
    .map((e) => e.text);
}

describe('plain-text output', () => {
  it('Accept: text/plain gets the raw answer, flushed as it arrives, and a last line saying how it finished', async () => {
    const g = await gatewayWith({ sim: { timing: { tokensPerSecond: 200, loadMs: 0 } } });
    const reference = await complete({
      url: `${g.url}/v1/chat/completions`,
      body: chatBody({ max_tokens: 400, stream_options: { include_usage: true } }),
    });
    assert.equal(reference.finishReason, 'stop');
    const response = await post(`${g.url}/v1/chat/completions`, chatBody({ max_tokens: 400 }), {
      accept: 'text/plain',
    });
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-type'), 'text/plain; charset=utf-8');
    assert.equal(response.headers.get('x-content-type-options'), 'nosniff');
    assert.match(response.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    let reads = 0;
    for (;;) {
      const next = await reader.read();
      if (next.done) break;
      reads += 1;
      text += decoder.decode(next.value, { stream: true });
    }
    assert.ok(reads >= 3, `the text came in ${reads} reads, not all at once`);
    const tokens = reference.usage?.outputTokens;
    const ending = `[tokenwire: finished (stop), ${tokens} tokens]\n`;
    assert.ok(text.endsWith(ending), JSON.stringify(text.slice(-80)));
    const answer = text.slice(0, -ending.length);
    assert.equal(answer.replace(/\n$/, ''), reference.text);
  });

  it('?format=text works on every route, and says truncated, incomplete and error', async () => {
    const g = await gatewayWith();
    for (const dialect of DIALECT_IDS) {
      const { path, body } = dialectRequest(dialect, 6);
      const text = await (await post(`${g.url}${path}?format=text`, body)).text();
      assert.match(text, /\n\[tokenwire: truncated \(length\), 6 tokens\]\n$/, `${dialect}: ${text}`);
    }
    const cut = await (
      await post(`${g.url}/v1/chat/completions?format=text`, chatBody({ model: 'sim@cut-after=5' }))
    ).text();
    assert.match(
      cut,
      /\n\[tokenwire: incomplete: connection-closed: the upstream failed: .*, ~\d+ tokens \(estimated\)\]\n$/,
    );
    const failed = await (
      await post(`${g.url}/api/generate?format=text`, { model: 'sim@error-after=3', prompt: PROMPT })
    ).text();
    assert.match(failed, /\n\[tokenwire: error: the upstream failed: .*\]\n$/);
    const refused = await post(
      `${g.url}/v1/chat/completions?format=text`,
      chatBody({ model: 'sim@status=503' }),
    );
    assert.equal(refused.status, 503);
    assert.equal(refused.headers.get('content-type'), 'text/plain; charset=utf-8');
    assert.match(await refused.text(), /^\[tokenwire: error: the upstream answered HTTP 503/);
  });

  it('keeps the dialect stream when text/plain is not the first choice, and refuses an unknown format', async () => {
    const g = await gatewayWith();
    const axios = await post(`${g.url}/v1/chat/completions`, chatBody(), {
      accept: 'application/json, text/plain, */*',
    });
    assert.match(axios.headers.get('content-type') ?? '', /text\/event-stream/);
    await axios.body?.cancel();
    const weighted = await post(`${g.url}/v1/chat/completions`, chatBody(), {
      accept: 'text/event-stream;q=0.5, text/plain',
    });
    assert.match(weighted.headers.get('content-type') ?? '', /text\/plain/);
    await weighted.body?.cancel();
    const bad = await post(`${g.url}/v1/chat/completions?format=xml`, chatBody());
    assert.equal(bad.status, 400);
    assert.match(((await bad.json()) as { error: { message: string } }).error.message, /format/);
  });
});

describe('stream_options.include_prompt', () => {
  for (const dialect of DIALECT_IDS) {
    it(`${dialect}: the prompt is the first content, in the dialect's shape, before the same answer`, async () => {
      const g = await gatewayWith();
      const { path, body } = dialectRequest(dialect, 12);
      const url = `${g.url}${path}`;
      // Usage in the stream (OpenAI routes send it only when asked), to count the model's tokens.
      const usage = dialect.startsWith('openai') ? { include_usage: true } : {};
      const plain = await complete({ url, dialect, body: { ...body, stream_options: usage } });
      const echoed: StreamEvent[] = [];
      const events = stream({
        url,
        dialect,
        body: { ...body, stream_options: { ...usage, include_prompt: true } },
      });
      for await (const event of events) echoed.push(event);
      const result = await events.result;
      assert.equal(result.complete, true);
      const firstText = echoed.find((e) => e.type === 'text');
      // (Responses text events also name their output item: only the text is compared.)
      assert.equal(firstText?.type === 'text' ? firstText.text : undefined, PROMPT);
      assert.equal(result.text, PROMPT + plain.text);
      // The echo is the gateway's, not the model's: the token count is the model's alone.
      assert.equal(result.usage?.outputTokens, 12);
    });
  }

  it("openai-chat: vLLM's echo shape, a content delta right after the role chunk", async () => {
    const g = await gatewayWith();
    const response = await post(
      `${g.url}/v1/chat/completions`,
      chatBody({ stream_options: { include_prompt: true } }),
    );
    const { frames } = await readSse(response);
    const deltas = frames
      .slice(0, 2)
      .map((f) => (JSON.parse(f.data) as { choices: { delta: unknown }[] }).choices[0]?.delta);
    assert.deepEqual(deltas, [{ role: 'assistant', content: '' }, { content: PROMPT }]);
  });
});

describe('per-request flush options (stream_options tokenwire extensions)', () => {
  it('tokenwire_flush_delimiter, tokenwire_flush_bytes and tokenwire_flush_interval_ms coalesce that request only', async () => {
    const g = await gatewayWith({ sim: { timing: { tokensPerSecond: 200, loadMs: 0 } } });
    const url = `${g.url}/v1/chat/completions`;
    const baseline = await chatTexts(await post(url, chatBody({ max_tokens: 80 })));
    const text = baseline.join('');
    assert.ok(baseline.length >= 20);

    // The delimiter: the most frequent character of this answer, so the test fits any seeded text.
    const counts = new Map<string, number>();
    for (const ch of text) counts.set(ch, (counts.get(ch) ?? 0) + 1);
    const delimiter = [...counts.entries()].sort((a, b) => b[1] - a[1])[0]![0];
    const byDelimiter = await chatTexts(
      await post(url, chatBody({ max_tokens: 80, stream_options: { tokenwire_flush_delimiter: delimiter } })),
    );
    assert.equal(byDelimiter.join(''), text);
    assert.ok(byDelimiter.length < baseline.length);
    for (const chunk of byDelimiter.slice(0, -1)) assert.ok(chunk.endsWith(delimiter), JSON.stringify(chunk));

    const byBytes = await chatTexts(
      await post(url, chatBody({ max_tokens: 80, stream_options: { tokenwire_flush_bytes: 30 } })),
    );
    assert.equal(byBytes.join(''), text);
    for (const chunk of byBytes.slice(0, -1)) assert.ok(chunk.length >= 30, JSON.stringify(chunk));

    const byInterval = await chatTexts(
      await post(url, chatBody({ max_tokens: 80, stream_options: { tokenwire_flush_interval_ms: 150 } })),
    );
    assert.equal(byInterval.join(''), text);
    assert.ok(
      byInterval.length <= Math.max(2, baseline.length / 4),
      `${byInterval.length} vs ${baseline.length}`,
    );

    // The next request without options is per token again.
    assert.deepEqual(await chatTexts(await post(url, chatBody({ max_tokens: 80 }))), baseline);
  });

  it("a malformed value of a known field is a 400 naming it, in the route's error shape", async () => {
    const g = await gatewayWith();
    const cases: [Record<string, unknown>, string][] = [
      [{ tokenwire_flush_bytes: 'x' }, 'stream_options.tokenwire_flush_bytes'],
      [{ tokenwire_flush_bytes: 0 }, 'stream_options.tokenwire_flush_bytes'],
      [{ tokenwire_flush_interval_ms: 1.5 }, 'stream_options.tokenwire_flush_interval_ms'],
      [{ tokenwire_flush_delimiter: '' }, 'stream_options.tokenwire_flush_delimiter'],
      [{ include_prompt: 'yes' }, 'stream_options.include_prompt'],
      [{ include_usage: 1 }, 'stream_options.include_usage'],
    ];
    for (const [options, field] of cases) {
      const openai = await post(`${g.url}/v1/chat/completions`, chatBody({ stream_options: options }));
      assert.equal(openai.status, 400, field);
      assert.ok(
        ((await openai.json()) as { error: { message: string } }).error.message.includes(field),
        field,
      );
      const ollama = await post(`${g.url}/api/chat`, {
        model: 'sim',
        messages: [{ role: 'user', content: 'x' }],
        stream_options: options,
      });
      assert.equal(ollama.status, 400, field);
      assert.ok(((await ollama.json()) as { error: string }).error.includes(field), field);
    }
    const notObject = await post(`${g.url}/api/generate`, { model: 'sim', prompt: 'x', stream_options: 3 });
    assert.equal(notObject.status, 400);
  });

  it('passes unknown stream_options (vendor fields) to a same-dialect upstream unchanged, without the tokenwire ones', async () => {
    const sim = createSim({ timing: { tokensPerSecond: 2000, loadMs: 0 } });
    const bodies: Record<string, unknown>[] = [];
    const gateway = createGateway({
      upstreams: [
        {
          name: 'sim',
          url: 'http://sim.internal',
          dialects: DIALECT_IDS,
          models: ['sim'],
          fetch: async (request) => {
            bodies.push((await request.clone().json()) as Record<string, unknown>);
            return sim.fetch(request);
          },
        },
      ],
    });
    const served = await serve(gateway.fetch);
    gateways.push({ close: () => Promise.all([gateway.close(), served.close()]).then(() => {}) });
    const response = await post(
      `${served.url}/v1/chat/completions`,
      chatBody({
        stream_options: {
          continuous_usage_stats: true,
          vendor_option: { a: 1 },
          tokenwire_flush_bytes: 64,
          include_prompt: true,
        },
      }),
    );
    await response.text();
    assert.deepEqual(bodies[0]?.stream_options, {
      continuous_usage_stats: true,
      vendor_option: { a: 1 },
      include_usage: true,
    });
    const completions = await post(`${served.url}/v1/completions`, {
      model: 'sim',
      prompt: 'x',
      stream: true,
      stream_options: { continuous_usage_stats: true, tokenwire_flush_delimiter: '\n' },
    });
    await completions.text();
    assert.deepEqual(bodies[1]?.stream_options, { continuous_usage_stats: true, include_usage: true });
  });
});

describe('request ids (tracing off)', () => {
  it('generates an x-request-id, returns it (streams, errors, plain text) and sends it upstream with traceparent untouched', async () => {
    const g = await gatewayWith();
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const response = await post(`${g.url}/v1/chat/completions`, chatBody(), { traceparent });
    const id = response.headers.get('x-request-id') ?? '';
    assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    await response.text();
    const record = g.sim.stats.log.at(-1)!;
    assert.equal(record.headers?.['x-request-id'], id);
    assert.equal(record.headers?.traceparent, traceparent);

    const given = await post(
      `${g.url}/api/chat`,
      { model: 'sim', messages: [{ role: 'user', content: 'x' }] },
      {
        'x-request-id': 'client-7',
      },
    );
    assert.equal(given.headers.get('x-request-id'), 'client-7');
    await given.text();
    assert.equal(g.sim.stats.log.at(-1)?.headers?.['x-request-id'], 'client-7');

    for (const unsafe of ['has spaces', 'x'.repeat(200), 'quote"d']) {
      const replaced = await post(`${g.url}/v1/chat/completions`, chatBody(), { 'x-request-id': unsafe });
      assert.notEqual(replaced.headers.get('x-request-id'), unsafe);
      assert.match(replaced.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
      await replaced.text();
    }
    const rejected = await post(
      `${g.url}/v1/chat/completions`,
      { messages: 'no' },
      { 'x-request-id': 'bad-req' },
    );
    assert.equal(rejected.status, 400);
    assert.equal(rejected.headers.get('x-request-id'), 'bad-req');
    const text = await post(`${g.url}/v1/chat/completions?format=text`, chatBody(), {
      'x-request-id': 'txt-1',
    });
    assert.equal(text.headers.get('x-request-id'), 'txt-1');
    await text.text();
  });
});
