import type { Distribution } from './latency-histogram.ts';
import type { LevelResult } from './level-recorder.ts';
import { GOODPUT_NAMES, METRIC_NAMES, type MetricName } from './metric-names.ts';
import { formatSlo } from './slo.ts';

/** Text styling (the CLI passes one that honours NO_COLOR and TTYs); default: plain. */
export interface ReportStyle {
  bold(text: string): string;
  dim(text: string): string;
  red(text: string): string;
  yellow(text: string): string;
  green(text: string): string;
}

const PLAIN: ReportStyle = {
  bold: (t) => t,
  dim: (t) => t,
  red: (t) => t,
  yellow: (t) => t,
  green: (t) => t,
};

/** A number for a table: `-` when not measured, fewer decimals as it grows. */
export function formatValue(value: number, unit: MetricName['unit'] | 'ms' = 'ms'): string {
  if (!Number.isFinite(value)) return '-';
  if (unit === 'tokens') return Number.isInteger(value) ? String(value) : value.toFixed(1);
  const abs = Math.abs(value);
  if (abs >= 10_000) return value.toFixed(0);
  if (abs >= 10) return value.toFixed(1);
  if (abs >= 1) return value.toFixed(2);
  return value.toFixed(3);
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** `3.2 s`, `850 ms`, `2 min 5 s`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms.toFixed(0)} ms`;
  if (ms < 120_000) return `${(ms / 1000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  return `${minutes} min ${Math.round((ms - minutes * 60_000) / 1000)} s`;
}

const COLUMNS = ['p50', 'p90', 'p95', 'p99', 'max'] as const;

/** Schedule lag (p99, ms) above which the report says the bench itself was the bottleneck. */
export const LATE_MS = 5;

/**
 * The rows a level shows: the main metrics, and the TTFT split only where the server reported it. The
 * model-load row stays with the split even when the server reports no load time: it then reads unknown.
 */
export function rowsFor(result: LevelResult): MetricName[] {
  const split = result.metrics.queue.count > 0;
  return METRIC_NAMES.filter((name) => {
    const d = result.metrics[name.key];
    if (name.key === 'load') return split || d.count > 0;
    if (['queue', 'promptEval', 'firstToken'].includes(name.key)) return d.count > 0;
    return true;
  });
}

/** What the model-load row says when the server reports no load time. */
export const UNKNOWN_LOAD = 'unknown (the server reports no load time)';

/**
 * One level as text: what was sent and how it ended, throughput, then a table with p50/p90/p95/p99/
 * max of every metric and what vLLM bench, AIPerf and GuideLLM call it.
 */
export function formatLevel(result: LevelResult, style: ReportStyle = PLAIN): string {
  const c = result.counts;
  const lines: string[] = [];
  const okCount = c.completed + c.truncated;
  const outcome = [
    style.green(`${okCount} completed`) +
      (c.truncated > 0 ? ` (${c.truncated} truncated at the output cap)` : ''),
    (c.incomplete > 0 ? style.red : (t: string) => t)(`${c.incomplete} incomplete`),
    (c.failed > 0 ? style.red : (t: string) => t)(`${c.failed} failed`),
  ].join(', ');
  lines.push(
    `${style.bold(result.label)}: ${plural(c.sent, 'request')} in ${formatDuration(result.durationMs)}: ${outcome}`,
  );
  lines.push(style.dim(`  workload: ${result.workload}`));
  const t = result.throughput;
  const tokens =
    c.tokensEstimated > 0
      ? style.yellow(
          `output tokens estimated from chunks for ${c.tokensEstimated} of ${okCount} requests (no usage from the server)`,
        )
      : okCount > 0
        ? 'output tokens from the server usage'
        : '';
  lines.push(
    `  throughput: ${t.requestsPerSecond.toFixed(2)} req/s, ${t.outputTokensPerSecond.toFixed(1)} output tok/s, ` +
      `${t.totalTokensPerSecond.toFixed(1)} total tok/s; sent ${t.sendRate.toFixed(2)} req/s${tokens === '' ? '' : `; ${tokens}`}`,
  );
  if (result.goodput !== undefined) {
    const g = result.goodput;
    const text = `  goodput (${formatSlo(g.slo)}): ${(g.fraction * 100).toFixed(1)}% of requests met every SLO, ${g.perSecond.toFixed(2)} good req/s`;
    lines.push(g.fraction >= 0.9 ? text : style.yellow(text));
  }
  const lag = result.metrics.lag;
  if (lag.p99 > LATE_MS) {
    lines.push(
      style.yellow(
        `  the bench itself was late: schedule lag p99 ${formatValue(lag.p99)} ms (every latency includes it); ` +
          'start streams over time (--ramp-up) or run fewer streams per bench process',
      ),
    );
  }
  for (const error of result.errors.slice(0, 5)) {
    lines.push(style.red(`  ${error.count} x ${error.code}: ${error.example}`));
  }
  if (result.errors.length > 5)
    lines.push(style.red(`  ... and ${result.errors.length - 5} other kinds of failure`));
  lines.push('');

  const rows = rowsFor(result);
  const header = ['metric', ...COLUMNS, 'vLLM bench', 'AIPerf', 'GuideLLM'];
  const table: string[][] = [header];
  const unknown: string[] = [];
  for (const row of rows) {
    const d: Distribution = result.metrics[row.key];
    const unit = row.unit === 'tokens' ? '' : ` (${row.unit})`;
    if (d.count === 0 && row.key === 'load') {
      unknown.push(`${row.name}${unit}`);
      continue;
    }
    table.push([
      `${row.name}${unit}`,
      ...COLUMNS.map((column) => formatValue(d[column], row.unit)),
      row.vllm,
      row.aiperf,
      row.guidellm,
    ]);
  }
  const widths = header.map((_, i) => Math.max(...table.map((cells) => (cells[i] as string).length)));
  table.forEach((cells, rowIndex) => {
    const text = cells
      .map((cell, i) => (i >= 1 && i <= COLUMNS.length ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
    lines.push(`  ${rowIndex === 0 ? style.bold(text) : text}`);
  });
  // Not a row of zeros: a figure the server does not report is unknown.
  for (const name of unknown) lines.push(`  ${name.padEnd(widths[0]!)}  ${style.dim(UNKNOWN_LOAD)}`);
  return `${lines.join('\n')}\n`;
}

/** The notes under the table: where the other tools define a metric differently. */
export function formatNameNotes(style: ReportStyle = PLAIN): string {
  const lines = [style.dim('Names elsewhere (vLLM bench | AIPerf | GuideLLM), where they differ from ours:')];
  for (const name of METRIC_NAMES) {
    if (name.note !== undefined) lines.push(style.dim(`  ${name.name}: ${name.note}`));
  }
  lines.push(
    style.dim(
      `  goodput: vLLM ${GOODPUT_NAMES.vllm}; AIPerf ${GOODPUT_NAMES.aiperf}; GuideLLM ${GOODPUT_NAMES.guidellm}`,
    ),
  );
  lines.push(
    style.dim(
      '  Here every latency counts from the intended send (the Poisson arrival, or when the closed-loop slot freed), so a late send by the bench shows up instead of being hidden; the lag row says how late the bench itself was.',
    ),
  );
  return `${lines.join('\n')}\n`;
}

/** One row per level, for a sweep. */
export function formatSweep(results: readonly LevelResult[], style: ReportStyle = PLAIN): string {
  const header = [
    'load',
    'ok',
    'bad',
    'req/s',
    'out tok/s',
    'TTFT p50',
    'TTFT p99',
    'TPOT p50',
    'TPOT p99',
    'ITL p99',
    'E2E p50',
    'lag p99',
    'goodput',
  ];
  const rows: string[][] = [header];
  for (const r of results) {
    const m = r.metrics;
    rows.push([
      r.label,
      String(r.counts.completed + r.counts.truncated),
      String(r.counts.incomplete + r.counts.failed),
      r.throughput.requestsPerSecond.toFixed(2),
      r.throughput.outputTokensPerSecond.toFixed(1),
      formatValue(m.ttft.p50),
      formatValue(m.ttft.p99),
      formatValue(m.tpot.p50),
      formatValue(m.tpot.p99),
      formatValue(m.itl.p99),
      formatValue(m.e2e.p50),
      formatValue(m.lag.p99),
      r.goodput === undefined ? '-' : `${(r.goodput.fraction * 100).toFixed(1)}%`,
    ]);
  }
  const widths = header.map((_, i) => Math.max(...rows.map((cells) => (cells[i] as string).length)));
  const lines = rows.map((cells, rowIndex) => {
    const text = cells
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!)))
      .join('  ');
    return `  ${rowIndex === 0 ? style.bold(text) : text}`;
  });
  return `${style.bold('Sweep (times in ms):')}\n${lines.join('\n')}\n`;
}
