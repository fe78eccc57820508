import type { TokenLogprob, TopLogprob } from '../../events/stream-event.ts';
import type { JsonRecord } from './json-fields.ts';

const UTF8 = new TextEncoder();

/**
 * The key orders of the token lists the servers write:
 * - `openai`: `{token, logprob, bytes, top_logprobs}` (OpenAI chat's `logprobs.content`; `bytes: null`
 *   when unknown, as OpenAI writes it);
 * - `llamacpp`: `{id, token, bytes, logprob, top_logprobs}` (llama-server's `completion_probabilities`
 *   and its `logprobs.content` on every route);
 * - `ollama`: Go's `api.Logprob` (embedded `TokenLogprob`): `{token, logprob, bytes?, top_logprobs?}`,
 *   `bytes` and `top_logprobs` `omitempty` (left out when unknown or empty);
 * - `responses-delta`: the Responses `output_text.delta` / `.done` events' `Logprob`:
 *   `{token, logprob, bytes?, top_logprobs}` (the SDK types have no `bytes` here; written when known);
 * - `responses-part`: the `output_text` content part's `Logprob` (`ResponseOutputText.Logprob`):
 *   `{token, bytes, logprob, top_logprobs}`, `bytes` required, so the token's UTF-8 bytes when the
 *   upstream sent none (what OpenAI documents `bytes` to be).
 */
export type TokenLogprobsOrder = 'openai' | 'llamacpp' | 'ollama' | 'responses-delta' | 'responses-part';

/**
 * Token log probabilities as a list in one server's key order (see `TokenLogprobsOrder`). The inverse
 * of `parseTokenLogprobs`; a field the event does not have is left out, never invented.
 */
export function tokenLogprobsList(
  logprobs: readonly TokenLogprob[],
  order: TokenLogprobsOrder,
): JsonRecord[] {
  return logprobs.map((entry) => {
    const out = logprobEntry(entry, order);
    const top = (entry.top ?? []).map((candidate) => logprobEntry(candidate, order));
    // Go's `omitempty` leaves an empty list out.
    if (order !== 'ollama' || top.length > 0) out.top_logprobs = top;
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

function logprobEntry(entry: TopLogprob, order: TokenLogprobsOrder): JsonRecord {
  if (order === 'ollama' || order === 'responses-delta') {
    const out: JsonRecord = { token: entry.token, logprob: entry.logprob };
    if (entry.bytes !== undefined && (order !== 'ollama' || entry.bytes.length > 0)) out.bytes = entry.bytes;
    return out;
  }
  if (order === 'responses-part') {
    return {
      token: entry.token,
      bytes: entry.bytes ?? [...UTF8.encode(entry.token)],
      logprob: entry.logprob,
    };
  }
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
