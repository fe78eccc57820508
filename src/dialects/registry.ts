import { anthropicMessages } from './anthropic-messages/index.ts';
import type { DetectProbe, Dialect, DialectId } from './dialect.ts';
import { llamacpp } from './llamacpp/index.ts';
import { ollamaChat } from './ollama-chat/index.ts';
import { ollamaGenerate } from './ollama-generate/index.ts';
import { openAiChat } from './openai-chat/index.ts';
import { openAiCompletions } from './openai-completions/index.ts';
import { openAiResponses } from './openai-responses/index.ts';
import { tgi } from './tgi/index.ts';

/** Every dialect, by id. Adding a dialect means writing its folder and adding it here. */
export const DIALECTS: Readonly<Record<string, Dialect>> = {
  'openai-chat': openAiChat,
  'openai-completions': openAiCompletions,
  // Chat before generate: when only the NDJSON content type is known, both score alike and the first wins.
  'ollama-chat': ollamaChat,
  'ollama-generate': ollamaGenerate,
  llamacpp,
  tgi,
  'anthropic-messages': anthropicMessages,
  'openai-responses': openAiResponses,
};

export function getDialect(id: DialectId | string): Dialect {
  const dialect = DIALECTS[id];
  if (dialect === undefined) {
    throw new TypeError(`unknown dialect ${JSON.stringify(id)}; known: ${Object.keys(DIALECTS).join(', ')}`);
  }
  return dialect;
}

export function isDialectId(value: string): value is DialectId {
  return Object.hasOwn(DIALECTS, value);
}

/**
 * Paths already matched (null: none): a server asks once or twice per request, for the same few paths.
 * Bounded, as paths come from clients: past the bound, new paths are matched without being kept.
 */
const byPath = new Map<string, Dialect | null>();
const BY_PATH_LIMIT = 256;

/** The dialect whose endpoint path this is (the end of the path is matched, so proxies' prefixes work). */
export function dialectForPath(path: string): Dialect | undefined {
  const known = byPath.get(path);
  if (known !== undefined) return known ?? undefined;
  const found = matchPath(path);
  if (byPath.size < BY_PATH_LIMIT) byPath.set(path, found ?? null);
  return found;
}

function matchPath(path: string): Dialect | undefined {
  const clean = path.replace(/\/+$/, '');
  let best: Dialect | undefined;
  let bestLength = 0;
  for (const dialect of Object.values(DIALECTS)) {
    for (const candidate of dialect.paths) {
      if ((clean === candidate || clean.endsWith(candidate)) && candidate.length > bestLength) {
        best = dialect;
        bestLength = candidate.length;
      }
    }
  }
  return best;
}

/** The dialect that best matches what was seen, with its score; undefined when nothing matches. */
export function detectDialect(probe: DetectProbe): { dialect: Dialect; score: number } | undefined {
  let best: { dialect: Dialect; score: number } | undefined;
  for (const dialect of Object.values(DIALECTS)) {
    const score = dialect.detect(probe);
    if (score > 0 && (best === undefined || score > best.score)) best = { dialect, score };
  }
  return best;
}
