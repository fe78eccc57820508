import type { DialectId } from '../../dialects/dialect.ts';

export type ServerName = 'vLLM' | 'llama.cpp' | 'TGI' | 'Ollama' | 'the tokenwire gateway';

export interface ServerGuess {
  server: ServerName;
  /** What pointed to it. */
  evidence: string[];
  /** Other servers something pointed to (a gateway or proxy in between mixes fingerprints). */
  others: ServerName[];
}

export interface ServerClues {
  dialect: DialectId | undefined;
  /** Response headers, lower-case names. */
  headers: Record<string, string>;
  /** The first JSON payloads of the stream, parsed (not sentinels), in order. */
  payloads: readonly unknown[];
  /** SSE `data:` lines without the space after the colon. */
  dataWithoutSpace: number;
  dataWithSpace: number;
}

/** The header every stream of the tokenwire gateway carries (src/server/create-gateway.ts). */
const GATEWAY_HEADER = 'x-tokenwire-stream-id';

/**
 * Which server wrote a stream, from the fingerprints each leaves: headers (`Server:
 * llama.cpp`, TGI's `x-compute-*`, Starlette's `charset=utf-8`), the key order of the first payload
 * (`"object"` first: TGI; `"choices"` first: llama.cpp), native shapes (`id_slot`, `token` +
 * `generated_text`, `created_at`), `system_fingerprint: "fp_ollama"`, vLLM's own fields (`stop_reason`,
 * `token_ids`, `prompt_token_ids`), and `data:` without a space (TGI up to 2.0.x). The tokenwire gateway
 * names itself with its `x-tokenwire-stream-id` header and wins over the fingerprints of the server whose
 * bytes it writes (those are kept in `others`). Undefined when no fingerprint is there.
 */
export function guessServer(clues: ServerClues): ServerGuess | undefined {
  const votes = new Map<ServerName, string[]>();
  const vote = (server: ServerName, why: string) => {
    const list = votes.get(server) ?? [];
    if (!list.includes(why)) list.push(why);
    votes.set(server, list);
  };
  const headers = clues.headers;
  if (/llama\.cpp/i.test(headers.server ?? '')) vote('llama.cpp', 'the Server: llama.cpp header');
  if (headers['x-compute-type'] !== undefined || headers['x-compute-characters'] !== undefined)
    vote('TGI', 'the x-compute-* headers');
  const contentType = (headers['content-type'] ?? '').toLowerCase();
  if (/^text\/event-stream\s*;\s*charset=utf-8/.test(contentType))
    vote('vLLM', 'Content-Type text/event-stream; charset=utf-8 (Starlette)');
  if (clues.dialect === 'ollama-chat' || clues.dialect === 'ollama-generate') {
    if (contentType.startsWith('application/x-ndjson')) vote('Ollama', 'an application/x-ndjson stream');
  }
  if (clues.dataWithoutSpace > 0 && clues.dataWithSpace === 0)
    vote('TGI', '`data:` without a space after the colon (TGI up to 2.0.x)');

  const first = clues.payloads[0];
  if (isRecord(first)) {
    const keys = Object.keys(first);
    if (keys[0] === 'object' && 'choices' in first) vote('TGI', 'chunks start with the "object" key');
    if (keys[0] === 'choices') vote('llama.cpp', 'chunks start with the "choices" key');
    if ('token' in first && ('generated_text' in first || 'details' in first))
      vote('TGI', 'native /generate_stream events (token, generated_text)');
    if ('id_slot' in first || ('stop' in first && 'tokens_predicted' in first))
      vote('llama.cpp', 'native /completion events (id_slot, tokens_predicted)');
    if ('created_at' in first && 'done' in first) vote('Ollama', 'native lines with created_at and done');
    // OpenAI, vLLM and Ollama number every Responses event; llama-server (b10108) numbers none.
    if (
      clues.dialect === 'openai-responses' &&
      typeof first.type === 'string' &&
      !('sequence_number' in first)
    )
      vote('llama.cpp', 'Responses events without sequence_number');
  }
  for (const payload of clues.payloads) {
    if (!isRecord(payload)) continue;
    if (payload.system_fingerprint === 'fp_ollama') vote('Ollama', 'system_fingerprint "fp_ollama"');
    if (typeof payload.system_fingerprint === 'string' && /^b\d+-/.test(payload.system_fingerprint))
      vote('llama.cpp', `system_fingerprint "${payload.system_fingerprint}" (a llama.cpp build)`);
    if ('prompt_token_ids' in payload) vote('vLLM', 'the prompt_token_ids field');
    const choice = Array.isArray(payload.choices) ? payload.choices[0] : undefined;
    if (isRecord(choice)) {
      if ('stop_reason' in choice) vote('vLLM', 'the stop_reason field');
      if ('token_ids' in choice) vote('vLLM', 'the token_ids field');
    }
  }
  if (headers[GATEWAY_HEADER] !== undefined) {
    // It imitates a server's bytes on purpose: those fingerprints say which dialect flavor it writes.
    const evidence = [`its ${GATEWAY_HEADER} header`];
    // Which of its upstreams answered, and which failed before it (by name).
    const upstream = headers['x-tokenwire-upstream'];
    if (upstream !== undefined)
      evidence.push(`answered by its upstream "${upstream}" (x-tokenwire-upstream)`);
    const attempts = headers['x-tokenwire-attempts'];
    if (attempts !== undefined) evidence.push(`after failed attempts: ${attempts} (x-tokenwire-attempts)`);
    return { server: 'the tokenwire gateway', evidence, others: [...votes.keys()] };
  }
  let best: ServerName | undefined;
  for (const [server, why] of votes) {
    if (best === undefined || why.length > votes.get(best)!.length) best = server;
  }
  if (best === undefined) return undefined;
  return {
    server: best,
    evidence: votes.get(best)!,
    others: [...votes.keys()].filter((server) => server !== best),
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
