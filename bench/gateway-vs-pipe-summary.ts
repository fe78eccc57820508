/**
 * The figures of `bench/gateway-vs-pipe.ts`: per-cell quantiles, "added" = subject − direct
 * in the same round, medians over the rounds, tokenwire ÷ pipe, and the verdicts against the issue's
 * targets. Pure, so it is tested (test/bench/gateway-vs-pipe-summary.test.ts) apart from the harness.
 */
import { fmt, median, quantile } from './stats.ts';

/** Who answers the client: the upstream itself, the bare pipe, or `tokenwire serve`. */
export type PipeSubject = 'direct' | 'pipe' | 'tokenwire';

/** What one stream recorded (times in ms on the monotonic clock). */
export interface PipeStream {
  /** Request written by the client. */
  sentAt: number;
  /** The request reached the upstream. */
  receivedAt: number | undefined;
  /** When the upstream wrote each content chunk. */
  chunkSent: readonly number[];
  /** When the client read each content chunk. */
  chunkArrived: readonly number[];
  error?: string | undefined;
}

/** One (subject, concurrency, round) cell, reduced to its figures. */
export interface PipeCell {
  subject: PipeSubject;
  level: number;
  round: number;
  streams: number;
  failed: number;
  /** Streams whose content chunks arrived in another number than the upstream sent. */
  mismatched: number;
  chunks: number;
  /** TTFT net of the upstream's own time from request to first chunk, p50 and p99 over the cell's streams. */
  netTtftP50: number;
  netTtftP99: number;
  /** The two legs of the net TTFT, p50: request written → upstream got it; first chunk written → read. */
  requestLegP50: number;
  responseLegP50: number;
  /** Chunk delay (arrival − upstream write), p99 over every chunk of the cell. */
  delayP99: number;
  /** Proxy CPU (utime+stime) over the cell ÷ content chunks relayed; undefined for direct. */
  cpuUsPerChunk: number | undefined;
  /** Highest proxy RSS sampled during the cell; undefined for direct. */
  rssBytes: number | undefined;
  firstError?: string | undefined;
}

/**
 * Reduces one cell's streams to its figures. `probes` (short streams run one at a time after the full
 * ones) count towards the TTFT figures only: not the chunk delays, nor the chunks CPU is divided by.
 */
export function cellFigures(
  subject: PipeSubject,
  level: number,
  round: number,
  streams: readonly PipeStream[],
  proxy?: { cpuUs: number; rssBytes: number },
  probes: readonly PipeStream[] = [],
): PipeCell {
  const net: number[] = [];
  const requestLeg: number[] = [];
  const responseLeg: number[] = [];
  const delays: number[] = [];
  let failed = 0;
  let mismatched = 0;
  let chunks = 0;
  let firstError: string | undefined;
  for (const s of [...streams, ...probes]) {
    const full = streams.includes(s);
    if (full) chunks += s.chunkSent.length;
    if (s.error !== undefined) {
      failed += 1;
      firstError ??= s.error;
      continue;
    }
    if (s.chunkSent.length !== s.chunkArrived.length) mismatched += 1;
    const first = s.chunkArrived[0];
    const firstSent = s.chunkSent[0];
    if (first !== undefined && firstSent !== undefined && s.receivedAt !== undefined) {
      // The upstream's own wait (request received -> first chunk written) is not the proxy's.
      net.push(first - s.sentAt - (firstSent - s.receivedAt));
      requestLeg.push(s.receivedAt - s.sentAt);
      responseLeg.push(first - firstSent);
    }
    if (!full) continue;
    const n = Math.min(s.chunkSent.length, s.chunkArrived.length);
    for (let k = 0; k < n; k++) delays.push(s.chunkArrived[k]! - s.chunkSent[k]!);
  }
  return {
    subject,
    level,
    round,
    streams: streams.length + probes.length,
    failed,
    mismatched,
    chunks,
    netTtftP50: quantile(net, 0.5),
    netTtftP99: quantile(net, 0.99),
    requestLegP50: quantile(requestLeg, 0.5),
    responseLegP50: quantile(responseLeg, 0.5),
    delayP99: quantile(delays, 0.99),
    cpuUsPerChunk: proxy === undefined || chunks === 0 ? undefined : proxy.cpuUs / chunks,
    rssBytes: proxy?.rssBytes,
    firstError,
  };
}

/** A proxy's figures at one level: the median over rounds of each round's figure. */
export interface ProxyLevel {
  /** Rounds that had this proxy and direct both. */
  rounds: number;
  addedTtftP50: number;
  addedTtftP99: number;
  addedDelayP99: number;
  /** The added TTFT p50's two legs (each the median over rounds of subject − direct). */
  addedRequestLegP50: number;
  addedResponseLegP50: number;
  cpuUsPerChunk: number;
  rssBytes: number;
}

export interface PipeLevelSummary {
  level: number;
  pipe: ProxyLevel;
  tokenwire: ProxyLevel;
  failed: number;
  mismatched: number;
}

const ADDED = ['netTtftP50', 'netTtftP99', 'delayP99', 'requestLegP50', 'responseLegP50'] as const;

function proxyLevel(cells: readonly PipeCell[], subject: 'pipe' | 'tokenwire', level: number): ProxyLevel {
  const added: Record<(typeof ADDED)[number], number[]> = {
    netTtftP50: [],
    netTtftP99: [],
    delayP99: [],
    requestLegP50: [],
    responseLegP50: [],
  };
  const cpu: number[] = [];
  const rss: number[] = [];
  let rounds = 0;
  for (const cell of cells) {
    if (cell.subject !== subject || cell.level !== level) continue;
    const direct = cells.find((c) => c.subject === 'direct' && c.level === level && c.round === cell.round);
    if (cell.cpuUsPerChunk !== undefined) cpu.push(cell.cpuUsPerChunk);
    if (cell.rssBytes !== undefined) rss.push(cell.rssBytes);
    if (direct === undefined) continue;
    rounds += 1;
    for (const key of ADDED) {
      const value = cell[key] - direct[key];
      if (Number.isFinite(value)) added[key].push(value);
    }
  }
  return {
    rounds,
    addedTtftP50: median(added.netTtftP50),
    addedTtftP99: median(added.netTtftP99),
    addedDelayP99: median(added.delayP99),
    addedRequestLegP50: median(added.requestLegP50),
    addedResponseLegP50: median(added.responseLegP50),
    cpuUsPerChunk: median(cpu),
    rssBytes: median(rss),
  };
}

/** Per level: each proxy's per-round figures, median over the rounds. */
export function summarizePipeCells(cells: readonly PipeCell[]): PipeLevelSummary[] {
  const levels = [...new Set(cells.map((c) => c.level))].sort((a, b) => a - b);
  return levels.map((level) => {
    const here = cells.filter((c) => c.level === level);
    return {
      level,
      pipe: proxyLevel(cells, 'pipe', level),
      tokenwire: proxyLevel(cells, 'tokenwire', level),
      failed: here.reduce((n, c) => n + c.failed, 0),
      mismatched: here.reduce((n, c) => n + c.mismatched, 0),
    };
  });
}

/**
 * tokenwire ÷ pipe. An added figure the pipe measured at or below zero (noise: it cannot add less than
 * nothing) gives no ratio.
 */
export function ratioToPipe(tokenwire: number, pipe: number): number {
  return pipe > 0 ? tokenwire / pipe : Number.NaN;
}

/** Within `limit` × the pipe: a pipe figure at or below zero needs tokenwire's at or below zero too. */
export function withinPipe(tokenwire: number, pipe: number, limit: number): boolean {
  if (!Number.isFinite(tokenwire) || !Number.isFinite(pipe)) return false;
  return tokenwire <= limit * Math.max(pipe, 0);
}

export interface PipeVerdict {
  target: string;
  measured: string;
  met: boolean;
}

const ms = (v: number) => `${v >= 0 ? '+' : ''}${fmt(v)} ms`;
const times = (tw: number, pipe: number) => {
  const r = ratioToPipe(tw, pipe);
  return Number.isFinite(r) ? `${fmt(r)}×` : 'no ratio';
};

/** The issue's targets, one verdict each (printed by the bench, never asserted by a test). */
export function pipeVerdicts(summary: readonly PipeLevelSummary[]): PipeVerdict[] {
  const out: PipeVerdict[] = [];
  for (const { level, pipe, tokenwire: tw } of summary) {
    out.push({
      target: `added TTFT p50 ≤ 1.25× the pipe's at c = ${level}`,
      measured: `${ms(tw.addedTtftP50)} vs ${ms(pipe.addedTtftP50)} (${times(tw.addedTtftP50, pipe.addedTtftP50)})`,
      met: withinPipe(tw.addedTtftP50, pipe.addedTtftP50, 1.25),
    });
    if (level === 128) {
      out.push({
        target: `added TTFT p99 ≤ 1.5× the pipe's at c = ${level}`,
        measured: `${ms(tw.addedTtftP99)} vs ${ms(pipe.addedTtftP99)} (${times(tw.addedTtftP99, pipe.addedTtftP99)})`,
        met: withinPipe(tw.addedTtftP99, pipe.addedTtftP99, 1.5),
      });
    }
    out.push({
      target: `CPU per chunk ≤ 1.5× the pipe's at c = ${level}`,
      measured: `${fmt(tw.cpuUsPerChunk, 0)} vs ${fmt(pipe.cpuUsPerChunk, 0)} µs (${times(tw.cpuUsPerChunk, pipe.cpuUsPerChunk)})`,
      met: withinPipe(tw.cpuUsPerChunk, pipe.cpuUsPerChunk, 1.5),
    });
    out.push({
      target: `RSS ≤ 1.5× the pipe's at c = ${level}`,
      measured: `${fmt(tw.rssBytes / 2 ** 20, 1)} vs ${fmt(pipe.rssBytes / 2 ** 20, 1)} MiB (${times(tw.rssBytes, pipe.rssBytes)})`,
      met: withinPipe(tw.rssBytes, pipe.rssBytes, 1.5),
    });
  }
  return out;
}

/** The table in the issue's shape: tokenwire ÷ pipe, with both figures. */
export function pipeMarkdown(summary: readonly PipeLevelSummary[]): string {
  const lines = [
    '| c | rounds | added TTFT p50, tokenwire ÷ pipe | added TTFT p99 | added chunk delay p99 | CPU per chunk | RSS |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const { level, pipe, tokenwire: tw } of summary) {
    const cell = (t: number, p: number, f: (v: number) => string) => `${times(t, p)} (${f(t)} vs ${f(p)})`;
    lines.push(
      `| ${level} | ${Math.min(pipe.rounds, tw.rounds)} | ${cell(tw.addedTtftP50, pipe.addedTtftP50, ms)} | ${cell(tw.addedTtftP99, pipe.addedTtftP99, ms)} | ${cell(tw.addedDelayP99, pipe.addedDelayP99, ms)} | ${cell(tw.cpuUsPerChunk, pipe.cpuUsPerChunk, (v) => `${fmt(v, 0)} µs`)} | ${cell(tw.rssBytes, pipe.rssBytes, (v) => `${fmt(v / 2 ** 20, 1)} MiB`)} |`,
    );
  }
  lines.push(
    '',
    '| c | added TTFT p50, request leg (client → upstream): tokenwire vs pipe | response leg (upstream → client) |',
    '|---|---|---|',
  );
  for (const { level, pipe, tokenwire: tw } of summary) {
    lines.push(
      `| ${level} | ${ms(tw.addedRequestLegP50)} vs ${ms(pipe.addedRequestLegP50)} | ${ms(tw.addedResponseLegP50)} vs ${ms(pipe.addedResponseLegP50)} |`,
    );
  }
  return lines.join('\n');
}
