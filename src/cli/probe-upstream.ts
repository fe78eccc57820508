import type { DialectId } from '../dialects/dialect.ts';
import { isDialectId } from '../dialects/registry.ts';
import type { FetchLike } from '../server/upstream.ts';
import { UsageError } from './cli-io.ts';

export interface ProbeResult {
  server: 'ollama' | 'llamacpp' | 'tgi' | 'openai' | 'unknown';
  dialects: DialectId[];
  models: string[];
  /**
   * Set when no probe got an answer because the connection itself failed (refused, host not found,
   * timed out): what went wrong, in words ("connection refused"). Then the server is `unknown`.
   */
  unreachable?: string | undefined;
}

/**
 * A failed fetch in words, from the Node error codes in its `cause` chain ("connection refused" for
 * ECONNREFUSED); undefined when it is not a connection failure.
 */
export function connectionFailure(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth += 1) {
    const code = (current as { code?: unknown }).code;
    const words = typeof code === 'string' ? CONNECTION_ERRORS[code] : undefined;
    if (words !== undefined) return words;
    if ((current as { name?: unknown }).name === 'TimeoutError') return 'no answer in time';
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

const CONNECTION_ERRORS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host not found',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ECONNRESET: 'connection reset',
  ETIMEDOUT: 'connection timed out',
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
};

/**
 * Finds out what a server is by asking the endpoints only it has: Ollama's /api/tags, llama-server's
 * /props, TGI's /info, then the OpenAI /v1/models every one of them serves.
 */
export async function probeUpstream(
  baseUrl: string,
  fetchFn: FetchLike,
  headers: Record<string, string> = {},
): Promise<ProbeResult> {
  const base = baseUrl.replace(/\/+$/, '');
  let answered = false;
  let failure: string | undefined;
  const get = async (path: string): Promise<unknown> => {
    let response: Response;
    try {
      response = await fetchFn(new Request(`${base}${path}`, { headers, signal: AbortSignal.timeout(3000) }));
    } catch (error) {
      failure ??= connectionFailure(error);
      return undefined;
    }
    answered = true;
    if (!response.ok) return undefined;
    try {
      return await response.json();
    } catch {
      return undefined;
    }
  };
  const tags = (await get('/api/tags')) as { models?: { name?: string }[] } | undefined;
  if (tags !== undefined && Array.isArray(tags.models)) {
    return {
      server: 'ollama',
      dialects: ['ollama-chat', 'ollama-generate', 'openai-chat', 'openai-completions'],
      models: tags.models.map((m) => m.name ?? '').filter((n) => n !== ''),
    };
  }
  const models = await listOpenAiModels(get);
  const props = (await get('/props')) as Record<string, unknown> | undefined;
  if (props !== undefined && ('default_generation_settings' in props || 'total_slots' in props)) {
    return { server: 'llamacpp', dialects: ['openai-chat', 'openai-completions', 'llamacpp'], models };
  }
  const info = (await get('/info')) as Record<string, unknown> | undefined;
  if (info !== undefined && 'model_id' in info) {
    const id = typeof info.model_id === 'string' ? [info.model_id] : [];
    return {
      server: 'tgi',
      dialects: ['openai-chat', 'openai-completions', 'tgi'],
      models: models.length > 0 ? models : id,
    };
  }
  if (models.length > 0) return { server: 'openai', dialects: ['openai-chat', 'openai-completions'], models };
  const unknown: ProbeResult = { server: 'unknown', dialects: [], models: [] };
  // Nothing answered at all: the connection is the problem, not the kind of server.
  if (!answered && failure !== undefined) unknown.unreachable = failure;
  return unknown;
}

async function listOpenAiModels(get: (path: string) => Promise<unknown>): Promise<string[]> {
  const list = (await get('/v1/models')) as { data?: { id?: string }[] } | undefined;
  if (list === undefined || !Array.isArray(list.data)) return [];
  return list.data.map((m) => m.id ?? '').filter((id) => id !== '');
}

/** `--upstream-dialect a,b` -> dialect ids, refusing unknown ones. */
export function parseDialectList(value: string): DialectId[] {
  const ids = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  for (const id of ids) {
    if (!isDialectId(id)) throw new UsageError(`unknown dialect ${JSON.stringify(id)}`);
  }
  return ids as DialectId[];
}
