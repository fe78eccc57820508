import type { Distribution, HistogramBin } from './latency-histogram.ts';
import type { LevelResult } from './level-recorder.ts';
import { GOODPUT_NAMES, METRIC_NAMES } from './metric-names.ts';
import { formatSlo } from './slo.ts';
import { formatDuration, formatValue, rowsFor, UNKNOWN_LOAD } from './text-report.ts';

export interface HtmlReportInput {
  /** What was benchmarked, shown in the heading (a URL is shown without its scheme). */
  target: string;
  /** The command line, for the record. */
  command?: string | undefined;
  generatedAt: Date;
  levels: readonly LevelResult[];
  /** Lines to show above the results (warnings). */
  notes?: readonly string[] | undefined;
}

/**
 * The whole report as one HTML document: inline CSS and inline SVG charts (TTFT and inter-chunk
 * distributions, throughput and concurrency over time), no script, nothing fetched from anywhere,
 * so it opens from a file or a CI artifact as it is.
 */
export function htmlReport(input: HtmlReportInput): string {
  const target = input.target.replace(/^[a-z][a-z0-9+.-]*:\/\//i, '');
  const body: string[] = [];
  body.push(`<h1>tokenwire bench: ${esc(target)}</h1>`);
  body.push(
    `<p class="meta">${esc(input.generatedAt.toISOString())}${
      input.command === undefined ? '' : ` &middot; <code>${esc(input.command)}</code>`
    }</p>`,
  );
  for (const note of input.notes ?? []) body.push(`<p class="warn">${esc(note)}</p>`);
  if (input.levels.length > 1) body.push(sweepSection(input.levels));
  input.levels.forEach((level, i) => {
    body.push(levelSection(level, i));
  });
  body.push(namesSection());
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>tokenwire bench: ${esc(target)}</title>
<style>${CSS}</style>
</head>
<body>
${body.join('\n')}
</body>
</html>
`;
}

const CSS = `
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1100px;padding:0 16px;color:#1d2330;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:32px 0 8px;border-bottom:1px solid #dde2ea;padding-bottom:4px}
h3{font-size:14px;margin:16px 0 4px;color:#3a4456}
.meta{color:#667085;margin:0 0 16px}.warn{background:#fff7e0;border-left:3px solid #e0a800;padding:6px 10px}
.bad{color:#b42318}.good{color:#067647}
table{border-collapse:collapse;margin:8px 0;font-variant-numeric:tabular-nums}
th,td{padding:3px 10px;border-bottom:1px solid #eef1f5;text-align:right;white-space:nowrap}
th{background:#f6f8fb;font-weight:600}td.l,th.l{text-align:left}td.alias{color:#475467;text-align:left;white-space:normal}
.charts{display:flex;flex-wrap:wrap;gap:16px}.chart{border:1px solid #eef1f5;border-radius:6px;padding:8px}
.sweep .chart{flex:1 1 480px;min-width:0}.sweep svg{display:block;width:100%;height:auto}td.unknown{color:#667085;font-style:italic}
svg text{font:11px system-ui,sans-serif;fill:#475467}svg .title{font-size:13px;font-weight:600;fill:#1d2330}
svg .bar{fill:#4e79a7}svg .bar:hover{fill:#2b5d8f}svg .axis{stroke:#98a2b3;stroke-width:1}
svg .grid{stroke:#eef1f5;stroke-width:1}svg .l1{fill:none;stroke:#4e79a7;stroke-width:2}
svg .l2{fill:none;stroke:#f28e2b;stroke-width:1.5;stroke-dasharray:4 3}svg .l3{fill:none;stroke:#e15759;stroke-width:1.5}
svg .p1{fill:#4e79a7}svg .p2{fill:#f28e2b}svg .p3{fill:#e15759}
.legend span{display:inline-block;margin-right:14px}.sw{display:inline-block;width:14px;height:3px;vertical-align:middle;margin-right:4px}
code{font-size:12px;background:#f6f8fb;padding:1px 4px;border-radius:3px}
`;

function esc(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function sweepSection(levels: readonly LevelResult[]): string {
  const rows = levels
    .map((r) => {
      const m = r.metrics;
      const bad = r.counts.incomplete + r.counts.failed;
      return `<tr><td class="l">${esc(r.label)}</td><td>${r.counts.completed + r.counts.truncated}</td><td${
        bad > 0 ? ' class="bad"' : ''
      }>${bad}</td><td>${r.throughput.requestsPerSecond.toFixed(2)}</td><td>${r.throughput.outputTokensPerSecond.toFixed(1)}</td><td>${formatValue(
        m.ttft.p50,
      )}</td><td>${formatValue(m.ttft.p99)}</td><td>${formatValue(m.tpot.p50)}</td><td>${formatValue(
        m.tpot.p99,
      )}</td><td>${formatValue(m.itl.p99)}</td><td>${formatValue(m.e2e.p50)}</td><td>${formatValue(m.lag.p99)}</td><td>${
        r.goodput === undefined ? '-' : `${(r.goodput.fraction * 100).toFixed(1)}%`
      }</td></tr>`;
    })
    .join('\n');
  return `<h2>Sweep</h2>
<table><tr><th class="l">load</th><th>ok</th><th>bad</th><th>req/s</th><th>out tok/s</th><th>TTFT p50</th><th>TTFT p99</th><th>TPOT p50</th><th>TPOT p99</th><th>ITL p99</th><th>E2E p50</th><th>lag p99</th><th>goodput</th></tr>
${rows}</table>
<div class="charts sweep"><div class="chart" data-chart="sweep">${sweepChart(levels)}</div><div class="chart" data-chart="throughput-latency">${throughputLatencyChart(levels)}</div></div>`;
}

function levelSection(r: LevelResult, index: number): string {
  const c = r.counts;
  const ok = c.completed + c.truncated;
  const parts: string[] = [];
  parts.push(`<h2 id="level-${index}">${esc(r.label)}</h2>`);
  parts.push(
    `<p>${c.sent} requests in ${esc(formatDuration(r.durationMs))}: <span class="good">${ok} completed</span>${
      c.truncated > 0 ? ` (${c.truncated} truncated at the output cap)` : ''
    }, <span${c.incomplete > 0 ? ' class="bad"' : ''}>${c.incomplete} incomplete</span>, <span${
      c.failed > 0 ? ' class="bad"' : ''
    }>${c.failed} failed</span>. ${esc(r.workload)}.<br>Throughput ${r.throughput.requestsPerSecond.toFixed(
      2,
    )} req/s, ${r.throughput.outputTokensPerSecond.toFixed(1)} output tok/s, ${r.throughput.totalTokensPerSecond.toFixed(
      1,
    )} total tok/s; sent ${r.throughput.sendRate.toFixed(2)} req/s.${
      c.tokensEstimated > 0
        ? ` <span class="bad">Output tokens estimated from chunks for ${c.tokensEstimated} requests (no usage from the server).</span>`
        : ''
    }</p>`,
  );
  if (r.goodput !== undefined) {
    const g = r.goodput;
    parts.push(
      `<p>Goodput (${esc(formatSlo(g.slo))}): <b>${(g.fraction * 100).toFixed(1)}%</b> of requests met every SLO, ${g.perSecond.toFixed(
        2,
      )} good req/s.</p>`,
    );
  }
  if (r.errors.length > 0) {
    parts.push(
      `<table><tr><th class="l">failure</th><th>count</th><th class="l">first message</th></tr>${r.errors
        .map(
          (e) =>
            `<tr><td class="l bad">${esc(e.code)}</td><td>${e.count}</td><td class="alias">${esc(e.example)}</td></tr>`,
        )
        .join('')}</table>`,
    );
  }
  const rows = rowsFor(r)
    .map((name) => {
      const d: Distribution = r.metrics[name.key];
      // A load time the server does not report is unknown, not a row of zeros.
      const cells =
        d.count === 0 && name.key === 'load'
          ? `<td colspan="5" class="l unknown">${esc(UNKNOWN_LOAD)}</td>`
          : (['p50', 'p90', 'p95', 'p99', 'max'] as const)
              .map((k) => `<td>${formatValue(d[k], name.unit)}</td>`)
              .join('');
      return `<tr><td class="l" title="${esc(name.definition)}">${esc(name.name)} <small>(${name.unit})</small></td>${cells}<td>${
        d.count
      }</td><td class="alias">${esc(name.vllm)}</td><td class="alias">${esc(name.aiperf)}</td><td class="alias">${esc(
        name.guidellm,
      )}</td></tr>`;
    })
    .join('\n');
  parts.push(
    `<table><tr><th class="l">metric</th><th>p50</th><th>p90</th><th>p95</th><th>p99</th><th>max</th><th>n</th><th class="l">vLLM bench</th><th class="l">AIPerf</th><th class="l">GuideLLM</th></tr>\n${rows}</table>`,
  );
  parts.push('<div class="charts">');
  parts.push(
    `<div class="chart" data-chart="ttft">${barChart(r.charts.ttft, 'TTFT distribution', 'TTFT (ms)', 'requests', r.metrics.ttft)}</div>`,
  );
  parts.push(
    `<div class="chart" data-chart="itl">${barChart(
      r.charts.itl,
      'Inter-chunk gap (ITL) distribution',
      'gap between content chunks (ms)',
      'gaps',
      r.metrics.itl,
    )}</div>`,
  );
  parts.push(`<div class="chart" data-chart="throughput">${timelineChart(r)}</div>`);
  parts.push('</div>');
  return parts.join('\n');
}

function namesSection(): string {
  const rows = METRIC_NAMES.map(
    (n) =>
      `<tr><td class="l">${esc(n.name)}</td><td class="alias">${esc(n.definition)}</td><td class="alias">${esc(
        n.vllm,
      )}</td><td class="alias">${esc(n.aiperf)}</td><td class="alias">${esc(n.guidellm)}</td><td class="alias">${esc(
        n.note ?? '',
      )}</td></tr>`,
  ).join('\n');
  return `<h2>What the metrics are, and what other tools call them</h2>
<table><tr><th class="l">metric</th><th class="l">definition here</th><th class="l">vLLM bench</th><th class="l">AIPerf</th><th class="l">GuideLLM</th><th class="l">note</th></tr>
${rows}
<tr><td class="l">goodput</td><td class="alias">share and rate of requests that completed and met every SLO</td><td class="alias">${esc(
    GOODPUT_NAMES.vllm,
  )}</td><td class="alias">${esc(GOODPUT_NAMES.aiperf)}</td><td class="alias">${esc(GOODPUT_NAMES.guidellm)}</td><td></td></tr>
</table>
<p class="meta">Every latency counts from the intended send time (the open-loop arrival, or when the closed-loop slot freed); the schedule lag row is the bench's own lateness. TPOT uses the server's usage count when it sent one.</p>`;
}

// Charts: plain SVG, drawn here. Geometry in user units; the SVG scales with its box.

const W = 520;
const H = 250;
const M = { left: 56, right: 16, top: 28, bottom: 44 };

/** A round step near `raw`: 1, 2 or 5 times a power of ten. */
function roundStep(raw: number): number {
  const power = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * power).find((step) => step >= raw * 0.9999) ?? raw;
}

/** A multiple of `step` without the float noise of `i * step` (0.30000000000000004). */
function clean(value: number, step: number): number {
  const decimals = Math.max(0, -Math.floor(Math.log10(step)) + 1);
  return Number(value.toFixed(decimals));
}

/**
 * Ticks from 0 at a round step (1, 2 or 5 × 10^n), the last at or above `max`; whole numbers only for
 * counts (`integer`: no "1.5 requests"). Exported for tests.
 */
export function niceTicks(max: number, count = 4, integer = false): number[] {
  if (!(max > 0)) return [0];
  const step = integer ? Math.max(1, roundStep(max / count)) : roundStep(max / count);
  const ticks: number[] = [0];
  // The last tick is at or above the maximum, so nothing is drawn past the top of the plot.
  while ((ticks.at(-1) as number) < max * 0.9999) ticks.push(clean(ticks.length * step, step));
  return ticks;
}

/**
 * Round ticks inside [low, high]: multiples of a round step on a linear axis; 1, 2, 5 × 10^n on a log
 * axis (only 1 × 10^n when that gives enough). Exported for tests.
 */
export function axisTicks(low: number, high: number, log: boolean, count = 5): number[] {
  if (!(high > low)) return Number.isFinite(low) ? [low] : [];
  if (log && low > 0) {
    const out: number[] = [];
    for (const multiples of [[1], [1, 2, 5], [1, 2, 3, 5, 7]]) {
      out.length = 0;
      for (let power = Math.floor(Math.log10(low)); 10 ** power <= high; power++) {
        for (const m of multiples) {
          const value = clean(m * 10 ** power, 10 ** power);
          if (value >= low * 0.9999 && value <= high * 1.0001) out.push(value);
        }
      }
      if (out.length >= 3) break;
    }
    return out;
  }
  const step = roundStep((high - low) / count);
  const out: number[] = [];
  for (let value = Math.ceil(low / step - 1e-9) * step; value <= high * 1.0001 + 1e-12; value += step)
    out.push(clean(value, step));
  return out;
}

/** A tick label: ticks are round, so a round number is written as it is (`0.05`, `250`, `1.5k`). */
function shortNumber(v: number): string {
  if (v >= 1e6) return `${Number((v / 1e6).toFixed(1))}M`;
  if (v >= 1e4) return `${(v / 1e3).toFixed(0)}k`;
  if (v >= 1000) return `${Number((v / 1e3).toFixed(1))}k`;
  return Number.isInteger(v) ? String(v) : String(Number(v.toPrecision(3)));
}

function empty(title: string): string {
  return `<svg viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="${esc(title)}"><text class="title" x="${M.left}" y="18">${esc(
    title,
  )}</text><text x="${W / 2}" y="${H / 2}" text-anchor="middle">no data</text></svg>`;
}

function barChart(
  bins: readonly HistogramBin[],
  title: string,
  xLabel: string,
  yLabel: string,
  d: Distribution,
): string {
  if (bins.length === 0) return empty(title);
  const plotW = W - M.left - M.right;
  const plotH = H - M.top - M.bottom;
  const maxCount = Math.max(...bins.map((b) => b.count));
  const ticks = niceTicks(maxCount, 4, true);
  const top = ticks.at(-1) ?? maxCount;
  const y = (v: number) => M.top + plotH - (v / (top || 1)) * plotH;
  const bw = plotW / bins.length;
  const out: string[] = [];
  out.push(
    `<svg viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="${esc(title)}"><text class="title" x="${M.left}" y="18">${esc(
      title,
    )}</text>`,
  );
  for (const t of ticks) {
    out.push(
      `<line class="grid" x1="${M.left}" x2="${W - M.right}" y1="${y(t).toFixed(1)}" y2="${y(t).toFixed(1)}"/><text x="${
        M.left - 6
      }" y="${(y(t) + 4).toFixed(1)}" text-anchor="end">${shortNumber(t)}</text>`,
    );
  }
  bins.forEach((bin, i) => {
    const x = M.left + i * bw;
    const h = M.top + plotH - y(bin.count);
    out.push(
      `<rect class="bar" x="${(x + 0.5).toFixed(1)}" y="${y(bin.count).toFixed(1)}" width="${Math.max(
        0.5,
        bw - 1,
      ).toFixed(
        1,
      )}" height="${Math.max(0, h).toFixed(1)}"><title>${formatValue(bin.from)}-${formatValue(bin.to)} ms: ${bin.count}</title></rect>`,
    );
  });
  const low = (bins[0] as HistogramBin).from;
  const high = (bins.at(-1) as HistogramBin).to;
  // Log-spaced bins widen as they go; linear ones keep one width.
  const first = bins[0] as HistogramBin;
  const last = bins.at(-1) as HistogramBin;
  const logScale = low > 0 && last.to - last.from > (first.to - first.from) * 1.5;
  const xOf = (v: number) => {
    const f = logScale ? Math.log(v / low) / Math.log(high / low) : (v - low) / (high - low || 1);
    return M.left + Math.min(1, Math.max(0, f)) * plotW;
  };
  // x labels at round values (not at the bin edges, which fall anywhere), placed on the bins' scale.
  for (const value of axisTicks(low, high, logScale)) {
    const x = xOf(value);
    out.push(
      `<line class="axis" x1="${x.toFixed(1)}" x2="${x.toFixed(1)}" y1="${M.top + plotH}" y2="${M.top + plotH + 4}"/><text class="tick" x="${x.toFixed(
        1,
      )}" y="${M.top + plotH + 16}" text-anchor="middle">${shortNumber(value)}</text>`,
    );
  }
  // percentile markers
  const markers = [
    ['p50', d.p50, M.top + 10],
    ['p99', d.p99, M.top + 24],
  ] as const;
  for (const [name, value, labelY] of markers) {
    if (!Number.isFinite(value)) continue;
    const x = xOf(value);
    // Labels near the right edge go on the line's left.
    const right = x > M.left + plotW - 90;
    out.push(
      `<line x1="${x.toFixed(1)}" x2="${x.toFixed(1)}" y1="${M.top}" y2="${M.top + plotH}" stroke="#e15759" stroke-dasharray="3 3"/><text x="${(
        right ? x - 3 : x + 3
      ).toFixed(
        1,
      )}" y="${labelY}" fill="#e15759" text-anchor="${right ? 'end' : 'start'}">${name} ${formatValue(value)} ms</text>`,
    );
  }
  out.push(
    `<line class="axis" x1="${M.left}" x2="${W - M.right}" y1="${M.top + plotH}" y2="${M.top + plotH}"/><text x="${
      M.left + plotW / 2
    }" y="${H - 8}" text-anchor="middle">${esc(xLabel)}${logScale ? ', log scale' : ''}</text><text x="12" y="${
      M.top + plotH / 2
    }" transform="rotate(-90 12 ${M.top + plotH / 2})" text-anchor="middle">${esc(yLabel)}</text></svg>`,
  );
  return out.join('');
}

function polyline(
  values: readonly number[],
  x: (i: number) => number,
  y: (v: number) => number,
  cls: string,
): string {
  if (values.length === 0) return '';
  const points = values.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(' ');
  return `<polyline class="${cls}" points="${points}"/>`;
}

function timelineChart(r: LevelResult): string {
  const t = r.charts.timeline;
  const title = 'Throughput over time';
  const tokens = t.outputTokensPerSecond;
  if (tokens.length === 0) return empty(title);
  const plotW = W - M.left - M.right - 40;
  const plotH = H - M.top - M.bottom;
  const maxTokens = Math.max(1, ...tokens);
  const ticks = niceTicks(maxTokens);
  const top = ticks.at(-1) ?? maxTokens;
  const maxConc = Math.max(1, ...t.concurrency);
  const concTicks = niceTicks(maxConc, 4, true);
  const concTop = concTicks.at(-1) ?? maxConc;
  const n = tokens.length;
  const x = (i: number) => M.left + (n === 1 ? plotW / 2 : ((i + 0.5) / n) * plotW);
  const y = (v: number) => M.top + plotH - (v / (top || 1)) * plotH;
  const yc = (v: number) => M.top + plotH - (v / (concTop || 1)) * plotH;
  const out: string[] = [];
  out.push(
    `<svg viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="${title}"><text class="title" x="${M.left}" y="18">${title}</text>`,
  );
  for (const v of ticks) {
    out.push(
      `<line class="grid" x1="${M.left}" x2="${M.left + plotW}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}"/><text x="${
        M.left - 6
      }" y="${(y(v) + 4).toFixed(1)}" text-anchor="end">${shortNumber(v)}</text>`,
    );
  }
  for (const v of concTicks) {
    out.push(
      `<text x="${M.left + plotW + 6}" y="${(yc(v) + 4).toFixed(1)}" fill="#f28e2b">${shortNumber(v)}</text>`,
    );
  }
  out.push(polyline(tokens, x, y, 'l1'));
  out.push(polyline(t.concurrency, x, yc, 'l2'));
  if (t.failedPerSecond.some((v) => v > 0)) out.push(polyline(t.failedPerSecond, x, y, 'l3'));
  const seconds = (n * t.bucketMs) / 1000;
  for (const s of niceTicks(seconds, 5)) {
    const px = M.left + (s / seconds) * plotW;
    if (px > M.left + plotW + 0.5) continue;
    out.push(
      `<line class="axis" x1="${px.toFixed(1)}" x2="${px.toFixed(1)}" y1="${M.top + plotH}" y2="${M.top + plotH + 4}"/><text x="${px.toFixed(
        1,
      )}" y="${M.top + plotH + 16}" text-anchor="middle">${shortNumber(s)}</text>`,
    );
  }
  out.push(
    `<line class="axis" x1="${M.left}" x2="${M.left + plotW}" y1="${M.top + plotH}" y2="${M.top + plotH}"/><text x="${
      M.left + plotW / 2
    }" y="${H - 8}" text-anchor="middle">seconds since start (buckets of ${t.bucketMs} ms)</text>`,
  );
  out.push(
    `<text x="12" y="${M.top + plotH / 2}" transform="rotate(-90 12 ${M.top + plotH / 2})" text-anchor="middle">output tokens / s</text></svg>`,
  );
  out.push(
    '<div class="legend"><span><i class="sw" style="background:#4e79a7"></i>output tokens/s</span><span><i class="sw" style="background:#f28e2b"></i>streams in flight (right axis)</span>' +
      (t.failedPerSecond.some((v) => v > 0)
        ? '<span><i class="sw" style="background:#e15759"></i>failed requests/s</span>'
        : '') +
      '</div>',
  );
  return out.join('');
}

/** A sweep: TTFT and TPOT p50/p99 against each level. */
/** A chart's opening: the svg with its title, and a grid line with its label at each y tick. */
function chartFrame(
  title: string,
  width: number,
  height: number,
  left: number,
  plotW: number,
  ticks: readonly number[],
  y: (v: number) => number,
): string[] {
  const out = [
    `<svg viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-label="${title}"><text class="title" x="${left}" y="18">${title}</text>`,
  ];
  for (const v of ticks)
    out.push(
      `<line class="grid" x1="${left}" x2="${left + plotW}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}"/><text x="${
        left - 6
      }" y="${(y(v) + 4).toFixed(1)}" text-anchor="end">${shortNumber(v)}</text>`,
    );
  return out;
}

function sweepChart(levels: readonly LevelResult[]): string {
  const title = 'Latency by load level (ms)';
  const series = [
    { name: 'TTFT p50', cls: 'l1', values: levels.map((l) => l.metrics.ttft.p50) },
    { name: 'TTFT p99', cls: 'l3', values: levels.map((l) => l.metrics.ttft.p99) },
    { name: 'TPOT p50', cls: 'l2', values: levels.map((l) => l.metrics.tpot.p50) },
  ];
  const all = series.flatMap((s) => s.values).filter((v) => Number.isFinite(v));
  if (all.length === 0) return empty(title);
  const plotW = W - M.left - M.right;
  const plotH = H - M.top - M.bottom;
  const ticks = niceTicks(Math.max(...all));
  const top = ticks.at(-1) ?? 1;
  const n = levels.length;
  const x = (i: number) => M.left + ((i + 0.5) / n) * plotW;
  const y = (v: number) => M.top + plotH - (v / (top || 1)) * plotH;
  const out = chartFrame(title, W, H, M.left, plotW, ticks, y);
  for (const s of series)
    out.push(
      polyline(
        s.values.map((v) => (Number.isFinite(v) ? v : 0)),
        x,
        y,
        s.cls,
      ),
    );
  levels.forEach((level, i) => {
    out.push(
      `<text x="${x(i).toFixed(1)}" y="${M.top + plotH + 16}" text-anchor="middle">${esc(level.label.replace(/^concurrency /, 'c='))}</text>`,
    );
  });
  out.push(
    `<line class="axis" x1="${M.left}" x2="${M.left + plotW}" y1="${M.top + plotH}" y2="${M.top + plotH}"/></svg>`,
  );
  out.push(
    `<div class="legend">${series
      .map(
        (s) =>
          `<span><i class="sw" style="background:${s.cls === 'l1' ? '#4e79a7' : s.cls === 'l2' ? '#f28e2b' : '#e15759'}"></i>${s.name}</span>`,
      )
      .join('')}</div>`,
  );
  return out.join('');
}

/**
 * The capacity planner's plot: for each level of the sweep, output throughput (x) against latency (y:
 * TTFT p50 and p99, TPOT p50), points joined in the sweep's order and labelled with the level. Where
 * the curve turns up, more load buys latency, not throughput.
 */
function throughputLatencyChart(levels: readonly LevelResult[]): string {
  const title = 'Throughput vs latency (one point per level)';
  const series = [
    { name: 'TTFT p50', cls: 'l1', dot: 'p1', values: levels.map((l) => l.metrics.ttft.p50) },
    { name: 'TTFT p99', cls: 'l3', dot: 'p3', values: levels.map((l) => l.metrics.ttft.p99) },
    { name: 'TPOT p50', cls: 'l2', dot: 'p2', values: levels.map((l) => l.metrics.tpot.p50) },
  ];
  const throughput = levels.map((l) => l.throughput.outputTokensPerSecond);
  const all = series.flatMap((s) => s.values).filter((v) => Number.isFinite(v));
  if (all.length === 0 || !throughput.some((v) => v > 0)) return empty(title);
  const plotW = W - M.left - M.right;
  const plotH = H - M.top - M.bottom;
  const xTicks = niceTicks(Math.max(...throughput), 5);
  const right = xTicks.at(-1) ?? 1;
  const yTicks = niceTicks(Math.max(...all));
  const top = yTicks.at(-1) ?? 1;
  const x = (v: number) => M.left + (v / (right || 1)) * plotW;
  const y = (v: number) => M.top + plotH - (v / (top || 1)) * plotH;
  const out = chartFrame(title, W, H, M.left, plotW, yTicks, y);
  for (const v of xTicks)
    out.push(
      `<line class="axis" x1="${x(v).toFixed(1)}" x2="${x(v).toFixed(1)}" y1="${M.top + plotH}" y2="${M.top + plotH + 4}"/><text class="tick" x="${x(
        v,
      ).toFixed(1)}" y="${M.top + plotH + 16}" text-anchor="middle">${shortNumber(v)}</text>`,
    );
  for (const s of series) {
    const points = levels.flatMap((_, i) =>
      Number.isFinite(s.values[i]) ? [[x(throughput[i] as number), y(s.values[i] as number)] as const] : [],
    );
    if (points.length > 1)
      out.push(
        `<polyline class="${s.cls}" points="${points.map(([px, py]) => `${px.toFixed(1)},${py.toFixed(1)}`).join(' ')}"/>`,
      );
    levels.forEach((level, i) => {
      const v = s.values[i] as number;
      if (!Number.isFinite(v)) return;
      out.push(
        `<circle class="${s.dot}" cx="${x(throughput[i] as number).toFixed(1)}" cy="${y(v).toFixed(1)}" r="3"><title>${esc(
          level.label,
        )}: ${formatValue(throughput[i] as number)} tok/s, ${s.name} ${formatValue(v)} ms</title></circle>`,
      );
    });
  }
  // Each level named once, above its highest point.
  levels.forEach((level, i) => {
    const values = series.map((s) => s.values[i] as number).filter((v) => Number.isFinite(v));
    if (values.length === 0) return;
    out.push(
      `<text class="level" x="${x(throughput[i] as number).toFixed(1)}" y="${(
        y(Math.max(...values)) - 7
      ).toFixed(
        1,
      )}" text-anchor="middle">${esc(level.label.replace(/^concurrency /, 'c=').replace(/^rate /, 'r='))}</text>`,
    );
  });
  out.push(
    `<line class="axis" x1="${M.left}" x2="${M.left + plotW}" y1="${M.top + plotH}" y2="${M.top + plotH}"/><text x="${
      M.left + plotW / 2
    }" y="${H - 8}" text-anchor="middle">output tokens / s (all streams)</text><text x="12" y="${M.top + plotH / 2}" transform="rotate(-90 12 ${
      M.top + plotH / 2
    })" text-anchor="middle">latency (ms)</text></svg>`,
  );
  out.push(
    `<div class="legend">${series
      .map(
        (s) =>
          `<span><i class="sw" style="background:${s.cls === 'l1' ? '#4e79a7' : s.cls === 'l2' ? '#f28e2b' : '#e15759'}"></i>${s.name}</span>`,
      )
      .join('')}</div>`,
  );
  return out.join('');
}
