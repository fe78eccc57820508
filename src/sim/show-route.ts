import { getDialect } from '../dialects/registry.ts';
import { goJsonStringify } from '../wire/go-json.ts';
import { servesModel } from './model-not-found.ts';
import { simModelDetails } from './routes.ts';

/** What `/api/show` needs to know of the sim. */
export interface ShowRouteContext {
  models: readonly string[];
  /** Only `models` are served (SimOptions.models was given). */
  strictModels: boolean;
  contextTokens: number;
  /** Clock time when the sim was created (ms). */
  createdAt: number;
}

/** `/api/show` bodies are a model name and a flag or two. */
const MAX_SHOW_BODY_BYTES = 64 * 1024;

/**
 * Ollama's `POST /api/show {"model"}` (`name` in older clients), answered as Ollama answers it: 400
 * `model is required`, 404 `model 'x' not found`, else the model's details. What the sim is, it says: the
 * details `/api/tags` gives, its context length in `model_info` (`<architecture>.context_length`, which
 * clients read to size a conversation) and what it can do (text, tool calls, thinking). It has no
 * Modelfile, template, parameters or license, so those are empty, never invented. Undefined when the path
 * is not `/api/show` (matched at the end of the path, like the dialect paths).
 */
export function showRoute(
  request: Request,
  path: string,
  context: ShowRouteContext,
): Promise<Response> | undefined {
  const clean = path.replace(/\/+$/, '');
  if (clean !== '/api/show' && !clean.endsWith('/api/show')) return undefined;
  return show(request, context);
}

async function show(request: Request, context: ShowRouteContext): Promise<Response> {
  if (request.method !== 'POST') {
    return ollamaJson(405, { error: `${request.method} is not allowed; use POST` }, { allow: 'POST' });
  }
  const text = await request.text();
  if (text.length > MAX_SHOW_BODY_BYTES) return ollamaJson(413, { error: 'request body too large' });
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return ollamaJson(400, { error: 'invalid request body' });
  }
  const record = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
  const named =
    typeof record.model === 'string' && record.model !== ''
      ? record.model
      : typeof record.name === 'string'
        ? record.name
        : '';
  if (named === '') return ollamaJson(400, { error: 'model is required' });
  const at = named.indexOf('@');
  const model = at === -1 ? named : named.slice(0, at);
  if (context.strictModels && !servesModel(getDialect('ollama-chat'), context.models, model)) {
    return ollamaJson(404, { error: `model '${named}' not found` });
  }
  return ollamaJson(200, {
    license: '',
    modelfile: '',
    parameters: '',
    template: '',
    details: simModelDetails(),
    model_info: { 'general.architecture': 'sim', 'sim.context_length': context.contextTokens },
    capabilities: ['completion', 'tools', 'thinking'],
    modified_at: new Date(context.createdAt).toISOString(),
  });
}

/** gin's `c.JSON`: Go's escaping, `application/json; charset=utf-8`. */
function ollamaJson(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(goJsonStringify(body), {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
  });
}
