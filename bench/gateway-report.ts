import type { Spread } from './stats.ts';

/** One route at one level in one round. */
export interface CellResult {
  route: string;
  level: number;
  round: number;
  ttftMs: number[];
  /** TTFT minus the upstream's own time from request to first content frame, per stream. */
  netTtftMs: number[];
  /** The two legs of the net TTFT, per stream: request written -> upstream received it, and first content frame sent by the upstream -> read by the client. */
  requestLegMs: number[];
  responseLegMs: number[];
  delayMs: number[];
  cpuUsPerChunk: number | undefined;
  chunks: number;
  streams: number;
  failed: number;
  mismatched: number;
  firstError?: string | undefined;
}

export interface GatewayReport {
  levels: number[];
  sequentialAtOne: number;
  warmStreams: number;
  routes: string[];
  rounds: number;
  maxTokens: number;
  tokensPerSecond: number;
  cells: CellResult[];
  idleRepeats: number;
  idle: {
    route: string;
    /** Extra prompt text per request (0: the short default prompt). */
    promptBytes: number;
    streams: number;
    opened: number;
    /** Medians over the repeats. */
    rssPerStreamBytes: number;
    heapPerStreamBytes: number;
    rss: Spread;
    heap: Spread;
  }[];
  wallSeconds: number;
}
