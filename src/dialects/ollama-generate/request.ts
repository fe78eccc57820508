import { type ChatRequest, renderPrompt } from '../../events/chat-request.ts';
import type { JsonRecord } from '../common/json-fields.ts';
import { extraFields, optionalBoolean, optionalString } from '../common/request-fields.ts';
import {
  readOllamaOptions,
  requireOllamaBody,
  writeOllamaExtra,
  writeOllamaOptions,
} from '../ollama-family/ollama-request-fields.ts';

const KNOWN = new Set(['model', 'prompt', 'system', 'stream', 'options', 'think']);

/**
 * `POST /api/generate` body -> normalized request. `model` is required; `prompt` may be absent (Ollama
 * then only loads the model). A `system` prompt makes the request chat-shaped as well: `messages` holds
 * the system turn and the prompt as the user turn, so chat upstreams keep it, while `prompt` stays for
 * completion-style ones. Sampling comes from `options`, reasoning from `think`; Ollama always reports
 * usage, so `includeUsage` is set. `raw`, `context`, `suffix`, `template`, `images`, `format`,
 * `keep_alive` and every other field travel in `extra` (the rest of `options` in `extra.options`).
 */
export function ollamaGenerateFromBody(input: unknown): ChatRequest {
  const { body, model } = requireOllamaBody(input);
  const request: ChatRequest = { model, includeUsage: true };
  const prompt = optionalString(body, 'prompt');
  const system = optionalString(body, 'system');
  if (prompt !== undefined) request.prompt = prompt;
  if (system !== undefined) {
    request.messages = [
      { role: 'system', content: system },
      { role: 'user', content: prompt ?? '' },
    ];
  }
  const stream = optionalBoolean(body, 'stream');
  if (stream !== undefined) request.stream = stream;
  const options = readOllamaOptions(body, request);
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
  const { prompt, system } = generatePrompt(request);
  const body: JsonRecord = { model: request.model ?? 'default', prompt };
  if (system !== undefined) body.system = system;
  body.stream = true;
  writeOllamaOptions(body, request);
  writeOllamaExtra(body, request);
  return body;
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
