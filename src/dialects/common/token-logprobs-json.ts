import type { TokenLogprob, TopLogprob } from '../../events/stream-event.ts';
import type { JsonRecord } from './json-fields.ts';

/**
 * Token log probabilities as a list of `{token, logprob, bytes, top_logprobs}` (OpenAI chat's
 * `logprobs.content`), or in llama-server's key order `{id, token, bytes, logprob, top_logprobs}` (its
 * `completion_probabilities` and its `logprobs.content` on every route). The inverse of
 * `parseTokenLogprobs`; a field the event does not have is left out, never invented.
 */
export function tokenLogprobsList(
  logprobs: readonly TokenLogprob[],
  order: 'openai' | 'llamacpp',
): JsonRecord[] {
  return logprobs.map((entry) => {
    const out = logprobEntry(entry, order);
    out.top_logprobs = (entry.top ?? []).map((top) => logprobEntry(top, order));
    return out;
  });
}

/** OpenAI's legacy completions object: `{tokens, token_logprobs, top_logprobs: [{token: logprob}], text_offset}`. */
export function legacyCompletionsLogprobs(logprobs: readonly TokenLogprob[], textOffset: number): JsonRecord {
  const tokens: string[] = [];
  const tokenLogprobs: number[] = [];
  const tops: Record<string, number>[] = [];
  const offsets: number[] = [];
  let offset = textOffset;
  for (const entry of logprobs) {
    tokens.push(entry.token);
    tokenLogprobs.push(entry.logprob);
    const top: Record<string, number> = {};
    for (const candidate of entry.top ?? []) top[candidate.token] = candidate.logprob;
    tops.push(top);
    offsets.push(offset);
    offset += entry.token.length;
  }
  return { text_offset: offsets, token_logprobs: tokenLogprobs, tokens, top_logprobs: tops };
}

function logprobEntry(entry: TopLogprob, order: 'openai' | 'llamacpp'): JsonRecord {
  if (order === 'llamacpp') {
    const out: JsonRecord = {};
    if (entry.id !== undefined) out.id = entry.id;
    out.token = entry.token;
    if (entry.bytes !== undefined) out.bytes = entry.bytes;
    out.logprob = entry.logprob;
    return out;
  }
  const out: JsonRecord = { token: entry.token, logprob: entry.logprob };
  // OpenAI writes `bytes: null` for a token it has no bytes of.
  out.bytes = entry.bytes ?? null;
  return out;
}
