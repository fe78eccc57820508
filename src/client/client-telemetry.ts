import { dialectForPath } from '../dialects/registry.ts';
import type { Result } from '../events/result.ts';
import type { StreamRequest } from './build-request.ts';
import { HttpError, RequestFailedError } from './client-errors.ts';
import {
  DURATION_BUCKETS,
  FIRST_CHUNK_BUCKETS,
  genAiFinishWord,
  genAiOperation,
  genAiProvider,
  SPAN_KIND_CLIENT,
  STATUS_ERROR,
  TOKEN_BUCKETS,
} from './gen-ai-conventions.ts';
import type { Attributes, Histogram, Meter, Span, Tracer } from './otel-types.ts';

/**
 * OpenTelemetry for one `stream()` / `complete()` call, following the GenAI semantic conventions: a
 * CLIENT span `{operation} {model}` that ends when the stream ends, with the usage, finish reason,
 * time to first chunk and how it ended; and the `gen_ai.client.*` metrics. Pass the tracer and/or meter
 * of your SDK. The client never loads `@opentelemetry/api` itself: these objects are all it uses.
 */
export interface ClientTelemetry {
  tracer?: Tracer | undefined;
  meter?: Meter | undefined;
  /** `gen_ai.provider.name`. Default per dialect: `openai_compatible`, `ollama`, `llama.cpp`, `hf.tgi`. */
  providerName?: string | undefined;
  /** Send the span's context as `traceparent`/`tracestate` (unless the request sets them). Default true. */
  propagate?: boolean | undefined;
}

interface Instruments {
  duration: Histogram;
  timeToFirstChunk: Histogram;
  timePerOutputChunk: Histogram;
  tokenUsage: Histogram;
}

/** Instruments are created once per meter. */
const instrumentsByMeter = new WeakMap<Meter, Instruments>();

function instrumentsFor(meter: Meter): Instruments {
  let instruments = instrumentsByMeter.get(meter);
  if (instruments === undefined) {
    const seconds = (name: string, description: string, buckets: number[]) =>
      meter.createHistogram(name, { description, unit: 's', advice: { explicitBucketBoundaries: buckets } });
    instruments = {
      duration: seconds(
        'gen_ai.client.operation.duration',
        'GenAI operation duration, to the end of the stream.',
        DURATION_BUCKETS,
      ),
      timeToFirstChunk: seconds(
        'gen_ai.client.operation.time_to_first_chunk',
        'Time from the request to the first content chunk of the stream.',
        FIRST_CHUNK_BUCKETS,
      ),
      timePerOutputChunk: seconds(
        'gen_ai.client.operation.time_per_output_chunk',
        'Time between content chunks after the first.',
        FIRST_CHUNK_BUCKETS,
      ),
      tokenUsage: meter.createHistogram('gen_ai.client.token.usage', {
        description:
          'Input and output tokens used (an aborted stream counts what was generated before the abort).',
        unit: '{token}',
        advice: { explicitBucketBoundaries: TOKEN_BUCKETS },
      }),
    };
    instrumentsByMeter.set(meter, instruments);
  }
  return instruments;
}

/**
 * Runs one streaming call under a span and records its metrics. `run` gets the request to send (with
 * `traceparent` added when the span is sampled and propagation is on).
 */
export async function traceStream(
  telemetry: ClientTelemetry,
  request: StreamRequest,
  run: (request: StreamRequest) => Promise<Result>,
): Promise<Result> {
  let url: URL | undefined;
  try {
    url = new URL(String(request.url));
  } catch {
    return run(request); // the run reports the bad URL as usual
  }
  const dialect = request.dialect ?? dialectForPath(url.pathname)?.id;
  const operation = genAiOperation(dialect);
  const model =
    (typeof request.body?.model === 'string' ? request.body.model : undefined) ?? request.request?.model;
  const port = url.port !== '' ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
  const metricAttributes: Attributes = {
    'gen_ai.operation.name': operation,
    'gen_ai.provider.name': telemetry.providerName ?? genAiProvider(dialect),
    'server.address': url.hostname,
    'server.port': port,
  };
  if (model !== undefined) metricAttributes['gen_ai.request.model'] = model;

  let span: Span | undefined;
  let sent = request;
  if (telemetry.tracer !== undefined) {
    const attributes: Attributes = { ...metricAttributes, 'gen_ai.request.stream': true };
    if (dialect !== undefined) attributes['tokenwire.dialect'] = dialect;
    span = telemetry.tracer.startSpan(`${operation}${model === undefined ? '' : ` ${model}`}`, {
      kind: SPAN_KIND_CLIENT,
      attributes,
    });
    const headers = { ...request.headers };
    const given = Object.keys(headers).some((name) => name.toLowerCase() === 'traceparent');
    const context = span.spanContext();
    // An all-zero trace id is the no-op tracer's: nothing to continue.
    if (telemetry.propagate !== false && !given && !/^0+$/.test(context.traceId)) {
      headers.traceparent = `00-${context.traceId}-${context.spanId}-0${(context.traceFlags & 1).toString(16)}`;
      const state = context.traceState?.serialize();
      if (state !== undefined && state !== '') headers.tracestate = state;
      sent = { ...request, headers };
    }
  }

  const started = performance.now();
  let result: Result;
  try {
    result = await run(sent);
  } catch (error) {
    const type =
      error instanceof HttpError
        ? String(error.status)
        : error instanceof RequestFailedError
          ? error.code
          : '_OTHER';
    if (span !== undefined) {
      if (error instanceof HttpError) span.setAttribute('http.response.status_code', error.status);
      span.setAttribute('error.type', type);
      span.setStatus({ code: STATUS_ERROR, message: error instanceof Error ? error.message : String(error) });
      span.end();
    }
    if (telemetry.meter !== undefined) {
      instrumentsFor(telemetry.meter).duration.record((performance.now() - started) / 1000, {
        ...metricAttributes,
        'error.type': type,
      });
    }
    throw error;
  }

  const endState = !result.complete
    ? result.incomplete === 'aborted'
      ? 'cancelled'
      : result.incomplete === 'server-error'
        ? 'error'
        : 'incomplete'
    : result.truncated
      ? 'truncated'
      : 'completed';
  const failed = endState === 'error' || endState === 'incomplete';
  const type = failed ? (result.error?.code ?? result.incomplete ?? '_OTHER') : undefined;
  const output = result.usage?.outputTokens ?? result.metrics.outputTokens;
  const input = result.usage?.inputTokens;
  const common: Attributes = { ...metricAttributes };
  if (result.model !== undefined) common['gen_ai.response.model'] = result.model;

  if (span !== undefined) {
    const attributes: Attributes = {
      'tokenwire.stream.end_state': endState,
      'tokenwire.stream.chunks': result.metrics.chunkCount,
      'tokenwire.usage.output_tokens_estimated': result.metrics.outputTokensEstimated,
    };
    if (result.model !== undefined) attributes['gen_ai.response.model'] = result.model;
    if (result.id !== undefined) attributes['gen_ai.response.id'] = result.id;
    if (result.finishReason !== undefined)
      attributes['gen_ai.response.finish_reasons'] = [genAiFinishWord(result)!];
    if (input !== undefined) attributes['gen_ai.usage.input_tokens'] = input;
    if (output !== undefined) attributes['gen_ai.usage.output_tokens'] = output;
    if (result.metrics.ttftMs !== undefined) {
      attributes['gen_ai.response.time_to_first_chunk'] = result.metrics.ttftMs / 1000;
      // The first token's moment, on the span's timeline.
      span.addEvent(
        'tokenwire.first_token',
        { 'gen_ai.response.time_to_first_chunk': result.metrics.ttftMs / 1000 },
        performance.timeOrigin + started + result.metrics.ttftMs,
      );
    }
    if (result.incomplete !== undefined) attributes['tokenwire.stream.incomplete_reason'] = result.incomplete;
    if (type !== undefined) attributes['error.type'] = type;
    span.setAttributes(attributes);
    if (failed) span.setStatus({ code: STATUS_ERROR, message: result.error?.message ?? endState });
    span.end();
  }

  if (telemetry.meter !== undefined) {
    const instruments = instrumentsFor(telemetry.meter);
    instruments.duration.record(
      (result.metrics.totalMs ?? performance.now() - started) / 1000,
      type === undefined ? common : { ...common, 'error.type': type },
    );
    if (result.metrics.ttftMs !== undefined)
      instruments.timeToFirstChunk.record(result.metrics.ttftMs / 1000, common);
    for (const gap of result.metrics.interChunkMs) instruments.timePerOutputChunk.record(gap / 1000, common);
    if (input !== undefined)
      instruments.tokenUsage.record(input, { ...common, 'gen_ai.token.type': 'input' });
    if (output !== undefined)
      instruments.tokenUsage.record(output, { ...common, 'gen_ai.token.type': 'output' });
  }
  return result;
}
