import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as api from '@opentelemetry/api';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import type { ClientTelemetry } from '../../src/client/client-telemetry.ts';
import type { Meter, OtelApi, TextMapPropagator, Tracer } from '../../src/client/otel-types.ts';
import type { GatewayTelemetryOptions } from '../../src/server/observability/gateway-telemetry.ts';

/**
 * tokenwire declares the OpenTelemetry types it uses by their shape (src/client/otel-types.ts), so its
 * `.d.ts` files never import the optional `@opentelemetry/api`. What a user hands over must still fit:
 * these assignments are checked by the compiler (the test does not build if a shape drifts from the API's).
 */
describe('OpenTelemetry types declared by shape', () => {
  it("accepts the API's and the SDK's tracer, meter and propagator where tokenwire takes them", () => {
    const sdkTracer: Tracer = new BasicTracerProvider().getTracer('t');
    const sdkMeter: Meter = new MeterProvider().getMeter('m');
    const apiTracer: Tracer = api.trace.getTracer('t');
    const apiMeter: Meter = api.metrics.getMeter('m');
    const propagator: TextMapPropagator = api.propagation;
    const module: OtelApi = api;
    const client: ClientTelemetry = { tracer: sdkTracer, meter: sdkMeter };
    const gateway: GatewayTelemetryOptions = { tracer: apiTracer, meter: apiMeter, propagator };
    // And a span started through our shape is the SDK's own, ended through it.
    const span = sdkTracer.startSpan('s', { kind: 1, attributes: { a: 1 } }, module.ROOT_CONTEXT);
    span.setAttribute('b', 'x').addEvent('e', { c: true }, Date.now()).end();
    assert.equal(span.spanContext().traceId.length, 32);
    assert.equal(client.tracer, sdkTracer);
    assert.equal(gateway.propagator, api.propagation);
  });
});
