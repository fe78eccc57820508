import {
  type ChatImage,
  type ChatMessage,
  type ChatRequest,
  renderPrompt,
} from '../../events/chat-request.ts';
import type { JsonRecord } from '../common/json-fields.ts';
import { extraFields, optionalBoolean, optionalString } from '../common/request-fields.ts';
import { RequestError } from '../dialect.ts';
import {
  ollamaImages,
  readOllamaLogprobs,
  readOllamaOptions,
  requireOllamaBody,
  writeOllamaExtra,
  writeOllamaLogprobs,
  writeOllamaOptions,
} from '../ollama-family/ollama-request-fields.ts';

const KNOWN = new Set([
  'model',
  'prompt',
  'system',
  'stream',
  'options',
  'think',
  'format',
  'images',
  'raw',
  'logprobs',
  'top_logprobs',
]);

/**
 * `POST /api/generate` body -> normalized request. `model` is required; `prompt` may be absent or empty
 * (Ollama then only loads the model: `loadOnly`). A `system` prompt makes the request chat-shaped as well: `messages` holds
 * the system turn and the prompt as the user turn, so chat upstreams keep it, while `prompt` stays for
 * completion-style ones; `images` (base64) make it chat-shaped the same way, as the user turn's images.
 * Sampling comes from `options`, reasoning from `think`, structured output from `format`, the top-K
 * count from `logprobs`/`top_logprobs`; `raw: true`
 * (the prompt as it is, no template) is `raw`. Ollama always reports usage, so `includeUsage` is set.
 * `context`, `suffix`, `template`, `keep_alive` and every other field travel in `extra` (the rest of
 * `options` in `extra.options`).
 */
export function ollamaGenerateFromBody(input: unknown): ChatRequest {
  const { body, model } = requireOllamaBody(input);
  const request: ChatRequest = { model, includeUsage: true };
  const prompt = optionalString(body, 'prompt');
  const system = optionalString(body, 'system');
  if (prompt !== undefined) request.prompt = prompt;
  const images = readImages(body.images);
  if (system !== undefined || images !== undefined) {
    const user: ChatMessage = { role: 'user', content: prompt ?? '' };
    if (images !== undefined) user.images = images;
    request.messages = system === undefined ? [user] : [{ role: 'system', content: system }, user];
  }
  // Ollama answers `done_reason: "load"` to an empty prompt, whatever else the body holds.
  if (prompt === undefined || prompt === '') request.loadOnly = true;
  const raw = optionalBoolean(body, 'raw');
  if (raw !== undefined) request.raw = raw;
  const stream = optionalBoolean(body, 'stream');
  if (stream !== undefined) request.stream = stream;
  const options = readOllamaOptions(body, request);
  readOllamaLogprobs(body, request);
  const extra = extraFields(body, KNOWN) ?? {};
  if (options !== undefined) extra.options = options;
  if (Object.keys(extra).length > 0) request.extra = extra;
  return request;
}

/**
 * Normalized request -> `POST /api/generate` body (streaming). System turns become `system`; the
 * prompt is the request's own `prompt`, else its one user turn, else the other turns rendered with
 * `renderPrompt`. `/api/generate` takes no tools: they are dropped.
 */
export function ollamaGenerateToBody(request: ChatRequest): JsonRecord {
  const { prompt, system } =
    request.loadOnly === true ? { prompt: '', system: undefined } : generatePrompt(request);
  const body: JsonRecord = { model: request.model ?? 'default', prompt };
  if (system !== undefined) body.system = system;
  const images = (request.messages ?? []).flatMap((m) => (m.role === 'user' ? (m.images ?? []) : []));
  if (images.length > 0) body.images = ollamaImages(images);
  if (request.raw === true) body.raw = true;
  body.stream = true;
  writeOllamaOptions(body, request);
  writeOllamaLogprobs(body, request);
  writeOllamaExtra(body, request);
  return body;
}

function readImages(value: unknown): ChatImage[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value) || !value.every((image) => typeof image === 'string')) {
    throw new RequestError('images must be a list of base64 strings', { field: 'images' });
  }
  return value.length === 0 ? undefined : value.map((data: string) => ({ data }));
}

function generatePrompt(request: ChatRequest): { prompt: string; system: string | undefined } {
  const messages = request.messages ?? [];
  const systems = messages.filter((m) => m.role === 'system').map((m) => m.content);
  const turns = messages.filter((m) => m.role !== 'system');
  const system = systems.length > 0 ? systems.join('\n\n') : undefined;
  if (request.prompt !== undefined) return { prompt: request.prompt, system };
  const only = turns.length === 1 ? turns[0] : undefined;
  if (only?.role === 'user') return { prompt: only.content, system };
  return { prompt: turns.length === 0 ? '' : renderPrompt({ messages: turns }), system };
}

/**
 * Ollama's answer to a load-only request (`loadOnly`: an empty prompt, whatever the system prompt):
 * one JSON object, `done: true, done_reason: "load"`, sent as `application/json; charset=utf-8` with or
 * without streaming (server/routes.go, GenerateHandler: `c.JSON` before any generation). For a gateway
 * that answers it without calling an upstream of another dialect; `createdAt` is Ollama's `created_at`.
 */
export function ollamaGenerateLoadAnswer(model: string, createdAt: string): JsonRecord {
  return { model, created_at: createdAt, response: '', done: true, done_reason: 'load' };
}
