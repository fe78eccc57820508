import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { HttpError } from '../../src/client/client-errors.ts';
import { complete, stream } from '../../src/client/token-stream.ts';
import { createSim } from '../../src/sim/create-sim.ts';
import { histogram, ms, testOtel } from '../server/otel-helpers.ts';

/** The client's own GenAI span and metrics, when it is handed a tracer and a meter. */
describe('client OpenTelemetry', () => {
  const otel = testOtel();
  after(() => otel.shutdown());
  const sim = createSim({ timing: { tokensPerSecond: 500, loadMs: 0 } });
  const request = (model: string, extra: Record<string, unknown> = {}) => ({
    url: 'http://sim.local:8000/v1/chat/completions',
    body: {
      model,
      messages: [{ role: 'user', content: 'hello' }],
      stream_options: { include_usage: true },
      ...extra,
    },
  });
  const telemetry = { tracer: otel.tracer, meter: otel.meter };

  it('complete(): a CLIENT span named by the conventions, with usage, finish reason and TTFT; traceparent sent', async () => {
    const result = await complete(request('sim', { max_tokens: 9 }), { fetch: sim.fetch, telemetry });
    const span = otel.spans().at(-1)!;
    assert.equal(span.name, 'chat sim');
    assert.equal(span.kind, SpanKind.CLIENT);
    assert.equal(span.attributes['gen_ai.operation.name'], 'chat');
    assert.equal(span.attributes['gen_ai.request.model'], 'sim');
    assert.equal(span.attributes['gen_ai.response.model'], result.model);
    assert.equal(span.attributes['server.address'], 'sim.local');
    assert.equal(span.attributes['server.port'], 8000);
    assert.deepEqual(span.attributes['gen_ai.response.finish_reasons'], ['length']);
    assert.equal(span.attributes['gen_ai.usage.output_tokens'], 9);
    assert.equal(span.attributes['gen_ai.usage.input_tokens'], result.usage?.inputTokens);
    assert.equal(span.attributes['tokenwire.stream.end_state'], 'truncated');
    assert.equal(span.attributes['gen_ai.response.time_to_first_chunk'], (result.metrics.ttftMs ?? 0) / 1000);
    const first = span.events.find((e) => e.name === 'tokenwire.first_token');
    assert.ok(first && ms(first.time) >= ms(span.startTime) - 2 && ms(first.time) <= ms(span.endTime) + 2);
    const sent = sim.stats.log.at(-1)?.headers?.traceparent;
    assert.equal(sent, `00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`);
  });

  it('stream(): a consumer that stops early gives a cancelled span with the tokens seen', async () => {
    const events = stream(request('sim', { max_tokens: 300 }), { fetch: sim.fetch, telemetry });
    let texts = 0;
    for await (const event of events) {
      if (event.type === 'text') texts += 1;
      if (texts === 4) break;
    }
    const result = await events.result;
    const span = otel.spans().at(-1)!;
    assert.equal(span.attributes['tokenwire.stream.end_state'], 'cancelled');
    assert.equal(span.status.code, SpanStatusCode.UNSET);
    assert.equal(span.attributes['gen_ai.usage.output_tokens'], result.metrics.outputTokens);
    assert.ok((result.metrics.outputTokens ?? 0) >= 4);
  });

  it('an HTTP error: an error span and error.type the status; a request that sets traceparent keeps it', async () => {
    const own = '00-11111111111111111111111111111111-2222222222222222-01';
    const failure = await complete(
      { ...request('sim@status=503'), headers: { traceparent: own } },
      { fetch: sim.fetch, telemetry },
    ).catch((error: unknown) => error);
    assert.ok(failure instanceof HttpError);
    const span = otel.spans().at(-1)!;
    assert.equal(span.status.code, SpanStatusCode.ERROR);
    assert.equal(span.attributes['error.type'], '503');
    assert.equal(span.attributes['http.response.status_code'], 503);
    assert.equal(sim.stats.log.at(-1)?.headers?.traceparent, own);
  });

  it('records gen_ai.client.* metrics', async () => {
    const metrics = await otel.collect();
    const duration = histogram(metrics, 'gen_ai.client.operation.duration');
    assert.equal(duration.unit, 's');
    assert.equal(duration.count, 3);
    assert.deepEqual(
      duration.points
        .filter((p) => p.attributes['error.type'] !== undefined)
        .map((p) => p.attributes['error.type']),
      ['503'],
    );
    assert.equal(histogram(metrics, 'gen_ai.client.operation.time_to_first_chunk').count, 2);
    assert.ok(histogram(metrics, 'gen_ai.client.operation.time_per_output_chunk').count >= 3);
    const tokens = histogram(metrics, 'gen_ai.client.token.usage');
    assert.equal(tokens.unit, '{token}');
    const output = tokens.points.filter((p) => p.attributes['gen_ai.token.type'] === 'output');
    assert.equal(
      output.reduce((n, p) => n + p.count, 0),
      2,
    );
  });

  it('without telemetry nothing is traced and nothing is added to the request', async () => {
    const before = otel.spans().length;
    await complete(request('sim', { max_tokens: 3 }), { fetch: sim.fetch });
    assert.equal(otel.spans().length, before);
    assert.equal(sim.stats.log.at(-1)?.headers?.traceparent, undefined);
  });
});
