import type { TimeoutOptions } from '../client/timeouts.ts';
import type { DialectId } from '../dialects/dialect.ts';
import { DIALECT_IDS } from '../dialects/dialect.ts';
import type { FetchLike, Upstream } from '../server/index.ts';
import { UsageError } from './cli-io.ts';
import { type ProbeResult, probeUpstream, unknownServerProblem } from './probe-upstream.ts';
import type { UpstreamConfig } from './serve-config.ts';

/** One upstream as asked for: from `--upstream URL` or from a `--config` file. */
export interface UpstreamSpec {
  name: string;
  /** Base URL, its path kept, no trailing slash. */
  url: string;
  dialects?: readonly DialectId[] | undefined;
  headers: Record<string, string>;
  weight?: number | undefined;
  maxStreams?: number | undefined;
  models?: readonly string[] | undefined;
  aliases?: Readonly<Record<string, string>> | undefined;
  /** Where it was asked for, for messages: `--upstream` or `pool.yaml:12`. */
  source: string;
}

/** What the banner and the `--json` record say of one upstream (no header, so no credential). */
export interface UpstreamSummary {
  name: string;
  url: string;
  dialects: readonly DialectId[];
  models: readonly string[];
  weight: number;
  maxStreams?: number;
  /** Set when its probe could not reach it at start: why ("connection refused"). */
  down?: string;
}

export interface ResolvedUpstreams {
  upstreams: Upstream[];
  summaries: UpstreamSummary[];
  /** Names of the upstreams that were down at start (still in `upstreams`). */
  downAtStart: string[];
  /** Said on stderr: upstreams left out (down, and no dialects to serve them with). */
  warnings: string[];
}

/**
 * The upstreams of `serve`, probed as one (in parallel: a server that times out costs its probe's time
 * once). A single `--upstream` without a config (`pool` false) is today's command: a probe that finds
 * nothing ends it (exit 1 when the server could not be reached, 2 otherwise). In a pool, an upstream that
 * cannot be reached is kept as down (named in the banner) when its dialects are known (configured or
 * `--upstream-dialect`), or left out with a warning; the gateway starts if any upstream is left.
 * Dialects given are not probed for (today's `--upstream-dialect`); in a pool the probe still runs, for
 * the model list and to see whether the server is up.
 */
export async function resolveUpstreams(
  specs: readonly UpstreamSpec[],
  options: {
    pool: boolean;
    probeFetch: FetchLike;
    upstreamFetch: FetchLike;
    timeouts: TimeoutOptions | undefined;
  },
): Promise<ResolvedUpstreams> {
  const probes = await Promise.all(
    specs.map((spec) =>
      spec.dialects !== undefined && !options.pool
        ? undefined
        : probeUpstream(spec.url, options.probeFetch, spec.headers, {
            newDialects: spec.dialects === undefined,
          }),
    ),
  );
  const resolved: ResolvedUpstreams = { upstreams: [], summaries: [], downAtStart: [], warnings: [] };
  specs.forEach((spec, index) => {
    const probe: ProbeResult | undefined = probes[index];
    let dialects = spec.dialects;
    let down: string | undefined;
    if (probe !== undefined && probe.dialects.length === 0) {
      const otherwise = options.pool
        ? `give its "dialects" in the config (${DIALECT_IDS.join(', ')})`
        : `pass --upstream-dialect (${DIALECT_IDS.join(', ')})`;
      const problem = unknownServerProblem(spec.url, probe, otherwise);
      if (!options.pool) {
        // A server that is down is not a usage error (exit 1); the rest is (exit 2).
        if (problem.connection) throw new Error(problem.message);
        throw new UsageError(problem.message);
      }
      if (probe.unreachable !== undefined) {
        down = probe.unreachable;
        if (dialects === undefined) {
          resolved.warnings.push(
            `upstream ${spec.name} (${spec.source}) is down at start (${down}) and has no dialects given: left out; give its "dialects" in the config to keep it`,
          );
          return;
        }
      } else if (dialects === undefined) {
        throw new UsageError(`upstream ${spec.name} (${spec.source}): ${problem.message}`);
      }
    }
    dialects ??= probe?.dialects ?? [];
    const models = spec.models ?? probe?.models ?? [];
    const upstream: Upstream = {
      name: spec.name,
      url: spec.url,
      dialects,
      headers: spec.headers,
      models,
      // llama-server (without its router) and TGI answer any model name with the one they run.
      anyModelName: probe?.server === 'llamacpp' || probe?.server === 'tgi',
      fetch: options.upstreamFetch,
      timeouts: options.timeouts,
    };
    // Models the server listed itself are read again while the gateway runs.
    if (spec.models === undefined && probe !== undefined) upstream.discoverModels = true;
    if (spec.weight !== undefined) upstream.weight = spec.weight;
    if (spec.maxStreams !== undefined) upstream.maxStreams = spec.maxStreams;
    if (spec.aliases !== undefined) upstream.aliases = spec.aliases;
    resolved.upstreams.push(upstream);
    const summary: UpstreamSummary = {
      name: spec.name,
      url: spec.url,
      dialects,
      models,
      weight: spec.weight ?? 1,
    };
    if (spec.maxStreams !== undefined) summary.maxStreams = spec.maxStreams;
    if (down !== undefined) {
      summary.down = down;
      resolved.downAtStart.push(spec.name);
    }
    resolved.summaries.push(summary);
  });
  if (resolved.upstreams.length === 0)
    throw new Error(`no upstream is left to serve: ${resolved.warnings.join('; ')}`);
  return resolved;
}

/** The specs of a config file's upstreams. */
export function specsFromConfig(upstreams: readonly UpstreamConfig[], fileName: string): UpstreamSpec[] {
  return upstreams.map((upstream) => ({
    name: upstream.name,
    url: upstream.url,
    dialects: upstream.dialects,
    headers: upstream.headers ?? {},
    weight: upstream.weight,
    maxStreams: upstream.maxStreams,
    models: upstream.models,
    aliases: upstream.aliases,
    source: `${fileName}:${upstream.line}`,
  }));
}

/** One banner line for an upstream: name, URL, dialects, models, weight (never its headers). */
export function upstreamLine(summary: UpstreamSummary): string {
  const parts = [
    `${summary.name}  ${summary.url}`,
    `(${summary.dialects.join(', ')})`,
    `models: ${summary.models.length > 0 ? summary.models.join(', ') : 'any'}`,
    `weight ${summary.weight}`,
  ];
  if (summary.maxStreams !== undefined) parts.push(`at most ${summary.maxStreams} streams`);
  return parts.join('  ');
}
