import type { Dialect } from '../dialects/dialect.ts';
import { RequestError } from '../dialects/dialect.ts';
import { getDialect } from '../dialects/registry.ts';
import type { ChatRequest } from '../events/chat-request.ts';
import { promptTokens } from './generate.ts';
import { modelNotFoundResponse, servesModel } from './model-not-found.ts';
import { loadTokenizer } from './tokenizer.ts';

/** What the counting routes need of the sim. */
export interface CountRouteContext {
  models: readonly string[];
  /** Only `models` are served (SimOptions.models was given). */
  strictModels: boolean;
}

/** The counting routes and the dialect whose request body each reads. */
const COUNT_ROUTES: readonly { path: string; dialect: 'anthropic-messages' | 'openai-responses' }[] = [
  { path: '/v1/messages/count_tokens', dialect: 'anthropic-messages' },
  { path: '/v1/responses/input_tokens', dialect: 'openai-responses' },
];

/**
 * `POST /v1/messages/count_tokens` (`{"input_tokens": N}`) and `POST /v1/responses/input_tokens`
 * (`{"object": "response.input_tokens", "input_tokens": N}`), as llama-server b10108 answers them
 * (captures r17, r18): N is the prompt's size exactly as a generation's usage reports it
 * (`promptTokens`), so a count and the `input_tokens` of the answer agree. Like dialect paths, they match
 * at the end of the path. Undefined when the path is neither.
 */
export function countTokensRoute(
  request: Request,
  path: string,
  context: CountRouteContext,
): Promise<Response> | undefined {
  const clean = path.replace(/\/+$/, '');
  const route = COUNT_ROUTES.find((candidate) => clean === candidate.path || clean.endsWith(candidate.path));
  if (route === undefined) return undefined;
  return count(getDialect(route.dialect), request, context);
}

async function count(dialect: Dialect, request: Request, context: CountRouteContext): Promise<Response> {
  if (request.method !== 'POST') {
    return errorAnswer(dialect, 405, `${request.method} is not allowed; use POST`, { allow: 'POST' });
  }
  let body: unknown;
  try {
    body = JSON.parse(await request.text());
  } catch (error) {
    return errorAnswer(dialect, 400, `the request body is not valid JSON: ${(error as Error).message}`);
  }
  let chat: ChatRequest;
  try {
    chat = dialect.fromRequestBody(withCountDefaults(dialect, body));
  } catch (error) {
    if (error instanceof RequestError) return errorAnswer(dialect, error.status, error.message);
    throw error;
  }
  const requested = chat.model ?? context.models[0] ?? 'sim';
  const at = requested.indexOf('@');
  const model = at === -1 ? requested : requested.slice(0, at);
  if (context.strictModels && !servesModel(dialect, context.models, model))
    return modelNotFoundResponse(dialect, model);
  const tokens = promptTokens(await loadTokenizer(), chat);
  const answer =
    dialect.id === 'openai-responses'
      ? { object: 'response.input_tokens', input_tokens: tokens }
      : { input_tokens: tokens };
  return new Response(JSON.stringify(answer), {
    status: 200,
    headers: { 'content-type': 'application/json; charset=utf-8' },
  });
}

/**
 * A count request has no output cap (Anthropic's count_tokens takes no `max_tokens`), which the Messages
 * mapping requires of a generation: a placeholder is added, and read by nothing here.
 */
function withCountDefaults(dialect: Dialect, body: unknown): unknown {
  if (dialect.id !== 'anthropic-messages' || typeof body !== 'object' || body === null || Array.isArray(body))
    return body;
  if ((body as Record<string, unknown>).max_tokens !== undefined) return body;
  return Object.assign({}, body, { max_tokens: 1 });
}

function errorAnswer(
  dialect: Dialect,
  status: number,
  message: string,
  headers: Record<string, string> = {},
): Response {
  const error = dialect.errorResponse({ status, message });
  return new Response(error.body, {
    status: error.status,
    headers: Object.assign({ 'content-type': error.contentType }, headers),
  });
}
