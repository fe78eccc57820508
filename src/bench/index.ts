/**
 * tokenwire/bench: the load generator behind `tokenwire bench`, as functions and classes (no argv,
 * no printing): run a load level against a streaming endpoint, get HDR distributions, counts,
 * goodput and a timeline back, and render them as text or a self-contained HTML report.
 */
export type { Random } from './arrivals.ts';
export { ArrivalSchedule, gammaSample, seededRandom } from './arrivals.ts';
export type { HtmlReportInput } from './html-report.ts';
export { htmlReport } from './html-report.ts';
export type { Distribution, HistogramBin } from './latency-histogram.ts';
export { LatencyHistogram } from './latency-histogram.ts';
export type { ErrorCount, LevelResult, MetricKey, RequestRow } from './level-recorder.ts';
export { LevelRecorder, METRIC_KEYS } from './level-recorder.ts';
export type { LoadJson, LoadSpec } from './load.ts';
export { describeLoad, loadJson } from './load.ts';
export type { MetricName } from './metric-names.ts';
export { GOODPUT_NAMES, METRIC_NAMES } from './metric-names.ts';
export type { RequestFigures, RequestStatus, TtftBreakdown } from './request-figures.ts';
export { requestFigures, statusOf, tpotMs, ttftBreakdown } from './request-figures.ts';
export type { BenchTarget, LevelOptions, LevelProgress, LevelRun } from './run-level.ts';
export { describeFailure, runLevel } from './run-level.ts';
export type { Slo, SloMetric, SloSample } from './slo.ts';
export { formatSlo, meetsSlo, parseSlo } from './slo.ts';
export type { ReportStyle } from './text-report.ts';
export { formatDuration, formatLevel, formatNameNotes, formatSweep, formatValue } from './text-report.ts';
export type { TimelineSeries } from './timeline.ts';
export { Timeline } from './timeline.ts';
export type { DatasetEntry, Prompt, TokenRange, Workload, WorkloadOptions } from './workload.ts';
export {
  BUILT_IN_PROMPTS,
  createWorkload,
  estimateTokens,
  parseDataset,
  parsePrompts,
  parseTokenRange,
  syntheticPrompt,
} from './workload.ts';
