/**
 * The few OpenTelemetry API types tokenwire uses, declared here by their shape (a subset of
 * `@opentelemetry/api` 1.x) instead of imported: `@opentelemetry/api` is an optional peer dependency, and
 * a type imported from it would be imported by our emitted `.d.ts` files too, so a project without it
 * would fail `tsc` without `skipLibCheck`. The API's own objects fit these shapes (the code that loads
 * the API assigns its objects to them, so the compiler checks they do, and
 * test/client/otel-types.test.ts checks the user's side: a real Tracer, Meter and propagator are accepted).
 */

/** An attribute's value (the API's `AttributeValue`). */
export type AttributeValue =
  | string
  | number
  | boolean
  | Array<null | undefined | string>
  | Array<null | undefined | number>
  | Array<null | undefined | boolean>;

/** Span and metric attributes (the API's `Attributes`). */
export interface Attributes {
  [key: string]: AttributeValue | undefined;
}

/** The API's `Context`: an immutable map carried across calls. */
export interface Context {
  getValue(key: symbol): unknown;
  setValue(key: symbol, value: unknown): Context;
  deleteValue(key: symbol): Context;
}

/** The API's `TraceState` (the `tracestate` header's entries). */
export interface TraceState {
  serialize(): string;
}

/** The API's `SpanContext`. */
export interface SpanContext {
  traceId: string;
  spanId: string;
  traceFlags: number;
  isRemote?: boolean;
  traceState?: TraceState;
}

/** The numeric values of the API's `SpanKind` and `SpanStatusCode` enums. */
export type SpanKind = 0 | 1 | 2 | 3 | 4;
export type SpanStatusCode = 0 | 1 | 2;

/** A moment as the API takes it: ms since the epoch (a number), or a `Date`. */
export type TimeInput = number | Date;

/** The part of the API's `Span` tokenwire calls. */
export interface Span {
  spanContext(): SpanContext;
  setAttribute(key: string, value: AttributeValue): this;
  setAttributes(attributes: Attributes): this;
  addEvent(name: string, attributes?: Attributes, startTime?: TimeInput): this;
  setStatus(status: { code: SpanStatusCode; message?: string }): this;
  end(): void;
}

/** The part of the API's `Tracer` tokenwire calls. */
export interface Tracer {
  startSpan(name: string, options?: { kind?: SpanKind; attributes?: Attributes }, context?: Context): Span;
}

/** The part of the API's `Histogram` tokenwire calls. */
export interface Histogram {
  record(value: number, attributes?: Attributes): void;
}

/** The part of the API's `Meter` tokenwire calls. */
export interface Meter {
  createHistogram(
    name: string,
    options?: {
      description?: string;
      unit?: string;
      advice?: { explicitBucketBoundaries?: number[] };
    },
  ): Histogram;
}

/** The API's `TextMapGetter`: reads a carrier's headers. */
export interface TextMapGetter<Carrier> {
  keys(carrier: Carrier): string[];
  get(carrier: Carrier, key: string): undefined | string | string[];
}

/** The API's `TextMapSetter`: writes a carrier's headers. */
export interface TextMapSetter<Carrier> {
  set(carrier: Carrier, key: string, value: string): void;
}

/** The API's `TextMapPropagator` (`traceparent` in and out). */
export interface TextMapPropagator<Carrier = unknown> {
  inject(context: Context, carrier: Carrier, setter: TextMapSetter<Carrier>): void;
  extract(context: Context, carrier: Carrier, getter: TextMapGetter<Carrier>): Context;
  fields(): string[];
}

/** The part of the `@opentelemetry/api` module the gateway calls once it has loaded it. */
export interface OtelApi {
  ROOT_CONTEXT: Context;
  trace: {
    getTracer(name: string): Tracer;
    getSpanContext(context: Context): SpanContext | undefined;
    setSpanContext(context: Context, spanContext: SpanContext): Context;
    setSpan(context: Context, span: Span): Context;
  };
  metrics: { getMeter(name: string): Meter };
  propagation: TextMapPropagator;
  isSpanContextValid(spanContext: SpanContext): boolean;
  createTraceState(rawTraceState?: string): TraceState;
}
