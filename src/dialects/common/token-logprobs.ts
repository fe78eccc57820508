import type { TokenLogprob, TopLogprob } from '../../events/stream-event.ts';
import { isRecord, type JsonRecord } from './json-fields.ts';

/**
 * Reads token log probabilities in the shapes the servers write:
 * - a list of `{token, logprob, bytes?, id?, top_logprobs?: [...]}` (OpenAI chat's `logprobs.content`,
 *   llama-server's `completion_probabilities` and its `logprobs.content` on every route);
 * - OpenAI's legacy completions object `{tokens, token_logprobs, top_logprobs: [{token: logprob}]}` (vLLM).
 * Undefined when the value is none of them (`null`: not asked for).
 */
export function parseTokenLogprobs(value: unknown): TokenLogprob[] | undefined {
  if (Array.isArray(value)) return tokenList(value);
  if (!isRecord(value)) return undefined;
  if (Array.isArray(value.content)) return tokenList(value.content);
  if (Array.isArray(value.tokens) && Array.isArray(value.token_logprobs)) return legacyCompletions(value);
  return undefined;
}

function tokenList(items: unknown[]): TokenLogprob[] {
  const out: TokenLogprob[] = [];
  for (const item of items) {
    if (!isRecord(item)) continue;
    const entry = logprobEntry(item) as TokenLogprob | undefined;
    if (entry === undefined) continue;
    const top = item.top_logprobs ?? item.top_probs;
    if (Array.isArray(top)) {
      entry.top = [];
      for (const candidate of top) {
        if (!isRecord(candidate)) continue;
        const alternative = logprobEntry(candidate);
        if (alternative !== undefined) entry.top.push(alternative);
      }
    }
    out.push(entry);
  }
  return out;
}

function logprobEntry(item: JsonRecord): TopLogprob | undefined {
  const token = typeof item.token === 'string' ? item.token : undefined;
  // llama-server's `post_sampling_probs` mode writes `prob` instead of `logprob`.
  const logprob =
    typeof item.logprob === 'number'
      ? item.logprob
      : typeof item.prob === 'number'
        ? Math.log(item.prob)
        : undefined;
  if (token === undefined || logprob === undefined) return undefined;
  const entry: TopLogprob = { token, logprob };
  if (Array.isArray(item.bytes)) entry.bytes = item.bytes.filter((b): b is number => typeof b === 'number');
  if (typeof item.id === 'number') entry.id = item.id;
  return entry;
}

function legacyCompletions(value: JsonRecord): TokenLogprob[] {
  const tokens = value.tokens as unknown[];
  const logprobs = value.token_logprobs as unknown[];
  const tops = Array.isArray(value.top_logprobs) ? value.top_logprobs : [];
  const out: TokenLogprob[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i];
    const logprob = logprobs[i];
    if (typeof token !== 'string') continue;
    // The prompt's first token has a null log probability (echo): kept as -Infinity would invent one.
    if (typeof logprob !== 'number') continue;
    const entry: TokenLogprob = { token, logprob };
    const top = tops[i];
    if (isRecord(top)) {
      entry.top = Object.entries(top)
        .filter((pair): pair is [string, number] => typeof pair[1] === 'number')
        .map(([candidate, lp]) => ({ token: candidate, logprob: lp }));
    }
    out.push(entry);
  }
  return out;
}
