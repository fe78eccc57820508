import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { HttpError } from '../../src/client/client-errors.ts';
import { complete, stream } from '../../src/client/token-stream.ts';
import type { Result } from '../../src/events/result.ts';
import { startGateway, type TestGateway } from '../helpers/gateway.ts';
import { histogram, ms, type TestOtel, testOtel, waitFor } from './otel-helpers.ts';

/**
 * The gateway's spans and GenAI metrics, read back from the real OpenTelemetry SDK with in-memory
 * exporters, for a completed, a truncated, a cancelled and several upstream-failed streams, and
 * checked against what the client saw.
 */
describe('gateway OpenTelemetry (in-memory exporters)', () => {
  let otel: TestOtel;
  let g: TestGateway;
  /** Per request id: the span's output tokens, to add up against the token-usage metric. */
  const outputs = new Map<string, number>();

  before(async () => {
    otel = testOtel();
    g = await startGateway({
      // 100 tokens/s: a 24-120 token answer takes a quarter second or more after its first token.
      sim: { timing: { tokensPerSecond: 100, loadMs: 0 } },
      gateway: { telemetry: { tracer: otel.tracer, meter: otel.meter, propagator: otel.propagator } },
    });
  });
  after(async () => {
    await g?.close();
    await otel?.shutdown();
  });

  const url = () => `${g.url}/v1/chat/completions`;
  const body = (model: string, extra: Record<string, unknown> = {}) => ({
    model,
    messages: [{ role: 'user', content: 'tell me about rivers' }],
    stream_options: { include_usage: true },
    ...extra,
  });
  const serverSpan = (requestId: string) =>
    waitFor(
      () =>
        otel
          .spans()
          .find((s) => s.kind === SpanKind.SERVER && s.attributes['tokenwire.request_id'] === requestId),
      `the server span of ${requestId}`,
    );
  const childOf = (parent: ReadableSpan) =>
    otel.spans().find((s) => s.parentSpanContext?.spanId === parent.spanContext().spanId);
  const simRecord = (requestId: string) =>
    waitFor(
      () => g.sim.stats.log.find((r) => r.headers?.['x-request-id'] === requestId),
      `sim record ${requestId}`,
    );

  function checkCommon(span: ReadableSpan, result: Result): void {
    assert.equal(span.name, 'POST /v1/chat/completions');
    assert.equal(span.attributes['gen_ai.operation.name'], 'chat');
    assert.equal(span.attributes['gen_ai.request.model'], 'sim');
    assert.equal(span.attributes['gen_ai.request.stream'], true);
    assert.equal(span.attributes['gen_ai.provider.name'], 'openai_compatible');
    assert.equal(span.attributes['tokenwire.route'], 'openai-chat');
    assert.equal(span.attributes['http.response.status_code'], 200);
    if (result.model !== undefined) assert.equal(span.attributes['gen_ai.response.model'], result.model);
    const upstream = childOf(span);
    assert.ok(upstream, 'an upstream child span');
    assert.equal(upstream.kind, SpanKind.CLIENT);
    assert.match(upstream.name, /^chat sim/);
    assert.equal(upstream.spanContext().traceId, span.spanContext().traceId);
    assert.equal(upstream.attributes['server.address'], 'sim.internal');
    // Within 2 ms: the SDK anchors each span's start on Date.now (1 ms resolution).
    assert.ok(ms(upstream.endTime) <= ms(span.endTime) + 2, 'the upstream span ends inside its parent');
  }

  it('a completed stream: usage, finish reason, TTFT on the span, and a span that ends with the stream', async () => {
    const id = 'req-completed';
    const result = await complete({
      url: url(),
      body: body('sim', { max_tokens: 400 }),
      headers: { 'x-request-id': id },
    });
    assert.equal(result.complete, true);
    assert.equal(result.finishReason, 'stop');
    const span = await serverSpan(id);
    checkCommon(span, result);
    assert.equal(span.attributes['tokenwire.stream.end_state'], 'completed');
    // The whole stream id would let whoever reads the traces replay the stream: only its start is there.
    assert.match(String(span.attributes['tokenwire.stream_id']), /^[0-9a-f]{6}…$/);
    assert.deepEqual(span.attributes['gen_ai.response.finish_reasons'], ['stop']);
    assert.equal(span.attributes['gen_ai.usage.output_tokens'], result.usage?.outputTokens);
    assert.equal(span.attributes['gen_ai.usage.input_tokens'], result.usage?.inputTokens);
    assert.equal(span.attributes['tokenwire.usage.output_tokens_estimated'], false);
    assert.equal(span.status.code, SpanStatusCode.UNSET);

    // Time to first token: on the span (seconds) and as an event, no later than the client saw it.
    const ttft = span.attributes['gen_ai.response.time_to_first_chunk'] as number;
    assert.ok(ttft > 0 && ttft * 1000 <= (result.metrics.ttftMs ?? 0) + 5, `ttft ${ttft}s`);
    const first = span.events.find((e) => e.name === 'tokenwire.first_token');
    assert.ok(first, 'a first-token event');
    assert.ok(ms(first.time) >= ms(span.startTime) && ms(first.time) <= ms(span.endTime));

    // The span covers the whole stream, not only the wait for the first byte: it ends after the
    // upstream sent its last token (span times and the simulator's clock are both wall-clock ms).
    const record = await simRecord(id);
    assert.ok(ms(span.endTime) >= record.endedAt - 2, 'the span ends after the last token was generated');
    assert.ok(
      record.endedAt - record.startedAt >= (result.usage?.outputTokens ?? 0) * 5,
      'a 100 tokens/s stream',
    );
    assert.ok(ms(span.duration) > ttft * 1000);
    assert.ok(ms(span.duration) <= (result.metrics.totalMs ?? 0) + 100, 'and within what the client waited');
    const upstream = childOf(span)!;
    assert.equal(upstream.attributes['gen_ai.usage.output_tokens'], result.usage?.outputTokens);
    assert.deepEqual(upstream.attributes['gen_ai.response.finish_reasons'], ['stop']);
    outputs.set(id, span.attributes['gen_ai.usage.output_tokens'] as number);
  });

  it('a truncated stream: finish reason length and end state truncated', async () => {
    const id = 'req-truncated';
    const result = await complete({
      url: url(),
      body: body('sim', { max_tokens: 7 }),
      headers: { 'x-request-id': id },
    });
    assert.equal(result.truncated, true);
    const span = await serverSpan(id);
    checkCommon(span, result);
    assert.equal(span.attributes['tokenwire.stream.end_state'], 'truncated');
    assert.deepEqual(span.attributes['gen_ai.response.finish_reasons'], ['length']);
    assert.equal(span.attributes['gen_ai.usage.output_tokens'], 7);
    assert.equal(result.usage?.outputTokens, 7);
    assert.equal(span.status.code, SpanStatusCode.UNSET);
    outputs.set(id, 7);
  });

  it('a cancelled stream: end state cancelled, with the tokens generated before the cancel', async () => {
    const id = 'req-cancelled';
    const events = stream({
      url: url(),
      body: body('sim', { max_tokens: 400 }),
      headers: { 'x-request-id': id },
    });
    let seen = 0;
    for await (const event of events) {
      if (event.type === 'text') seen += 1;
      if (seen === 3) break;
    }
    const span = await serverSpan(id);
    const record = await simRecord(id);
    assert.equal(record.outcome, 'cancelled', 'the upstream was stopped');
    assert.equal(span.attributes['tokenwire.stream.end_state'], 'cancelled');
    assert.equal(span.status.code, SpanStatusCode.UNSET);
    assert.ok(span.events.some((e) => e.name === 'tokenwire.client_disconnected'));
    const output = span.attributes['gen_ai.usage.output_tokens'] as number;
    assert.ok(
      output >= seen && output <= record.outputTokens,
      `${output} tokens: client saw ${seen}, sim made ${record.outputTokens}`,
    );
    assert.equal(span.attributes['tokenwire.usage.output_tokens_estimated'], true);
    outputs.set(id, output);
  });

  it('an upstream cut mid-stream: end state incomplete, an error status, the tokens before the cut', async () => {
    const id = 'req-cut';
    const result = await complete({
      url: url(),
      body: body('sim@cut-after=5', { max_tokens: 400 }),
      headers: { 'x-request-id': id },
    });
    assert.equal(result.complete, false);
    const span = await serverSpan(id);
    const record = await simRecord(id);
    assert.equal(span.attributes['tokenwire.stream.end_state'], 'incomplete');
    assert.equal(span.attributes['tokenwire.stream.incomplete_reason'], 'connection-closed');
    assert.equal(span.attributes['error.type'], 'connection-closed');
    assert.equal(span.status.code, SpanStatusCode.ERROR);
    // No usage came before the cut: the gateway counts the chunks it relayed, as the client did.
    assert.equal(record.outputTokens, 5);
    const output = span.attributes['gen_ai.usage.output_tokens'] as number;
    assert.equal(output, result.metrics.chunkCount);
    assert.ok(output > 0 && output <= 5);
    assert.equal(span.attributes['tokenwire.usage.output_tokens_estimated'], true);
    assert.equal(childOf(span)?.status.code, SpanStatusCode.ERROR);
    outputs.set(id, output);
  });

  it('an upstream error event mid-stream: end state error', async () => {
    const id = 'req-error';
    const result = await complete({
      url: url(),
      body: body('sim@error-after=4', { max_tokens: 400 }),
      headers: { 'x-request-id': id },
    });
    assert.equal(result.incomplete, 'server-error');
    const span = await serverSpan(id);
    assert.equal(span.attributes['tokenwire.stream.end_state'], 'error');
    assert.equal(span.attributes['error.type'], 'server-error');
    assert.equal(span.status.code, SpanStatusCode.ERROR);
    const output = span.attributes['gen_ai.usage.output_tokens'] as number;
    assert.equal(output, result.usage?.outputTokens ?? result.metrics.chunkCount);
    assert.ok(output > 0 && output <= 4);
    outputs.set(id, output);
  });

  it('an upstream HTTP error before the stream: its status to the client, and on the spans', async () => {
    const id = 'req-status';
    const failure = await complete({
      url: url(),
      body: body('sim@status=503'),
      headers: { 'x-request-id': id },
    }).catch((error: unknown) => error);
    assert.ok(failure instanceof HttpError);
    assert.equal(failure.status, 503);
    assert.equal(failure.headers['x-request-id'], id, 'the request id comes back on errors too');
    const span = await serverSpan(id);
    assert.equal(span.attributes['http.response.status_code'], 503);
    assert.equal(span.attributes['tokenwire.stream.end_state'], 'error');
    assert.equal(span.attributes['error.type'], '503');
    assert.equal(span.status.code, SpanStatusCode.ERROR);
    assert.equal(childOf(span)?.attributes['http.response.status_code'], 503);
  });

  it('records the GenAI metrics by their convention names, units and counts', async () => {
    const metrics = await otel.collect();
    const ttft = histogram(metrics, 'gen_ai.server.time_to_first_token');
    assert.equal(ttft.unit, 's');
    assert.equal(ttft.count, 2, 'completed and truncated streams only');
    const spanTtft = ['req-completed', 'req-truncated']
      .map((id) => otel.spans().find((s) => s.attributes['tokenwire.request_id'] === id)!)
      .reduce((sum, s) => sum + (s.attributes['gen_ai.response.time_to_first_chunk'] as number), 0);
    assert.ok(Math.abs(ttft.sum - spanTtft) < 1e-6, `${ttft.sum} vs ${spanTtft}`);
    for (const point of ttft.points) {
      assert.equal(point.attributes['gen_ai.operation.name'], 'chat');
      assert.equal(point.attributes['gen_ai.provider.name'], 'openai_compatible');
      assert.equal(point.attributes['gen_ai.request.model'], 'sim');
      assert.equal(point.attributes['server.address'], 'sim.internal');
    }
    const tpot = histogram(metrics, 'gen_ai.server.time_per_output_token');
    assert.equal(tpot.unit, 's');
    assert.equal(tpot.count, 2);
    assert.ok(tpot.sum > 0);

    const tokens = histogram(metrics, 'gen_ai.client.token.usage');
    assert.equal(tokens.unit, '{token}');
    const output = tokens.points.filter((p) => p.attributes['gen_ai.token.type'] === 'output');
    const outputSum = output.reduce((sum, p) => sum + p.sum, 0);
    const expected = [...outputs.values()].reduce((a, b) => a + b, 0);
    assert.equal(outputSum, expected, 'output tokens, including the cancelled and failed streams');
    assert.equal(
      output.reduce((sum, p) => sum + p.count, 0),
      outputs.size,
    );
    // Failed streams carry a model name the upstream lists: the fault suffix is not a new series.
    assert.ok(tokens.points.every((p) => p.attributes['gen_ai.request.model'] === 'sim'));

    const duration = histogram(metrics, 'gen_ai.server.request.duration');
    assert.equal(duration.unit, 's');
    assert.equal(duration.count, 6);
    const failedTypes = duration.points
      .filter((p) => p.attributes['error.type'] !== undefined)
      .map((p) => p.attributes['error.type'])
      .sort();
    assert.deepEqual(failedTypes, ['503', 'connection-closed', 'server-error']);
    const upstream = histogram(metrics, 'gen_ai.client.operation.duration');
    assert.equal(upstream.unit, 's');
    assert.equal(upstream.count, 6);
  });

  it("continues the caller's trace (traceparent) and passes the upstream span's context and the request id upstream", async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const parentId = '00f067aa0ba902b7';
    const id = 'req-traced';
    const response = await fetch(url(), {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        traceparent: `00-${traceId}-${parentId}-01`,
        tracestate: 'vendor=abc',
        'x-request-id': id,
      },
      body: JSON.stringify({ ...body('sim', { max_tokens: 5 }), stream: true }),
    });
    assert.equal(response.headers.get('x-request-id'), id);
    await response.text();
    const span = await serverSpan(id);
    assert.equal(span.spanContext().traceId, traceId);
    assert.equal(span.parentSpanContext?.spanId, parentId);
    assert.equal(span.parentSpanContext?.isRemote, true);
    const upstream = childOf(span)!;
    const record = await simRecord(id);
    assert.equal(record.headers?.traceparent, `00-${traceId}-${upstream.spanContext().spanId}-01`);
    assert.equal(record.headers?.tracestate, 'vendor=abc');
    assert.equal(record.headers?.['x-request-id'], id);
  });
});

describe('gateway OpenTelemetry without a propagator', () => {
  it('reads and writes W3C trace context itself when none is registered', async () => {
    const otel = testOtel();
    const g = await startGateway({ gateway: { telemetry: { tracer: otel.tracer } } });
    try {
      const traceId = '0af7651916cd43dd8448eb211c80319c';
      const response = await fetch(`${g.url}/api/generate`, {
        method: 'POST',
        headers: {
          traceparent: `00-${traceId}-b7ad6b7169203331-01`,
          tracestate: 'congo=t61rcWkgMzE',
          'x-request-id': 'fallback-1',
        },
        body: JSON.stringify({ model: 'sim', prompt: 'hi', options: { num_predict: 3 } }),
      });
      await response.text();
      const span = await waitFor(
        () => otel.spans().find((s) => s.attributes['tokenwire.request_id'] === 'fallback-1'),
        'the server span',
      );
      assert.equal(span.spanContext().traceId, traceId);
      assert.equal(span.parentSpanContext?.spanId, 'b7ad6b7169203331');
      assert.equal(span.attributes['gen_ai.operation.name'], 'text_completion');
      const upstream = otel.spans().find((s) => s.parentSpanContext?.spanId === span.spanContext().spanId)!;
      const sent = g.sim.stats.log.at(-1)?.headers;
      assert.equal(sent?.traceparent, `00-${traceId}-${upstream.spanContext().spanId}-01`);
      assert.equal(sent?.tracestate, 'congo=t61rcWkgMzE');
      // A malformed traceparent starts a new trace instead of failing the request.
      const fresh = await fetch(`${g.url}/api/generate`, {
        method: 'POST',
        headers: { traceparent: '00-zz-not-a-trace', 'x-request-id': 'fallback-2' },
        body: JSON.stringify({ model: 'sim', prompt: 'hi', options: { num_predict: 3 } }),
      });
      assert.equal(fresh.status, 200);
      await fresh.text();
      const second = await waitFor(
        () => otel.spans().find((s) => s.attributes['tokenwire.request_id'] === 'fallback-2'),
        'the second span',
      );
      assert.equal(second.parentSpanContext, undefined);
    } finally {
      await g.close();
      await otel.shutdown();
    }
  });
});
