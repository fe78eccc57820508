import type { GatewayReport } from './gateway-report.ts';
import { ROUTES } from './gateway-routes.ts';
import { addedByRound, type RouteLevel, summarize } from './gateway-summary.ts';
import { fmt, fmtSpread, type Spread } from './stats.ts';

/** The Markdown section: the tables (the per-target verdicts are made by run-all). */
export function gatewayMarkdown(report: GatewayReport): string {
  const rows = summarize(report);
  const find = (route: string, level: number) => rows.find((r) => r.route === route && r.level === level)!;
  const label = (id: string) => ROUTES.find((r) => r.id === id)!.label;
  const lines: string[] = [
    `Simulator upstream at ${report.tokensPerSecond} tokens/s (±10 % jitter, 20 ms TTFT), ${report.maxTokens} tokens per stream (${Math.min(report.maxTokens, 12)} at level 1000); level 1 runs ${report.sequentialAtOne} streams back to back; ${report.warmStreams} short streams per route first (warm-up, not recorded); ${report.rounds} rounds, routes interleaved, samples pooled, except in the *by round* columns: there each round's added figure (route − direct in that round), median (min–max) over the rounds. Added = route − direct at the same level; added TTFT compares TTFT net of the simulator's own time to its first token, per stream (see bench/README.md). Times in ms.`,
    '',
    '| level | route | TTFT p50 | TTFT p99 | added TTFT p50 | added TTFT p50 by round | added TTFT p99 | chunk delay p50 | chunk delay p99 | added delay p50 | added delay p99 | added delay p99 by round | proxy CPU µs/chunk | streams (failed, count mismatch) |',
    '|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const level of report.levels) {
    const direct = find('direct', level);
    for (const route of ROUTES.filter((r) => report.routes.includes(r.id))) {
      const r = find(route.id, level);
      const isDirect = route.id === 'direct';
      const added = (a: number, b: number) => (isDirect ? '–' : fmt(a - b, 2));
      const byRound = (figure: keyof RouteLevel['byRound']) =>
        isDirect ? '–' : fmtSpread(addedByRound(rows, route.id, level, figure));
      lines.push(
        `| ${level} | ${label(route.id)} | ${fmt(r.ttftP50)} | ${fmt(r.ttftP99)} | ${added(r.netTtftP50, direct.netTtftP50)} | ${byRound('netTtftP50')} | ${added(r.netTtftP99, direct.netTtftP99)} | ${fmt(r.delayP50)} | ${fmt(r.delayP99)} | ${added(r.delayP50, direct.delayP50)} | ${added(r.delayP99, direct.delayP99)} | ${byRound('delayP99')} | ${isDirect ? '–' : `${fmt(r.cpu.median, 1)} (${fmt(r.cpu.min, 1)}–${fmt(r.cpu.max, 1)})`} | ${r.streams} (${r.failed}${r.failed > 0 && r.firstError !== undefined ? `: ${r.firstError}` : ''}, ${r.mismatched}) |`,
      );
    }
  }
  lines.push(
    '',
    'Where the added TTFT p50 is added, by round as above: the request leg (the client writes the request -> the upstream has read it) and the response leg (the upstream sends the first content frame -> the client has read it), each route − direct, both stamped on the shared monotonic clock. Their sum is the net TTFT; the medians of the legs need not add up to the median of the sum.',
    '',
    '| level | route | added request leg p50 by round | added response leg p50 by round |',
    '|---:|---|---:|---:|',
  );
  for (const level of report.levels) {
    for (const route of ROUTES.filter((r) => report.routes.includes(r.id) && r.id !== 'direct')) {
      lines.push(
        `| ${level} | ${label(route.id)} | ${fmtSpread(addedByRound(rows, route.id, level, 'requestLegP50'))} | ${fmtSpread(addedByRound(rows, route.id, level, 'responseLegP50'))} |`,
      );
    }
  }
  lines.push(
    '',
    `RSS per open idle stream (${report.idle[0]?.streams ?? 0} streams held before their first token, in a fresh proxy process warmed up with 40 short streams; proxy RSS and heap after a full GC, minus before; median (min–max) of ${report.idleRepeats} fresh processes per route, routes interleaved):`,
    '',
    '| route | prompt | RSS KiB/stream | heap KiB/stream | streams open when measured (fewest) |',
    '|---|---|---:|---:|---:|',
  );
  for (const idle of report.idle) {
    const prompt = idle.promptBytes > 0 ? `+${fmt(idle.promptBytes / 1024, 0)} KiB` : 'short';
    lines.push(
      `| ${label(idle.route)} | ${prompt} | ${kib(idle.rss)} | ${kib(idle.heap)} | ${idle.opened} |`,
    );
  }
  return lines.join('\n');
}

const kib = (bytes: Spread) =>
  `${fmt(bytes.median / 1024, 1)} (${fmt(bytes.min / 1024, 1)}–${fmt(bytes.max / 1024, 1)})`;
