import type { DialectId } from '../dialects/dialect.ts';
import { isDialectId } from '../dialects/registry.ts';
import type { FetchLike } from '../server/upstream.ts';
import { UsageError } from './cli-io.ts';

export interface ProbeResult {
  server: 'ollama' | 'llamacpp' | 'tgi' | 'openai' | 'unknown';
  dialects: DialectId[];
  models: string[];
}

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
  const get = async (path: string): Promise<unknown> => {
    try {
      const response = await fetchFn(
        new Request(`${base}${path}`, { headers, signal: AbortSignal.timeout(3000) }),
      );
      if (!response.ok) return undefined;
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
  return { server: 'unknown', dialects: [], models: [] };
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
