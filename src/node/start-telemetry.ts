import type { Meter, TextMapPropagator, Tracer } from '../client/otel-types.ts';
import { requirePackages } from './optional-package.ts';

/** What `startTelemetry` set up: hand `tracer`, `meter` and `propagator` to `createGateway({telemetry})`. */
export interface StartedTelemetry {
  tracer: Tracer | undefined;
  meter: Meter | undefined;
  propagator: TextMapPropagator;
  /** One line per signal, for a start-up banner: `traces: OTLP/HTTP JSON -> http://…/v1/traces`. */
  description: string[];
  /** Settings that were read but cannot be honoured (e.g. `OTEL_EXPORTER_OTLP_PROTOCOL=grpc`). */
  warnings: string[];
  /** Flushes what is buffered and stops the exporters (bounded by `timeoutMs`, default 5000). */
  shutdown(timeoutMs?: number): Promise<void>;
}

export interface StartTelemetryOptions {
  /** `service.name` when OTEL_SERVICE_NAME does not say. Default `tokenwire`. */
  serviceName?: string | undefined;
  serviceVersion?: string | undefined;
  /** Where OpenTelemetry's own warnings (failed exports…) go. Default: stderr. */
  log?: ((line: string) => void) | undefined;
}

type Exporter = 'otlp' | 'console';
type Signal = 'TRACES' | 'METRICS';

/**
 * OpenTelemetry for a Node process, configured by the standard `OTEL_*` variables and off unless
 * they ask for it: returns undefined when `OTEL_SDK_DISABLED=true`, or when neither
 * `OTEL_TRACES_EXPORTER`/`OTEL_METRICS_EXPORTER` name an exporter nor an OTLP endpoint is set
 * (`OTEL_EXPORTER_OTLP_ENDPOINT`, `…_TRACES_ENDPOINT`, `…_METRICS_ENDPOINT`).
 *
 * Exporters: `otlp` (OTLP over HTTP with JSON bodies, to `…/v1/traces` and `…/v1/metrics`;
 * `OTEL_EXPORTER_OTLP_HEADERS`/`_TIMEOUT`/`_COMPRESSION` and the per-signal forms apply) and `console`.
 * Also read: `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER(_ARG)`, `OTEL_BSP_*`,
 * `OTEL_METRIC_EXPORT_INTERVAL`/`_TIMEOUT`, `OTEL_PROPAGATORS` (`tracecontext`, `baggage`, `none`),
 * `OTEL_LOG_LEVEL`. Nothing is registered globally: the caller passes the tracer and meter on.
 *
 * The SDK packages (optional peer dependencies) are loaded only when telemetry is on; when one is not
 * installed, this rejects with a `MissingPackageError` naming the `npm install` that fixes it. `env`
 * decides what is on and where it goes;
 * the SDK reads the remaining details (timeouts, TLS files, sampler) from `process.env`.
 */
export async function startTelemetry(
  env: Record<string, string | undefined> = process.env,
  options: StartTelemetryOptions = {},
): Promise<StartedTelemetry | undefined> {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return undefined;
  const warnings: string[] = [];
  const traces = exportersFor(env, 'TRACES', warnings);
  const metrics = exportersFor(env, 'METRICS', warnings);
  if (traces.length === 0 && metrics.length === 0) return undefined;
  for (const signal of ['TRACES', 'METRICS'] as const) {
    const protocol = (
      env[`OTEL_EXPORTER_OTLP_${signal}_PROTOCOL`] ?? env.OTEL_EXPORTER_OTLP_PROTOCOL
    )?.trim();
    if (protocol === 'grpc')
      warnings.push(
        `OTLP over gRPC is not built in: ${signal.toLowerCase()} are sent over HTTP (JSON) instead`,
      );
  }

  // The SDK is an optional peer dependency: every package the settings need is checked before any loads.
  const needed = ['@opentelemetry/api', '@opentelemetry/core', '@opentelemetry/resources'];
  if (traces.length > 0) needed.push('@opentelemetry/sdk-trace-base');
  if (traces.includes('otlp')) needed.push('@opentelemetry/exporter-trace-otlp-http');
  if (metrics.length > 0) needed.push('@opentelemetry/sdk-metrics');
  if (metrics.includes('otlp')) needed.push('@opentelemetry/exporter-metrics-otlp-http');
  requirePackages(needed, 'Exporting OpenTelemetry traces and metrics (the OTEL_* settings)');
  const [api, core, resources] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/core'),
    import('@opentelemetry/resources'),
  ]);
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  setDiagLogger(api, env.OTEL_LOG_LEVEL, log);

  const resource = resources
    .defaultResource()
    .merge(
      resources.resourceFromAttributes({
        'service.name': options.serviceName ?? 'tokenwire',
        ...(options.serviceVersion === undefined ? {} : { 'service.version': options.serviceVersion }),
      }),
    )
    .merge(resources.resourceFromAttributes(resourceAttributesFrom(env)));
  const description: string[] = [];
  const stops: (() => Promise<void>)[] = [];

  let tracer: Tracer | undefined;
  if (traces.length > 0) {
    const sdk = await import('@opentelemetry/sdk-trace-base');
    const processors = [];
    for (const exporter of traces) {
      if (exporter === 'console') {
        processors.push(new sdk.SimpleSpanProcessor(new sdk.ConsoleSpanExporter()));
        description.push('traces: console');
      } else {
        const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
        const url = endpointFor(env, 'TRACES');
        processors.push(
          new sdk.BatchSpanProcessor(new OTLPTraceExporter({ url, headers: headersFor(env, 'TRACES') })),
        );
        description.push(`traces: OTLP/HTTP JSON -> ${url}`);
      }
    }
    const provider = new sdk.BasicTracerProvider({ resource, spanProcessors: processors });
    tracer = provider.getTracer('tokenwire', options.serviceVersion);
    stops.push(() => provider.shutdown());
  }

  let meter: Meter | undefined;
  if (metrics.length > 0) {
    const sdk = await import('@opentelemetry/sdk-metrics');
    const interval = positiveNumber(env.OTEL_METRIC_EXPORT_INTERVAL) ?? 60000;
    const timeout = Math.min(positiveNumber(env.OTEL_METRIC_EXPORT_TIMEOUT) ?? 30000, interval);
    const readers = [];
    for (const exporter of metrics) {
      if (exporter === 'console') {
        readers.push(
          new sdk.PeriodicExportingMetricReader({
            exporter: new sdk.ConsoleMetricExporter(),
            exportIntervalMillis: interval,
            exportTimeoutMillis: timeout,
          }),
        );
        description.push(`metrics: console, every ${interval} ms`);
      } else {
        const { OTLPMetricExporter } = await import('@opentelemetry/exporter-metrics-otlp-http');
        const url = endpointFor(env, 'METRICS');
        readers.push(
          new sdk.PeriodicExportingMetricReader({
            exporter: new OTLPMetricExporter({ url, headers: headersFor(env, 'METRICS') }),
            exportIntervalMillis: interval,
            exportTimeoutMillis: timeout,
          }),
        );
        description.push(`metrics: OTLP/HTTP JSON -> ${url}, every ${interval} ms`);
      }
    }
    const provider = new sdk.MeterProvider({ resource, readers });
    meter = provider.getMeter('tokenwire', options.serviceVersion);
    stops.push(() => provider.shutdown());
  }

  const propagators: TextMapPropagator[] = [];
  for (const name of (env.OTEL_PROPAGATORS ?? 'tracecontext,baggage').split(',').map((p) => p.trim())) {
    if (name === 'tracecontext') propagators.push(new core.W3CTraceContextPropagator());
    else if (name === 'baggage') propagators.push(new core.W3CBaggagePropagator());
    else if (name !== '' && name !== 'none')
      warnings.push(`OTEL_PROPAGATORS: ${name} is not supported (ignored)`);
  }

  return {
    tracer,
    meter,
    propagator: new core.CompositePropagator({ propagators }),
    description,
    warnings,
    shutdown: async (timeoutMs = 5000) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        Promise.allSettled(stops.map((stop) => stop())),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, timeoutMs);
        }),
      ]);
      if (timer !== undefined) clearTimeout(timer);
    },
  };
}

function exportersFor(
  env: Record<string, string | undefined>,
  signal: Signal,
  warnings: string[],
): Exporter[] {
  const raw = env[`OTEL_${signal}_EXPORTER`]?.trim();
  if (raw === undefined || raw === '') {
    // Unset: the spec's default is `otlp`, but tokenwire stays quiet until an endpoint is given.
    const endpoint = env[`OTEL_EXPORTER_OTLP_${signal}_ENDPOINT`] ?? env.OTEL_EXPORTER_OTLP_ENDPOINT;
    return endpoint !== undefined && endpoint.trim() !== '' ? ['otlp'] : [];
  }
  const names = raw
    .toLowerCase()
    .split(',')
    .map((n) => n.trim());
  if (names.includes('none')) return [];
  const out: Exporter[] = [];
  for (const name of names) {
    if ((name === 'otlp' || name === 'console') && !out.includes(name)) out.push(name);
    else if (name !== '' && name !== 'otlp' && name !== 'console')
      warnings.push(`OTEL_${signal}_EXPORTER: ${name} is not supported (otlp, console or none)`);
  }
  return out;
}

/** The signal's URL, as the spec builds it: the per-signal variable as is, else the base plus `/v1/<signal>`. */
export function endpointFor(env: Record<string, string | undefined>, signal: Signal): string {
  const specific = env[`OTEL_EXPORTER_OTLP_${signal}_ENDPOINT`]?.trim();
  if (specific !== undefined && specific !== '') return specific;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || 'http://localhost:4318';
  return `${base.replace(/\/+$/, '')}/v1/${signal.toLowerCase()}`;
}

/** `OTEL_EXPORTER_OTLP_HEADERS` and the per-signal form (`k1=v1,k2=v2`, values URL-encoded). */
function headersFor(env: Record<string, string | undefined>, signal: Signal): Record<string, string> {
  return {
    ...parseList(env.OTEL_EXPORTER_OTLP_HEADERS),
    ...parseList(env[`OTEL_EXPORTER_OTLP_${signal}_HEADERS`]),
  };
}

function resourceAttributesFrom(env: Record<string, string | undefined>): Record<string, string> {
  const attributes = parseList(env.OTEL_RESOURCE_ATTRIBUTES);
  const name = env.OTEL_SERVICE_NAME?.trim();
  if (name !== undefined && name !== '') attributes['service.name'] = name;
  return attributes;
}

function parseList(raw: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (raw === undefined) return out;
  for (const pair of raw.split(',')) {
    const at = pair.indexOf('=');
    if (at <= 0) continue;
    const key = pair.slice(0, at).trim();
    try {
      out[key] = decodeURIComponent(pair.slice(at + 1).trim());
    } catch {
      out[key] = pair.slice(at + 1).trim();
    }
  }
  return out;
}

function positiveNumber(raw: string | undefined): number | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  const n = Number(raw);
  return Number.isFinite(n) && n > 0 ? n : undefined;
}

/** OpenTelemetry's own diagnostics (a failed export…) to `log`, at OTEL_LOG_LEVEL (default warn). */
function setDiagLogger(
  api: typeof import('@opentelemetry/api'),
  level: string | undefined,
  log: (line: string) => void,
): void {
  const levels: Record<string, number> = {
    none: api.DiagLogLevel.NONE,
    error: api.DiagLogLevel.ERROR,
    warn: api.DiagLogLevel.WARN,
    info: api.DiagLogLevel.INFO,
    debug: api.DiagLogLevel.DEBUG,
    verbose: api.DiagLogLevel.VERBOSE,
    all: api.DiagLogLevel.ALL,
  };
  const chosen = levels[level?.trim().toLowerCase() ?? 'warn'] ?? api.DiagLogLevel.WARN;
  const write =
    (tag: string) =>
    (message: string, ...args: unknown[]) =>
      log(
        `opentelemetry ${tag}: ${[message, ...args.map((a) => (a instanceof Error ? a.message : String(a)))].join(' ')}`,
      );
  api.diag.setLogger(
    {
      error: write('error'),
      warn: write('warn'),
      info: write('info'),
      debug: write('debug'),
      verbose: write('verbose'),
    },
    { logLevel: chosen, suppressOverrideMessage: true },
  );
}
