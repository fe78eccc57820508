import type { Result } from '../events/result.ts';
import { type Distribution, type HistogramBin, LatencyHistogram } from './latency-histogram.ts';
import { describeLoad, type LoadJson, type LoadSpec, loadJson } from './load.ts';
import { type RequestFigures, type RequestStatus, requestFigures } from './request-figures.ts';
import { meetsSlo, type Slo } from './slo.ts';
import { Timeline, type TimelineSeries } from './timeline.ts';

/** The distributions a level reports (keys of `LevelResult.metrics`). */
export type MetricKey =
  | 'ttft'
  | 'ttfb'
  | 'itl'
  | 'tpot'
  | 'e2e'
  | 'tokensPerSecond'
  | 'outputTokens'
  | 'lag'
  | 'queue'
  | 'load'
  | 'promptEval'
  | 'firstToken';

export const METRIC_KEYS: readonly MetricKey[] = [
  'ttft',
  'ttfb',
  'itl',
  'tpot',
  'e2e',
  'tokensPerSecond',
  'outputTokens',
  'lag',
  'queue',
  'load',
  'promptEval',
  'firstToken',
];

/** One request in the full results. Times in ms; `intendedMs` from the level's start. */
export interface RequestRow {
  index: number;
  intendedMs: number;
  status: RequestStatus;
  lagMs: number;
  ttfbMs?: number | undefined;
  ttftMs?: number | undefined;
  e2eMs: number;
  tpotMs?: number | undefined;
  outputTokens: number;
  tokensEstimated: boolean;
  inputTokens?: number | undefined;
  chunks: number;
  /** Incomplete: why (`connection-closed`, `idle-timeout`…); failed: the error code. */
  reason?: string | undefined;
  good?: boolean | undefined;
}

export interface ErrorCount {
  code: string;
  count: number;
  /** The first message seen with this code. */
  example: string;
}

/** Everything one load level measured. Plain data: `JSON.stringify` gives the `--json` output. */
export interface LevelResult {
  label: string;
  load: LoadJson;
  workload: string;
  /** ISO time the level started. */
  startedAt: string;
  /** From the first intended send to the last request's end. */
  durationMs: number;
  counts: {
    sent: number;
    completed: number;
    truncated: number;
    incomplete: number;
    failed: number;
    /** Completed requests whose output token count was estimated (the server sent no usage). */
    tokensEstimated: number;
  };
  /** Incomplete and failed requests by reason or error code. */
  errors: ErrorCount[];
  tokens: { input: number; output: number };
  throughput: {
    /** Completed (incl. truncated) requests per second. */
    requestsPerSecond: number;
    /** Output tokens of completed requests per second. */
    outputTokensPerSecond: number;
    /** Input + output tokens of completed requests per second. */
    totalTokensPerSecond: number;
    /** Requests actually sent per second, over the time the sending took (the achieved offered load). */
    sendRate: number;
  };
  /** Distributions over completed requests (lag: over every request; TTFT split: where reported). */
  metrics: Record<MetricKey, Distribution>;
  goodput?: { slo: Slo; good: number; fraction: number; perSecond: number } | undefined;
  charts: { ttft: HistogramBin[]; itl: HistogramBin[]; timeline: TimelineSeries };
  requests?: RequestRow[] | undefined;
}

/**
 * Collects the figures of a level's requests as they end: HDR histograms, counts, the timeline and
 * (optionally) one row per request. Pure: fed Results and times, it never touches the clock.
 */
export class LevelRecorder {
  readonly #hist: Record<MetricKey, LatencyHistogram>;
  readonly #timeline: Timeline;
  readonly #rows: RequestRow[] | undefined;
  readonly #slo: Slo | undefined;
  readonly #errors = new Map<string, ErrorCount>();
  #sent = 0;
  #completed = 0;
  #truncated = 0;
  #incomplete = 0;
  #failed = 0;
  #estimated = 0;
  #good = 0;
  #inputTokens = 0;
  #outputTokens = 0;
  #lastEndMs = 0;
  #lastSentMs = 0;

  constructor(options: { slo?: Slo | undefined; keepRequests?: boolean; bucketMs?: number } = {}) {
    const hist = {} as Record<MetricKey, LatencyHistogram>;
    for (const key of METRIC_KEYS) hist[key] = new LatencyHistogram();
    this.#hist = hist;
    this.#timeline = new Timeline(options.bucketMs ?? 100);
    this.#rows = options.keepRequests === false ? undefined : [];
    this.#slo = options.slo;
  }

  get finished(): number {
    return this.#completed + this.#truncated + this.#incomplete + this.#failed;
  }

  get ok(): number {
    return this.#completed + this.#truncated;
  }

  get notOk(): number {
    return this.#incomplete + this.#failed;
  }

  /** A request was sent, at `sentMs` from the level's start. */
  sent(sentMs: number): void {
    this.#sent += 1;
    if (sentMs > this.#lastSentMs) this.#lastSentMs = sentMs;
  }

  /**
   * A stream that ended with a Result. `intendedMs` and `sentMs` are from the level's start; the
   * Result's metrics count from the actual send.
   */
  result(index: number, intendedMs: number, sentMs: number, result: Result): RequestFigures {
    const figures = requestFigures(result, sentMs - intendedMs);
    const m = result.metrics;
    const ok = figures.status === 'completed' || figures.status === 'truncated';
    this.#count(figures.status, result.incomplete ?? result.error?.code, result.error?.message);
    const hist = this.#hist;
    hist.lag.record(figures.lagMs);
    if (ok) {
      if (figures.ttftMs !== undefined) hist.ttft.record(figures.ttftMs);
      if (figures.ttfbMs !== undefined) hist.ttfb.record(figures.ttfbMs);
      hist.e2e.record(figures.e2eMs);
      if (figures.tpotMs !== undefined) hist.tpot.record(figures.tpotMs);
      if (figures.tokensPerSecond !== undefined) hist.tokensPerSecond.record(figures.tokensPerSecond);
      hist.outputTokens.record(figures.outputTokens);
      const gaps = m.interChunkMs;
      for (let i = 0; i < gaps.length; i++) hist.itl.record(gaps[i] as number);
      const split = figures.breakdown;
      if (split !== undefined) {
        hist.queue.record(split.queueMs);
        if (split.loadMs !== undefined) hist.load.record(split.loadMs);
        hist.promptEval.record(split.promptEvalMs);
        hist.firstToken.record(split.firstTokenMs);
      }
      if (figures.tokensEstimated) this.#estimated += 1;
      this.#outputTokens += figures.outputTokens;
      this.#inputTokens += figures.inputTokens ?? 0;
    }
    const good =
      this.#slo === undefined
        ? undefined
        : meetsSlo(
            {
              ok,
              ttftMs: figures.ttftMs,
              ttfbMs: figures.ttfbMs,
              tpotMs: figures.tpotMs,
              e2eMs: figures.e2eMs,
            },
            this.#slo,
          );
    if (good === true) this.#good += 1;
    const endMs = sentMs + (m.totalMs ?? 0);
    const tokensPerChunk = m.chunkCount > 0 ? figures.outputTokens / m.chunkCount : 0;
    this.#timeline.request(
      sentMs,
      endMs,
      m.ttftMs === undefined ? undefined : sentMs + m.ttftMs,
      m.interChunkMs,
      tokensPerChunk,
      !ok,
    );
    if (endMs > this.#lastEndMs) this.#lastEndMs = endMs;
    if (this.#rows !== undefined) {
      const row: RequestRow = {
        index,
        intendedMs,
        status: figures.status,
        lagMs: figures.lagMs,
        e2eMs: figures.e2eMs,
        outputTokens: figures.outputTokens,
        tokensEstimated: figures.tokensEstimated,
        chunks: figures.chunkCount,
      };
      if (figures.ttfbMs !== undefined) row.ttfbMs = figures.ttfbMs;
      if (figures.ttftMs !== undefined) row.ttftMs = figures.ttftMs;
      if (figures.tpotMs !== undefined) row.tpotMs = figures.tpotMs;
      if (figures.inputTokens !== undefined) row.inputTokens = figures.inputTokens;
      const reason = result.incomplete;
      if (reason !== undefined) row.reason = reason;
      if (good !== undefined) row.good = good;
      this.#rows.push(row);
    }
    return figures;
  }

  /** A request that got no stream (it threw): `code` says why. */
  failure(
    index: number,
    intendedMs: number,
    sentMs: number,
    endMs: number,
    code: string,
    message: string,
  ): void {
    this.#count('failed', code, message);
    const lagMs = sentMs - intendedMs;
    this.#hist.lag.record(lagMs);
    this.#timeline.request(sentMs, endMs, undefined, [], 0, true);
    if (endMs > this.#lastEndMs) this.#lastEndMs = endMs;
    if (this.#rows !== undefined) {
      const row: RequestRow = {
        index,
        intendedMs,
        status: 'failed',
        lagMs,
        e2eMs: endMs - intendedMs,
        outputTokens: 0,
        tokensEstimated: true,
        chunks: 0,
        reason: code,
      };
      if (this.#slo !== undefined) row.good = false;
      this.#rows.push(row);
    }
  }

  #count(status: RequestStatus, code: string | undefined, message: string | undefined): void {
    switch (status) {
      case 'completed':
        this.#completed += 1;
        return;
      case 'truncated':
        this.#truncated += 1;
        return;
      case 'incomplete':
        this.#incomplete += 1;
        break;
      case 'failed':
        this.#failed += 1;
        break;
    }
    const key = code ?? 'unknown';
    const entry = this.#errors.get(key);
    if (entry === undefined) this.#errors.set(key, { code: key, count: 1, example: message ?? key });
    else entry.count += 1;
  }

  /** The level's result; `startedAt` is when its first request was due. */
  summary(load: LoadSpec, workload: string, startedAt: Date): LevelResult {
    const durationMs = Math.max(this.#lastEndMs, 1e-9);
    const seconds = durationMs / 1000;
    const ok = this.ok;
    const metrics = {} as Record<MetricKey, Distribution>;
    for (const key of METRIC_KEYS) metrics[key] = this.#hist[key].distribution();
    const result: LevelResult = {
      label: describeLoad(load),
      load: loadJson(load),
      workload,
      startedAt: startedAt.toISOString(),
      durationMs: this.#lastEndMs,
      counts: {
        sent: this.#sent,
        completed: this.#completed,
        truncated: this.#truncated,
        incomplete: this.#incomplete,
        failed: this.#failed,
        tokensEstimated: this.#estimated,
      },
      errors: [...this.#errors.values()].sort((a, b) => b.count - a.count),
      tokens: { input: this.#inputTokens, output: this.#outputTokens },
      throughput: {
        requestsPerSecond: ok / seconds,
        outputTokensPerSecond: this.#outputTokens / seconds,
        totalTokensPerSecond: (this.#inputTokens + this.#outputTokens) / seconds,
        // Sends over the span they took: n - 1 gaps between the first (at 0) and the last.
        sendRate: this.#sent > 1 && this.#lastSentMs > 0 ? ((this.#sent - 1) * 1000) / this.#lastSentMs : 0,
      },
      metrics,
      charts: {
        ttft: this.#hist.ttft.bins(40),
        itl: this.#hist.itl.bins(40),
        timeline: this.#timeline.series(this.#lastEndMs),
      },
    };
    if (this.#slo !== undefined) {
      const total = this.finished;
      result.goodput = {
        slo: this.#slo,
        good: this.#good,
        fraction: total === 0 ? 0 : this.#good / total,
        perSecond: this.#good / seconds,
      };
    }
    if (this.#rows !== undefined) result.requests = this.#rows;
    return result;
  }
}
