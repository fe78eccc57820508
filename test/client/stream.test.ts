import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { readFileSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import { HttpError, RequestFailedError } from '../../src/client/client-errors.ts';
import { complete, stream } from '../../src/client/token-stream.ts';
import type { StreamEvent } from '../../src/events/stream-event.ts';
import { fixturePath } from '../helpers/paths.ts';
import { paced, type ScriptServer, type Step, scriptServer, sleep } from '../helpers/script-server.ts';

const fixture = (name: string) => readFileSync(fixturePath('wire-examples', name), 'utf8');
const chatBody = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };
const servers: ScriptServer[] = [];
after(() => Promise.all(servers.map((s) => s.close())));

async function serverWith(...args: Parameters<typeof scriptServer>): Promise<ScriptServer> {
  const server = await scriptServer(...args);
  servers.push(server);
  return server;
}

const sse = { 'content-type': 'text/event-stream' };
const ndjson = { 'content-type': 'application/x-ndjson' };

describe('client over real HTTP', () => {
  it('reads a vLLM stream to a complete Result with usage, and sends stream: true', async () => {
    const server = await serverWith({ headers: sse, steps: paced(fixture('vllm-chat.sse'), 5) });
    const result = await complete({ url: `${server.url}/v1/chat/completions`, body: chatBody });
    assert.equal(result.text, 'Hi there');
    assert.equal(result.complete, true);
    assert.equal(result.finishReason, 'stop');
    assert.equal(result.usage?.outputTokens, 3);
    assert.equal(result.metrics.outputTokens, 3);
    assert.equal(result.metrics.outputTokensEstimated, false);
    assert.equal(result.metrics.chunkCount, 2);
    assert.ok(result.metrics.ttftMs !== undefined && result.metrics.ttftMs >= result.metrics.ttfbMs!);
    assert.equal(JSON.parse(server.requests[0]!.body).stream, true);
    assert.equal(server.requests[0]!.headers.accept, 'text/event-stream');
  });

  it('decodes 1-byte writes (a read is not an event) to the same Result', async () => {
    const bytes = new TextEncoder().encode(fixture('vllm-chat.sse'));
    const steps: Step[] = [];
    for (let i = 0; i < bytes.length; i++) steps.push({ write: bytes.slice(i, i + 1) });
    const server = await serverWith({ headers: sse, steps });
    const result = await complete({ url: `${server.url}/v1/chat/completions`, body: chatBody });
    assert.equal(result.text, 'Hi there');
    assert.equal(result.complete, true);
  });

  it('marks a truncated stream incomplete, keeping the partial text', async () => {
    const text = fixture('vllm-chat.sse').split('\n\n').slice(0, 3).join('\n\n');
    const server = await serverWith({
      headers: sse,
      steps: [{ write: `${text}\n\n` }, { wait: 20 }, { destroy: true }],
    });
    const result = await complete({ url: `${server.url}/v1/chat/completions`, body: chatBody });
    assert.equal(result.complete, false);
    assert.equal(result.incomplete, 'connection-closed');
    assert.equal(result.text, 'Hi there');
    assert.equal(result.finishReason, undefined);
    assert.match(result.error!.message, /terminal event/);
  });

  it('marks a stream that ends cleanly but without its terminal event incomplete', async () => {
    const text = fixture('ollama-openai-chat-midstream-error.sse');
    const server = await serverWith({ headers: sse, steps: [{ write: text }] });
    const result = await complete({ url: `${server.url}/v1/chat/completions`, body: chatBody });
    assert.equal(result.complete, false);
    assert.equal(result.incomplete, 'connection-closed');
    assert.equal(result.text, 'Hi');
  });

  it('times out a stalled stream close to the idle timeout, and keepalive comments do not reset it', async () => {
    const steps: Step[] = [{ write: 'data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n' }];
    for (let i = 0; i < 40; i++) steps.push({ wait: 50 }, { write: ':\n\n' });
    const server = await serverWith({ headers: sse, steps });
    const started = performance.now();
    const result = await complete(
      { url: `${server.url}/v1/chat/completions`, body: chatBody },
      { timeouts: { idleMs: 300 } },
    );
    const took = performance.now() - started;
    assert.equal(result.incomplete, 'idle-timeout');
    assert.equal(result.text, 'Hi');
    assert.ok(result.metrics.keepaliveCount >= 3, `keepalives seen: ${result.metrics.keepaliveCount}`);
    // A lower bound only: the keepalives did not reset the deadline, which closedEarlyAtMs shows below.
    assert.ok(took >= 280, `took ${took} ms`);
    await server.requests[0]!.closed;
    assert.ok(server.requests[0]!.closedEarlyAtMs !== undefined, 'the client closed the stalled connection');
  });

  it('applies a first-byte timeout when headers come but no body does', async () => {
    const server = await serverWith({ headers: sse, steps: [{ hang: true }] });
    const result = await complete(
      { url: `${server.url}/v1/chat/completions`, body: chatBody },
      { timeouts: { firstByteMs: 150 } },
    );
    assert.equal(result.incomplete, 'first-byte-timeout');
  });

  it('rejects with connect-timeout when no headers arrive', async () => {
    const server = await serverWith({ headersDelayMs: 2000, steps: [] });
    await assert.rejects(
      complete(
        { url: `${server.url}/v1/chat/completions`, body: chatBody },
        { timeouts: { connectMs: 150 } },
      ),
      (error: unknown) => error instanceof RequestFailedError && error.code === 'connect-timeout',
    );
  });

  it('carries an abort to the server: its socket closes, and the Result says aborted with the text so far', async () => {
    const steps: Step[] = [];
    for (let i = 0; i < 100; i++) {
      steps.push({ write: `data: {"choices":[{"index":0,"delta":{"content":"t${i} "}}]}\n\n` }, { wait: 20 });
    }
    const server = await serverWith({ headers: sse, steps });
    const controller = new AbortController();
    const tokens = stream(
      { url: `${server.url}/v1/chat/completions`, body: chatBody },
      { signal: controller.signal },
    );
    let seen = 0;
    let abortedAt = 0;
    for await (const event of tokens) {
      if (event.type === 'text' && ++seen === 3) {
        abortedAt = performance.now();
        controller.abort();
      }
    }
    const result = await tokens.result;
    assert.equal(result.complete, false);
    assert.equal(result.incomplete, 'aborted');
    assert.match(result.text, /^t0 t1 t2 /);
    await server.requests[0]!.closed;
    assert.ok(server.requests[0]!.closedEarlyAtMs !== undefined);
    assert.ok(performance.now() - abortedAt < 1000);
  });

  it('one signal shared by many requests with timeouts: no listener kept, no leak warning, the abort still reaches the server', async () => {
    const steps: Step[] = [];
    for (let i = 0; i < 100; i++) {
      steps.push({ write: `data: {"choices":[{"index":0,"delta":{"content":"t${i} "}}]}\n\n` }, { wait: 20 });
    }
    const slow = await serverWith({ headers: sse, steps });
    const quick = await serverWith({ headers: sse, steps: paced(fixture('vllm-chat.sse'), 5) });
    const controller = new AbortController();
    const options = { signal: controller.signal, timeouts: { idleMs: 5000, totalMs: 20000 } };
    // A long-lived signal passed to many requests: each run drops its listener when it ends, whether
    // it completed or failed.
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      // More requests at once than Node's 10 listeners per signal before its leak warning.
      const results = await Promise.all(
        Array.from({ length: 12 }, () =>
          complete({ url: `${quick.url}/v1/chat/completions`, body: chatBody }, options),
        ),
      );
      for (const result of results) assert.equal(result.complete, true);
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    assert.deepEqual(
      warnings.map((w) => w.name),
      [],
    );
    await assert.rejects(
      complete({ url: 'http://127.0.0.1:9/v1/chat/completions', body: chatBody }, options),
      RequestFailedError,
    );
    assert.equal(getEventListeners(controller.signal, 'abort').length, 0);

    const tokens = stream({ url: `${slow.url}/v1/chat/completions`, body: chatBody }, options);
    let seen = 0;
    for await (const event of tokens) {
      if (event.type === 'text' && ++seen === 3) controller.abort();
    }
    const result = await tokens.result;
    assert.equal(result.incomplete, 'aborted');
    await slow.requests[0]!.closed;
    assert.ok(slow.requests[0]!.closedEarlyAtMs !== undefined);
  });

  it('breaking out of the loop aborts the request too', async () => {
    const steps: Step[] = [];
    for (let i = 0; i < 100; i++)
      steps.push({ write: `data: {"choices":[{"delta":{"content":"x"}}]}\n\n` }, { wait: 20 });
    const server = await serverWith({ headers: sse, steps });
    const tokens = stream({ url: `${server.url}/v1/chat/completions`, body: chatBody });
    for await (const event of tokens) if (event.type === 'text') break;
    assert.equal((await tokens.result).incomplete, 'aborted');
    await server.requests[0]!.closed;
    assert.ok(server.requests[0]!.closedEarlyAtMs !== undefined);
  });

  it('surfaces a mid-stream server error (inside the 200) and keeps the partial text', async () => {
    for (const name of [
      'vllm-chat-midstream-error.sse',
      'llamacpp-chat-midstream-error.sse',
      'llamacpp-chat-midstream-error-legacy.sse',
      'tgi-chat-midstream-error.sse',
    ]) {
      const server = await serverWith({ headers: sse, steps: [{ write: fixture(name) }] });
      const result = await complete({ url: `${server.url}/v1/chat/completions`, body: chatBody });
      assert.equal(result.complete, false, name);
      assert.equal(result.incomplete, 'server-error', name);
      assert.equal(result.text, 'Hi', name);
      assert.ok(result.error!.message.length > 0, name);
    }
  });

  it('surfaces a length finish as a truncation', async () => {
    const server = await serverWith({
      headers: sse,
      steps: [{ write: readFileSync(fixturePath('real-captures/llamacpp-b4747/v1-chat.sse')) }],
    });
    const result = await complete({ url: `${server.url}/v1/chat/completions`, body: chatBody });
    assert.equal(result.complete, true);
    assert.equal(result.truncated, true);
    assert.equal(result.finishReason, 'length');
    assert.equal(result.rawFinishReason, 'length');
  });

  it('says at once when NDJSON arrives where SSE was expected, instead of hanging', async () => {
    const line =
      '{"model":"llama3.2","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":"Hi"},"done":false}\n';
    const server = await serverWith({ headers: ndjson, steps: [{ write: line }, { hang: true }] });
    const started = performance.now();
    const result = await complete({ url: `${server.url}/v1/chat/completions`, body: chatBody });
    assert.ok(performance.now() - started < 1000);
    assert.equal(result.error?.code, 'wrong-framing');
    assert.match(result.error!.message, /expected SSE.*but the body is NDJSON/);
  });

  it('says at once when SSE arrives where NDJSON was expected', async () => {
    const server = await serverWith({
      headers: sse,
      steps: [{ write: fixture('vllm-chat.sse').slice(0, 50) }, { hang: true }],
    });
    const started = performance.now();
    const result = await complete({ url: `${server.url}/api/chat`, body: chatBody });
    assert.ok(performance.now() - started < 1000);
    assert.equal(result.error?.code, 'wrong-framing');
    assert.match(result.error!.message, /expected NDJSON.*ollama-chat.*but the body is SSE/);
  });

  it('throws an HttpError with method, URL, status and the server message before streaming', async () => {
    const server = await serverWith({
      status: 400,
      headers: { 'content-type': 'application/json' },
      steps: [
        { write: '{"error":{"message":"prompt is too long","type":"invalid_request_error","code":400}}' },
      ],
    });
    await assert.rejects(
      complete({ url: `${server.url}/v1/chat/completions`, body: chatBody }),
      (error: unknown) => {
        assert.ok(error instanceof HttpError);
        assert.equal(error.status, 400);
        assert.equal(error.method, 'POST');
        assert.match(
          error.message,
          /POST http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions failed with HTTP 400.*prompt is too long/,
        );
        assert.equal(error.isRetryable, false);
        return true;
      },
    );
  });

  it('rejects with a network error when nothing listens', async () => {
    const server = await serverWith({ steps: [] });
    const url = server.url;
    await server.close();
    await assert.rejects(
      complete({ url: `${url}/v1/chat/completions`, body: chatBody }),
      (error: unknown) => error instanceof RequestFailedError && error.code === 'network',
    );
  });

  it('marks a payload that is not JSON malformed, keeping what came before', async () => {
    const server = await serverWith({
      headers: sse,
      steps: [
        { write: 'data: {"choices":[{"delta":{"content":"ok"}}]}\n\ndata: {not json\n\n' },
        { hang: true },
      ],
    });
    const result = await complete({ url: `${server.url}/v1/chat/completions`, body: chatBody });
    assert.equal(result.incomplete, 'malformed');
    assert.equal(result.error?.code, 'malformed-payload');
    assert.equal(result.text, 'ok');
  });

  it('fails a 10 MiB line with line-too-long, stops reading, and keeps memory bounded', async () => {
    const mib = 'x'.repeat(1024 * 1024);
    const steps: Step[] = [{ write: 'data: {"choices":[{"delta":{"content":"' }];
    for (let i = 0; i < 10; i++) steps.push({ write: mib });
    const server = await serverWith({ headers: sse, steps });
    const before = process.memoryUsage().heapUsed;
    const result = await complete(
      { url: `${server.url}/v1/chat/completions`, body: chatBody },
      { maxLineBytes: 1024 * 1024 },
    );
    assert.equal(result.incomplete, 'malformed');
    assert.equal(result.error?.code, 'line-too-long');
    assert.ok(process.memoryUsage().heapUsed - before < 64 * 1024 * 1024);
  });

  it('fails invalid UTF-8 with invalid-utf8', async () => {
    const bad = new Uint8Array([
      ...new TextEncoder().encode('data: {"choices":[{"delta":{"content":"a'),
      0xc3,
      0x28,
      ...new TextEncoder().encode('"}}]}\n\n'),
    ]);
    const server = await serverWith({ headers: sse, steps: [{ write: bad }] });
    const result = await complete({ url: `${server.url}/v1/chat/completions`, body: chatBody });
    assert.equal(result.error?.code, 'invalid-utf8');
  });

  it('reads a stream whose text is split inside multi-byte characters across writes', async () => {
    const text =
      'data: {"choices":[{"delta":{"content":"東京 👩‍👩‍👧 Reykjavík"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n';
    const bytes = new TextEncoder().encode(text);
    const steps: Step[] = [];
    for (let i = 0; i < bytes.length; i += 3) steps.push({ write: bytes.slice(i, i + 3) });
    const server = await serverWith({ headers: sse, steps });
    const result = await complete({ url: `${server.url}/v1/chat/completions`, body: chatBody });
    assert.equal(result.text, '東京 👩‍👩‍👧 Reykjavík');
  });

  it('passes on only the new part when a server repeats the whole text in every event', async () => {
    const pieces = [
      'Quantum',
      'Quantum entanglement',
      'Quantum entanglement is',
      'Quantum entanglement is odd.',
    ];
    let wire = '';
    for (const piece of pieces)
      wire += `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: piece } }] })}\n\n`;
    wire += 'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n';
    const server = await serverWith({ headers: sse, steps: [{ write: wire }] });
    const tokens = stream({ url: `${server.url}/v1/chat/completions`, body: chatBody });
    const texts: string[] = [];
    for await (const event of tokens) if (event.type === 'text') texts.push(event.text);
    assert.deepEqual(texts, ['Quantum', ' entanglement', ' is', ' odd.']);
    assert.equal((await tokens.result).text, 'Quantum entanglement is odd.');
  });

  it('accumulates tool-call fragments by index and parses the arguments once, at the end', async () => {
    const server = await serverWith({ headers: sse, steps: paced(fixture('vllm-chat-toolcall.sse'), 2) });
    const events: StreamEvent[] = [];
    const tokens = stream({ url: `${server.url}/v1/chat/completions`, body: chatBody });
    for await (const event of tokens) events.push(event);
    const result = await tokens.result;
    assert.deepEqual(
      result.toolCalls.map((c) => [c.name, c.input]),
      [['get_weather', { city: 'Paris' }]],
    );
    assert.equal(result.finishReason, 'tool-calls');
    // The complete call comes after every fragment.
    const lastDelta = events.map((e) => e.type).lastIndexOf('tool-call-delta');
    assert.ok(events.findIndex((e) => e.type === 'tool-call') > lastDelta);
  });

  it("never puts TGI's special tokens (the EOS <|eot_id|>, </s>) into the text", async () => {
    for (const name of ['wire-examples/tgi-generate-stream.sse', 'extra/tgi-generate-stream-legacy.sse']) {
      const bytes = readFileSync(fixturePath(name), 'utf8');
      const server = await serverWith({ headers: sse, steps: paced(bytes, 2) });
      const result = await complete({ url: `${server.url}/generate_stream`, body: { inputs: 'hi' } });
      assert.equal(result.complete, true, name);
      assert.doesNotMatch(result.text, /<\|eot_id\|>|<\/s>/, name);
      assert.equal(result.dialect, 'tgi');
    }
  });

  it('detects the dialect from the bytes when the path says nothing', async () => {
    const server = await serverWith({ headers: sse, steps: [{ write: fixture('llamacpp-chat.sse') }] });
    const result = await complete({ url: `${server.url}/some/proxy/route`, body: chatBody });
    assert.equal(result.dialect, 'openai-chat');
    assert.equal(result.text, 'Hi there');
    assert.equal(result.timings?.promptEvalMs, 35.2);
  });

  it('reports a non-streaming JSON answer clearly', async () => {
    const server = await serverWith({
      headers: { 'content-type': 'application/json' },
      steps: [{ write: '{"id":"x","object":"chat.completion","choices":[]}' }],
    });
    const result = await complete({
      url: `${server.url}/v1/chat/completions`,
      body: { ...chatBody, stream: false },
    });
    assert.equal(result.error?.code, 'not-streaming');
  });

  it('yields events progressively, before the stream ends', async () => {
    const steps: Step[] = [];
    for (let i = 0; i < 5; i++)
      steps.push({ write: `data: {"choices":[{"delta":{"content":"${i}"}}]}\n\n` }, { wait: 60 });
    steps.push({ write: 'data: {"choices":[{"delta":{},"finish_reason":"stop"}]}\n\n' });
    const server = await serverWith({ headers: sse, steps });
    const started = performance.now();
    const times: number[] = [];
    for await (const event of stream({ url: `${server.url}/v1/chat/completions`, body: chatBody })) {
      if (event.type === 'text') times.push(performance.now() - started);
    }
    assert.equal(times.length, 5);
    assert.ok(times[4]! - times[0]! >= 150, `events arrived together: ${times}`);
  });

  it('sends Last-Event-ID when resuming', async () => {
    const server = await serverWith({ headers: sse, steps: [{ write: fixture('vllm-chat.sse') }] });
    await complete({ url: `${server.url}/v1/chat/completions`, body: chatBody }, { lastEventId: 's1:4' });
    assert.equal(server.requests[0]!.headers['last-event-id'], 's1:4');
  });
});

void sleep;
