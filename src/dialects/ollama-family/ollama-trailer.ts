import { type FinishReason, unifyFinishReason } from '../../events/finish-reason.ts';
import type { FinishEvent, TimingsEvent, UsageEvent } from '../../events/stream-event.ts';
import { msToNanos, nanosToMs, type Timings, type Usage } from '../../events/usage.ts';
import { isRecord, type JsonRecord, numberField } from '../common/json-fields.ts';

/**
 * The trailer of Ollama's native streams: the `done: true` line's `done_reason`, `context`
 * (`/api/generate` only) and embedded `api.Metrics` (wire-formats.md §6.1, §7, §8).
 *
 * Decoded, it becomes `finish`, then `usage` (when a count or `context` is present), then `timings`
 * (when a duration is present). `usage.raw` keeps `prompt_eval_count`, `eval_count` and `context` as
 * sent; `timings.raw` keeps the six metrics as sent. The `context` token array has no normalized home,
 * so it rides in `usage.raw.context`, where the `/api/generate` encoder finds it again.
 */
export function parseOllamaTrailer(
  payload: JsonRecord,
  sawToolCalls: boolean,
): [FinishEvent, ...(UsageEvent | TimingsEvent)[]] {
  const events: [FinishEvent, ...(UsageEvent | TimingsEvent)[]] = [
    ollamaFinish(payload.done_reason, sawToolCalls),
  ];
  const promptCount = numberField(payload, 'prompt_eval_count');
  const evalCount = numberField(payload, 'eval_count');
  const context = Array.isArray(payload.context) ? payload.context : undefined;
  if (promptCount !== undefined || evalCount !== undefined || context !== undefined) {
    const raw: JsonRecord = {};
    const usage: Usage = {};
    if (promptCount !== undefined) {
      usage.inputTokens = promptCount;
      raw.prompt_eval_count = promptCount;
    }
    if (evalCount !== undefined) {
      usage.outputTokens = evalCount;
      raw.eval_count = evalCount;
    }
    if (context !== undefined) raw.context = context;
    usage.raw = raw;
    events.push({ type: 'usage', usage });
  }
  const total = numberField(payload, 'total_duration');
  const load = numberField(payload, 'load_duration');
  const promptDuration = numberField(payload, 'prompt_eval_duration');
  const evalDuration = numberField(payload, 'eval_duration');
  if (
    total !== undefined ||
    load !== undefined ||
    promptDuration !== undefined ||
    evalDuration !== undefined
  ) {
    const timings: Timings = {};
    const raw: JsonRecord = {};
    if (total !== undefined) raw.total_duration = total;
    if (load !== undefined) {
      timings.loadMs = nanosToMs(load);
      raw.load_duration = load;
    }
    if (promptCount !== undefined) raw.prompt_eval_count = promptCount;
    if (promptDuration !== undefined) {
      timings.promptEvalMs = nanosToMs(promptDuration);
      raw.prompt_eval_duration = promptDuration;
    }
    if (promptCount !== undefined) timings.promptEvalTokens = promptCount;
    if (evalCount !== undefined) raw.eval_count = evalCount;
    if (evalDuration !== undefined) {
      timings.evalMs = nanosToMs(evalDuration);
      raw.eval_duration = evalDuration;
    }
    if (evalCount !== undefined) timings.evalTokens = evalCount;
    if (total !== undefined) timings.totalMs = nanosToMs(total);
    timings.raw = raw;
    events.push({ type: 'timings', timings });
  }
  return events;
}

/**
 * `done_reason` -> finish. `stop` and `length` are Ollama's words (`llm.DoneReason`); `load` and
 * `unload` (a request that only loaded or unloaded the model) are `other`; a missing reason (Go writes
 * none for an internal "connection closed" reason, and old servers none at all) counts as `stop`, with
 * `raw: null`. Native Ollama never says `tool_calls`: a stop after tool calls in the same stream is the
 * model stopping to call tools, so it is `tool-calls` (raw stays `stop`), as Ollama's own OpenAI layer
 * reports it.
 */
export function ollamaFinish(doneReason: unknown, sawToolCalls: boolean): FinishEvent {
  const raw = typeof doneReason === 'string' && doneReason !== '' ? doneReason : null;
  let reason: FinishReason = raw === null ? 'stop' : unifyFinishReason(raw);
  if (reason === 'stop' && sawToolCalls) reason = 'tool-calls';
  return { type: 'finish', reason, raw };
}

/**
 * The `done_reason` to write for a finish: `length` stays, `load`/`unload` pass through, everything
 * else is `stop` (Ollama has no word for tool calls, filters or errors). No finish at all: none written,
 * as Go omits an empty reason.
 */
export function ollamaDoneReason(finish: FinishEvent | undefined): string | undefined {
  if (finish === undefined) return undefined;
  if (finish.reason === 'length') return 'length';
  if (finish.reason === 'other' && (finish.raw === 'load' || finish.raw === 'unload')) return finish.raw;
  return 'stop';
}

/**
 * The fields the `done: true` line carries after `done`, in Go struct order: `done_reason`, `context`
 * (`/api/generate`, when the usage came from an Ollama that sent one), then the metrics as integer
 * nanoseconds. Every one is `omitempty`: zero or unknown values are left out.
 */
export function ollamaTrailerFields(
  trailer: { finish?: FinishEvent | undefined; usage?: Usage | undefined; timings?: Timings | undefined },
  options: { context: boolean },
): JsonRecord {
  const { usage, timings } = trailer;
  const fields: JsonRecord = {};
  const doneReason = ollamaDoneReason(trailer.finish);
  if (doneReason !== undefined) fields.done_reason = doneReason;
  const usageRaw = usage?.raw;
  if (options.context && isRecord(usageRaw)) {
    const context = usageRaw.context;
    if (Array.isArray(context) && context.length > 0 && context.every((n) => typeof n === 'number')) {
      fields.context = context;
    }
  }
  putNonZero(fields, 'total_duration', nanos(timings?.totalMs));
  putNonZero(fields, 'load_duration', nanos(timings?.loadMs));
  putNonZero(fields, 'prompt_eval_count', count(usage?.inputTokens ?? timings?.promptEvalTokens));
  putNonZero(fields, 'prompt_eval_duration', nanos(timings?.promptEvalMs));
  putNonZero(fields, 'eval_count', count(usage?.outputTokens ?? timings?.evalTokens));
  putNonZero(fields, 'eval_duration', nanos(timings?.evalMs));
  return fields;
}

function nanos(ms: number | undefined): number | undefined {
  return ms === undefined || !Number.isFinite(ms) ? undefined : msToNanos(ms);
}

function count(n: number | undefined): number | undefined {
  return n === undefined || !Number.isFinite(n) ? undefined : Math.round(n);
}

function putNonZero(fields: JsonRecord, key: string, value: number | undefined): void {
  if (value !== undefined && value !== 0) fields[key] = value;
}
