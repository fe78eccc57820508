import type { Timings } from '../../events/usage.ts';
import { isRecord, type JsonRecord, numberField } from '../common/json-fields.ts';

/** Reads llama-server's `timings` object (milliseconds, floats). */
export function parseLlamacppTimings(timings: JsonRecord): Timings {
  const out: Timings = { raw: timings };
  const promptMs = numberField(timings, 'prompt_ms');
  const promptN = numberField(timings, 'prompt_n');
  const predictedMs = numberField(timings, 'predicted_ms');
  const predictedN = numberField(timings, 'predicted_n');
  if (promptMs !== undefined) out.promptEvalMs = promptMs;
  if (promptN !== undefined) out.promptEvalTokens = promptN;
  if (predictedMs !== undefined) out.evalMs = predictedMs;
  if (predictedN !== undefined) out.evalTokens = predictedN;
  return out;
}

/**
 * Writes llama-server's `timings` object. When the timings came from a llama-server in the first
 * place, its own object is written back unchanged (its floats are the server's doubles).
 */
export function llamacppTimingsObject(timings: Timings): JsonRecord {
  if (isRecord(timings.raw) && 'prompt_n' in timings.raw && 'predicted_n' in timings.raw) return timings.raw;
  const promptN = timings.promptEvalTokens ?? 0;
  const promptMs = timings.promptEvalMs ?? 0;
  const predictedN = timings.evalTokens ?? 0;
  const predictedMs = timings.evalMs ?? 0;
  return {
    cache_n: 0,
    prompt_n: promptN,
    prompt_ms: promptMs,
    prompt_per_token_ms: promptN > 0 ? promptMs / promptN : 0,
    prompt_per_second: promptMs > 0 ? (1e3 / promptMs) * promptN : 0,
    predicted_n: predictedN,
    predicted_ms: predictedMs,
    predicted_per_token_ms: predictedN > 0 ? predictedMs / predictedN : 0,
    predicted_per_second: predictedMs > 0 ? (1e3 / predictedMs) * predictedN : 0,
  };
}
