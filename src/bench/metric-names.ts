import type { MetricKey } from './level-recorder.ts';

/** How one of our metrics is named (and differs) in the tools people compare against. */
export interface MetricName {
  key: MetricKey;
  /** Our short name, as the results table shows it. */
  name: string;
  unit: 'ms' | 'tok/s' | 'tokens';
  /** What exactly it measures here. */
  definition: string;
  /** vLLM `vllm bench serve`. */
  vllm: string;
  /** NVIDIA AIPerf. */
  aiperf: string;
  /** GuideLLM. */
  guidellm: string;
  /** Where their definition differs from ours. */
  note?: string;
}

/**
 * Our metrics beside the names vLLM bench, AIPerf and GuideLLM give them. The names disagree most
 * on the two decode metrics:
 *
 * - the gap between consecutive chunks is vLLM's **ITL** and AIPerf's **ICL** (Inter Chunk Latency);
 *   GuideLLM has no such metric;
 * - (E2E - TTFT) / (tokens - 1) is vLLM's **TPOT**, AIPerf's **ITL** (Inter Token Latency) and
 *   GuideLLM's `inter_token_latency_ms`; GuideLLM's `time_per_output_token_ms` is something else:
 *   (last token - request start) / tokens, TTFT included.
 *
 * Sources (read from each project's source):
 * - vLLM: vllm/benchmarks/serve.py (`BenchmarkMetrics`: ttft, tpot "excl. 1st token", itl, e2el;
 *   `tpot = (latency - ttft) / (output_len - 1)`; goodput keys ttft, tpot, e2el) and
 *   vllm/benchmarks/lib/endpoint_request_func.py (`itl` appended per streamed chunk; `st` taken at
 *   the actual send; latency ends at the last token chunk; `ignore_eos` in the payload).
 * - AIPerf (ai-dynamo/aiperf): src/aiperf/metrics/types/inter_token_latency_metric.py ("Inter Token
 *   Latency" = (Request Latency - TTFT) / (OSL - 1)), inter_chunk_latency_metric.py ("Inter Chunk
 *   Latency", gaps between content responses), request_latency_metric.py (ends at the last content
 *   response), good_request_count_metric.py (`--goodput`), replay_sched_lag_metrics.py (send lag, in
 *   fixed-schedule trace replay only, relative to the least-late request).
 * - GuideLLM (vllm-project/guidellm): src/guidellm/schemas/request_stats.py
 *   (`time_to_first_token_ms`, `inter_token_latency_ms`, `time_per_output_token_ms`,
 *   `request_latency`, `output_tokens_per_second` = output tokens / request latency),
 *   schemas/benchmark/goodput.py (`GoodputSLO` ttft_ms, tpot_ms (checked against
 *   inter_token_latency_ms), e2el_ms), schemas/info.py (`targeted_start` is recorded, but latencies
 *   count from `request_start`, the actual start).
 */
export const METRIC_NAMES: readonly MetricName[] = [
  {
    key: 'ttft',
    name: 'TTFT',
    unit: 'ms',
    definition: 'intended send -> first content chunk (text, reasoning or tool call)',
    vllm: 'TTFT',
    aiperf: 'TTFT',
    guidellm: 'time_to_first_token_ms',
    note: "vLLM and GuideLLM count from the actual send; vLLM's chat TTFT stops at the first chunk with choices, even the empty role chunk",
  },
  {
    key: 'ttfb',
    name: 'TTFB',
    unit: 'ms',
    definition: 'intended send -> first body byte',
    vllm: '-',
    aiperf: '-',
    guidellm: '-',
  },
  {
    key: 'itl',
    name: 'ITL (inter-chunk)',
    unit: 'ms',
    definition: 'gap between consecutive content chunks (a chunk may hold several tokens)',
    vllm: 'ITL',
    aiperf: 'ICL',
    guidellm: '-',
    note: "AIPerf calls this Inter Chunk Latency; its 'ITL' is our TPOT; GuideLLM has no per-chunk metric",
  },
  {
    key: 'tpot',
    name: 'TPOT',
    unit: 'ms',
    definition: '(E2E - TTFT) / (output tokens - 1), tokens from usage',
    vllm: 'TPOT',
    aiperf: 'ITL',
    guidellm: 'inter_token_latency_ms',
    note: "GuideLLM's time_per_output_token_ms is different: (last token - start) / tokens, TTFT included",
  },
  {
    key: 'e2e',
    name: 'E2E',
    unit: 'ms',
    definition: 'intended send -> end of stream',
    vllm: 'E2EL',
    aiperf: 'Request Latency',
    guidellm: 'request_latency',
    note: 'vLLM and AIPerf stop at the last token chunk, GuideLLM reports seconds',
  },
  {
    key: 'tokensPerSecond',
    name: 'tok/s per stream',
    unit: 'tok/s',
    definition: '1000 / TPOT: the decode speed one user sees',
    vllm: '-',
    aiperf: 'Output Token Throughput Per User',
    guidellm: '-',
    note: "GuideLLM's output_tokens_per_second is tokens / request latency, TTFT included",
  },
  {
    key: 'outputTokens',
    name: 'output tokens',
    unit: 'tokens',
    definition: "the server's usage count (estimated from chunks when absent, flagged)",
    vllm: 'output_lens',
    aiperf: 'OSL',
    guidellm: 'output_tokens',
  },
  {
    key: 'lag',
    name: 'schedule lag',
    unit: 'ms',
    definition: "actual send - intended send: the bench's own delay (counted in every latency)",
    vllm: '-',
    aiperf: 'Replay Schedule Lag',
    guidellm: '-',
    note: 'vLLM does not measure it; AIPerf only in trace replay, relative to the least-late request; GuideLLM records targeted_start but measures from request_start',
  },
  {
    key: 'queue',
    name: 'TTFT: queue+net',
    unit: 'ms',
    definition: 'TTFT from the send - load - prompt eval - first-token decode (server timings)',
    vllm: '-',
    aiperf: '-',
    guidellm: '-',
  },
  {
    key: 'load',
    name: 'TTFT: model load',
    unit: 'ms',
    definition: 'server-reported load time (Ollama load_duration)',
    vllm: '-',
    aiperf: '-',
    guidellm: '-',
  },
  {
    key: 'promptEval',
    name: 'TTFT: prompt eval',
    unit: 'ms',
    definition: 'server-reported prefill (Ollama prompt_eval_duration, llama.cpp timings.prompt_ms)',
    vllm: '-',
    aiperf: '-',
    guidellm: '-',
  },
  {
    key: 'firstToken',
    name: 'TTFT: 1st decode',
    unit: 'ms',
    definition: 'one decode step: eval time / eval tokens (server timings)',
    vllm: '-',
    aiperf: '-',
    guidellm: '-',
  },
];

/** Goodput's names elsewhere, for the report. */
export const GOODPUT_NAMES = {
  vllm: 'request_goodput (--goodput ttft:MS tpot:MS e2el:MS)',
  aiperf: 'Good Request Count / Goodput (--goodput)',
  guidellm: 'goodput (GoodputSLO ttft_ms, tpot_ms, e2el_ms)',
} as const;
