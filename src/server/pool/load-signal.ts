/**
 * A server's own account of its load, read from what it publishes (wire-formats.md §15): how many requests
 * it is running and how many wait, and how full its KV cache is. Counts include other clients' requests,
 * which a gateway's own in-flight count cannot see.
 */
export interface LoadSignal {
  /** Requests being generated (llama-server `requests_processing`, vLLM `num_requests_running`). */
  running?: number | undefined;
  /** Requests queued for a free slot (llama-server `requests_deferred`, vLLM `num_requests_waiting`). */
  waiting?: number | undefined;
  /** KV-cache use, 0 to 1 (vLLM `kv_cache_usage_perc`, SGLang `token_usage`). */
  cacheUsage?: number | undefined;
}

/** Prometheus names of each signal, per server, in the order they are tried. */
const RUNNING = [
  'llamacpp:requests_processing',
  'vllm:num_requests_running',
  'sglang:num_running_reqs',
] as const;
const WAITING = ['llamacpp:requests_deferred', 'vllm:num_requests_waiting', 'sglang:num_queue_reqs'] as const;
const CACHE_USAGE = ['vllm:kv_cache_usage_perc', 'vllm:gpu_cache_usage_perc', 'sglang:token_usage'] as const;

/**
 * The load signal in a Prometheus text exposition (`GET /metrics` of llama-server with `--metrics`, vLLM,
 * SGLang): counts summed over their label sets (vLLM labels by model and engine), the cache use the
 * fullest engine's. Undefined when the
 * text has none of the gauges (another server's metrics, or an HTML page).
 */
export function loadFromPrometheus(text: string): LoadSignal | undefined {
  const values = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const nameEnd = line.search(/[{ ]/);
    if (nameEnd <= 0) continue;
    const name = line.slice(0, nameEnd);
    if (!WANTED.has(name)) continue;
    const afterLabels = line[nameEnd] === '{' ? line.indexOf('}', nameEnd) + 1 : nameEnd;
    if (afterLabels <= 0) continue;
    const value = Number(line.slice(afterLabels).trim().split(/\s+/)[0]);
    if (!Number.isFinite(value)) continue;
    const seen = values.get(name);
    // Counts add up over engines and models; a cache fraction is as full as the fullest engine's.
    if (seen === undefined) values.set(name, value);
    else values.set(name, CACHE.has(name) ? Math.max(seen, value) : seen + value);
  }
  const signal: LoadSignal = {};
  const running = first(values, RUNNING);
  const waiting = first(values, WAITING);
  const cacheUsage = first(values, CACHE_USAGE);
  if (running !== undefined) signal.running = running;
  if (waiting !== undefined) signal.waiting = waiting;
  if (cacheUsage !== undefined) signal.cacheUsage = cacheUsage;
  return running === undefined && waiting === undefined && cacheUsage === undefined ? undefined : signal;
}

const WANTED = new Set<string>([...RUNNING, ...WAITING, ...CACHE_USAGE]);
const CACHE = new Set<string>(CACHE_USAGE);

function first(values: ReadonlyMap<string, number>, names: readonly string[]): number | undefined {
  for (const name of names) {
    const value = values.get(name);
    if (value !== undefined) return value;
  }
  return undefined;
}

/**
 * The load signal in llama-server's `GET /slots` (with `--slots`): an array of slots, each with
 * `is_processing`. Running is the busy slots; waiting is unknown (a queued request holds no slot).
 * Undefined when the body is not such an array.
 */
export function loadFromSlots(body: unknown): LoadSignal | undefined {
  if (!Array.isArray(body) || body.length === 0) return undefined;
  let running = 0;
  for (const slot of body) {
    if (typeof slot !== 'object' || slot === null) return undefined;
    const processing = (slot as { is_processing?: unknown }).is_processing;
    if (typeof processing !== 'boolean') return undefined;
    if (processing) running += 1;
  }
  return { running };
}
