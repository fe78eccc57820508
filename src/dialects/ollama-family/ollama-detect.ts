import { isRecord } from '../common/json-fields.ts';
import type { DetectProbe } from '../dialect.ts';

/**
 * How sure it is that a probe is Ollama's native `/api/chat` (`kind: 'chat'`) or `/api/generate`
 * stream: a line with `message` and `done` (chat) or `response` and `done` (generate) is certain; the
 * path comes next; `application/x-ndjson` alone says Ollama native but not which endpoint.
 */
export function detectOllamaNative(probe: DetectProbe, kind: 'chat' | 'generate'): number {
  const payload = probe.payload;
  if (isRecord(payload) && 'done' in payload) {
    if ('message' in payload) return kind === 'chat' ? 1 : 0;
    if ('response' in payload) return kind === 'generate' ? 1 : 0;
  }
  const path = probe.path?.replace(/[?#].*$/, '').replace(/\/+$/, '');
  if (path !== undefined) {
    if (path.endsWith('/api/chat')) return kind === 'chat' ? 0.9 : 0;
    if (path.endsWith('/api/generate')) return kind === 'generate' ? 0.9 : 0;
  }
  if (probe.contentType !== undefined && /^application\/x-ndjson\b/i.test(probe.contentType.trim()))
    return 0.5;
  return 0;
}
