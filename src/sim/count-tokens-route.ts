import type { Dialect } from '../dialects/dialect.ts';
import { RequestError } from '../dialects/dialect.ts';
import { getDialect } from '../dialects/registry.ts';
import type { ChatRequest } from '../events/chat-request.ts';
import { DEFAULT_CONTEXT_TOKENS } from './context-error.ts';
import { promptTokens } from './generate.ts';
import { modelNotFoundResponse, servesModel } from './model-not-found.ts';
import { loadTokenizer, type SimTokenizer } from './tokenizer.ts';

/** What the counting routes need of the sim. */
export interface CountRouteContext {
  models: readonly string[];
  /** Only `models` are served (SimOptions.models was given). */
  strictModels: boolean;
  /** The model's context (`SimOptions.contextTokens`): a longer prompt is refused. Default 32768. */
  contextTokens?: number | undefined;
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
 *
 * The count is taken in slices that let other requests run, and stops at the model's context: a prompt
 * that does not fit gets a 400 in the dialect's error shape (as a generation would be refused) naming
 * the count where counting stopped.
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
  const contextTokens = context.contextTokens ?? DEFAULT_CONTEXT_TOKENS;
  const tokens = await countPrompt(chat, contextTokens, request.signal);
  if (tokens === undefined) return new Response(null, { status: 499 });
  if (tokens >= contextTokens) {
    // Counting stopped at the context: the count named is where it stopped, not the whole prompt's.
    return errorAnswer(
      dialect,
      400,
      `the prompt exceeds the model's context length of ${contextTokens} tokens (counting stopped at ${tokens} tokens)`,
      {},
      'invalid_request_error',
    );
  }
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
 * The prompt's size as `promptTokens()` (a generation's usage) counts it, counted in slices that give the
 * event loop a turn (tokenizer.ts `count()`), stopping as soon as it reaches `contextTokens`: a prompt of
 * megabytes costs what its first `contextTokens` tokens cost, and never blocks the process. `undefined`
 * when the client went away meanwhile.
 */
async function countPrompt(
  chat: ChatRequest,
  contextTokens: number,
  signal: AbortSignal,
): Promise<number | undefined> {
  const tokenizer = await loadTokenizer();
  // promptTokens() run with a tokenizer that sets aside every text it is asked to encode: what it returns
  // is then the template's own tokens, and the texts are counted here, so the two counts cannot drift.
  const texts: string[] = [];
  let total = promptTokens(textCollector(tokenizer, texts), chat);
  for (const text of texts) {
    if (total >= contextTokens) break;
    const counted = await tokenizer.count(text, signal, contextTokens - total);
    if (counted === undefined) return undefined;
    total += counted;
  }
  return total;
}

/** The tokenizer with an `encode` that only records the text (and returns no token). */
function textCollector(tokenizer: SimTokenizer, texts: string[]): SimTokenizer {
  return Object.assign({}, tokenizer, {
    encode(text: string): number[] {
      texts.push(text);
      return [];
    },
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
  errorType?: string,
): Response {
  const error = dialect.errorResponse({ status, message, errorType });
  return new Response(error.body, {
    status: error.status,
    headers: Object.assign({ 'content-type': error.contentType }, headers),
  });
}
