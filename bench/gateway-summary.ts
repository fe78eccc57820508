import type { GatewayReport } from './gateway-report.ts';
import { ROUTES } from './gateway-routes.ts';
import { quantile, type Spread, spread } from './stats.ts';

/** One route at one level, its rounds pooled. */
export interface RouteLevel {
  route: string;
  level: number;
  ttftP50: number;
  ttftP99: number;
  netTtftP50: number;
  netTtftP99: number;
  delayP50: number;
  delayP99: number;
  cpu: Spread;
  /** Each round's own figures, in round order (see `addedByRound`). */
  byRound: { netTtftP50: number[]; requestLegP50: number[]; responseLegP50: number[]; delayP99: number[] };
  streams: number;
  failed: number;
  mismatched: number;
  firstError?: string | undefined;
}

/**
 * A route's added figure (route − direct) taken within each round, then median (min–max) over the
 * rounds. Rounds interleave the routes, so the routes of one round ran minutes apart at most, under the
 * same load from the rest of this shared machine; a pooled p99 is instead set by the slowest few
 * chunks of whichever round was the unluckiest, which is what moved the bare proxy's pooled added p99
 * at 128 streams from 0.8 to 8.6 ms between runs of the same code.
 */
export function addedByRound(
  rows: readonly RouteLevel[],
  route: string,
  level: number,
  figure: keyof RouteLevel['byRound'],
): Spread {
  const find = (id: string) => rows.find((r) => r.route === id && r.level === level)!;
  const own = find(route).byRound[figure];
  const direct = find('direct').byRound[figure];
  return spread(own.map((value, k) => value - direct[k]!));
}

export function summarize(report: GatewayReport): RouteLevel[] {
  const out: RouteLevel[] = [];
  for (const level of report.levels) {
    for (const route of ROUTES.filter((r) => report.routes.includes(r.id))) {
      const cells = report.cells.filter((c) => c.route === route.id && c.level === level);
      const ttft = cells.flatMap((c) => c.ttftMs);
      const netTtft = cells.flatMap((c) => c.netTtftMs);
      const delays = cells.flatMap((c) => c.delayMs);
      const cpu = cells.map((c) => c.cpuUsPerChunk).filter((v): v is number => v !== undefined);
      const roundCells = [...new Set(cells.map((c) => c.round))]
        .sort((a, b) => a - b)
        .map((round) => cells.filter((c) => c.round === round));
      /** Each round's quantile of one per-stream series, in round order. */
      const perRound = (series: 'netTtftMs' | 'requestLegMs' | 'responseLegMs' | 'delayMs', q: number) =>
        roundCells.map((one) =>
          quantile(
            one.flatMap((c) => c[series]),
            q,
          ),
        );
      out.push({
        route: route.id,
        level,
        ttftP50: quantile(ttft, 0.5),
        ttftP99: quantile(ttft, 0.99),
        netTtftP50: quantile(netTtft, 0.5),
        netTtftP99: quantile(netTtft, 0.99),
        delayP50: quantile(delays, 0.5),
        delayP99: quantile(delays, 0.99),
        cpu: spread(cpu),
        byRound: {
          netTtftP50: perRound('netTtftMs', 0.5),
          requestLegP50: perRound('requestLegMs', 0.5),
          responseLegP50: perRound('responseLegMs', 0.5),
          delayP99: perRound('delayMs', 0.99),
        },
        streams: cells.reduce((a, c) => a + c.streams, 0),
        failed: cells.reduce((a, c) => a + c.failed, 0),
        mismatched: cells.reduce((a, c) => a + c.mismatched, 0),
        firstError: cells.find((c) => c.firstError !== undefined)?.firstError,
      });
    }
  }
  return out;
}
