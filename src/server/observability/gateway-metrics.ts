import { Counter, Gauge, Histogram, Registry } from './prometheus.ts';

/** How a relayed stream ended, as counted in /metrics. */
export type StreamOutcome = 'completed' | 'cancelled' | 'incomplete' | 'error';

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const GAP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5];

/** The gateway's Prometheus metrics, per route (the client's dialect) and upstream. */
export class GatewayMetrics {
  readonly registry = new Registry();
  readonly requests = this.registry.register(
    new Counter('tokenwire_requests_total', 'Requests received, by route and upstream.'),
  );
  readonly retries = this.registry.register(
    new Counter(
      'tokenwire_upstream_retries_total',
      'Requests sent to another replica after a failure before their first byte, by route, the replica that failed and how.',
    ),
  );
  readonly continuations = this.registry.register(
    new Counter(
      'tokenwire_continuations_total',
      'Streams whose upstream failed mid-answer, by route, the replica that failed and the result: continued on another replica, failed (the continuation failed too) or refused (none could go on).',
    ),
  );
  readonly continuationGap = this.registry.register(
    new Histogram(
      'tokenwire_continuation_gap_seconds',
      'From an upstream failure mid-answer to the continuation’s first event written, by route and the replica that went on.',
      [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    ),
  );
  readonly upstreamUp = this.registry.register(
    new Gauge(
      'tokenwire_upstream_up',
      'Whether each upstream takes requests now (0 while cooling down or loading).',
    ),
  );
  readonly upstreamInFlight = this.registry.register(
    new Gauge('tokenwire_upstream_in_flight', 'Streams open to each upstream.'),
  );
  readonly upstreamPicks = this.registry.register(
    new Counter('tokenwire_upstream_picks_total', 'Requests sent to each upstream (retries included).'),
  );
  readonly upstreamFailures = this.registry.register(
    new Counter(
      'tokenwire_upstream_failures_total',
      'Calls to each upstream that failed, by kind: unreachable (refused, reset, cut), server-error, timeout.',
    ),
  );
  readonly upstreamCooldowns = this.registry.register(
    new Counter(
      'tokenwire_upstream_cooldowns_total',
      'Times each upstream was taken out of rotation after failures.',
    ),
  );
  readonly rejected = this.registry.register(
    new Counter('tokenwire_rejected_total', 'Requests refused before streaming, by route and status.'),
  );
  readonly streams = this.registry.register(
    new Counter(
      'tokenwire_streams_total',
      'Streams ended, by outcome: completed (incl. truncated by length), cancelled (client left), incomplete (upstream cut, timeout, malformed), error (upstream error).',
    ),
  );
  readonly truncated = this.registry.register(
    new Counter(
      'tokenwire_truncated_total',
      'Completed streams the output cap cut off (finish reason length).',
    ),
  );
  readonly active = this.registry.register(
    new Gauge('tokenwire_active_streams', 'Streams being relayed now.'),
  );
  readonly ttft = this.registry.register(
    new Histogram('tokenwire_ttft_seconds', 'Time from request to first content, seconds.', LATENCY_BUCKETS),
  );
  readonly interChunk = this.registry.register(
    new Histogram(
      'tokenwire_inter_chunk_seconds',
      'Gaps between content chunks relayed, seconds.',
      GAP_BUCKETS,
    ),
  );
  readonly duration = this.registry.register(
    new Histogram('tokenwire_stream_duration_seconds', 'Whole stream duration, seconds.', LATENCY_BUCKETS),
  );
  readonly inputTokens = this.registry.register(
    new Counter('tokenwire_input_tokens_total', 'Prompt tokens, as the upstream reported them.'),
  );
  readonly outputTokens = this.registry.register(
    new Counter(
      'tokenwire_output_tokens_total',
      'Generated tokens, including those of cancelled streams; source="estimate" where the upstream gave no count.',
    ),
  );
  readonly resumes = this.registry.register(
    new Counter('tokenwire_resumes_total', 'Reconnections with Last-Event-ID, by result.'),
  );

  render(): string {
    return this.registry.render();
  }
}
