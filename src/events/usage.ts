/** Token counts as the server reported them. `raw` keeps the server's own object. */
export interface Usage {
  inputTokens?: number | undefined;
  outputTokens?: number | undefined;
  totalTokens?: number | undefined;
  /** Prompt tokens served from a cache (vLLM `cached_tokens`, llama.cpp `cache_n`). */
  cachedInputTokens?: number | undefined;
  /** Prompt tokens written to a cache (Anthropic `cache_creation_input_tokens`; part of `inputTokens`). */
  cacheCreationInputTokens?: number | undefined;
  /** Output tokens spent on reasoning (vLLM 2026 `reasoning_tokens`). */
  reasoningTokens?: number | undefined;
  raw?: unknown;
}

/**
 * Server-side timings, normalized to milliseconds (Ollama reports integer nanoseconds, llama.cpp
 * float milliseconds). `raw` keeps the server's own object.
 */
export interface Timings {
  /** Model load time (Ollama `load_duration`). */
  loadMs?: number | undefined;
  /** Prompt evaluation (prefill) time. */
  promptEvalMs?: number | undefined;
  /** Prompt tokens evaluated in that time. */
  promptEvalTokens?: number | undefined;
  /** Generation (decode) time. */
  evalMs?: number | undefined;
  /** Tokens generated in that time. */
  evalTokens?: number | undefined;
  /** Whole request time as the server measured it (Ollama `total_duration`). */
  totalMs?: number | undefined;
  raw?: unknown;
}

/** Integer nanoseconds (Go `time.Duration`) to milliseconds. */
export function nanosToMs(nanos: number): number {
  return nanos / 1e6;
}

/** Milliseconds to integer nanoseconds, as Go writes a `time.Duration`. */
export function msToNanos(ms: number): number {
  return Math.round(ms * 1e6);
}
