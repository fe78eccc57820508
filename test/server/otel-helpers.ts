import type { Attributes, HrTime } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  type DataPoint,
  type Histogram,
  MeterProvider,
  MetricReader,
  type ResourceMetrics,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';

/** A reader that exports nothing on its own: the test collects when it wants the figures. */
class CollectingReader extends MetricReader {
  protected override onShutdown(): Promise<void> {
    return Promise.resolve();
  }
  protected override onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
}

export interface TestOtel {
  tracer: ReturnType<BasicTracerProvider['getTracer']>;
  meter: ReturnType<MeterProvider['getMeter']>;
  propagator: W3CTraceContextPropagator;
  spans(): ReadableSpan[];
  collect(): Promise<ResourceMetrics>;
  shutdown(): Promise<void>;
}

/** The real SDK with in-memory exporters: finished spans, and metrics collected on demand. */
export function testOtel(): TestOtel {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const reader = new CollectingReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  return {
    tracer: tracerProvider.getTracer('tokenwire-test'),
    meter: meterProvider.getMeter('tokenwire-test'),
    propagator: new W3CTraceContextPropagator(),
    spans: () => exporter.getFinishedSpans(),
    collect: async () => (await reader.collect()).resourceMetrics,
    shutdown: async () => {
      await tracerProvider.shutdown();
      await meterProvider.shutdown();
    },
  };
}

export interface HistogramPoints {
  unit: string;
  points: { attributes: Attributes; count: number; sum: number }[];
  count: number;
  sum: number;
}

/** Every data point of one histogram metric, by name. */
export function histogram(metrics: ResourceMetrics, name: string): HistogramPoints {
  const out: HistogramPoints = { unit: '', points: [], count: 0, sum: 0 };
  for (const scope of metrics.scopeMetrics) {
    for (const metric of scope.metrics) {
      if (metric.descriptor.name !== name) continue;
      out.unit = metric.descriptor.unit;
      for (const point of metric.dataPoints as DataPoint<Histogram>[]) {
        const sum = point.value.sum ?? 0;
        out.points.push({ attributes: point.attributes, count: point.value.count, sum });
        out.count += point.value.count;
        out.sum += sum;
      }
    }
  }
  return out;
}

export function ms(time: HrTime): number {
  return time[0] * 1000 + time[1] / 1e6;
}

/** Polls until `find` returns something (spans end when the stream ends, a moment after the client's read). */
export async function waitFor<T>(find: () => T | undefined, what: string, timeoutMs = 10000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = find();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
