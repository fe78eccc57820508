import { type Dialect, type DialectId, RequestError } from '../../dialects/dialect.ts';
import { getDialect } from '../../dialects/registry.ts';
import { errorResponse } from '../http/gateway-errors.ts';
import type { IncomingRequest, RequestTarget } from '../http/incoming-request.ts';
import { BodyError, readJsonBody } from '../http/read-body.ts';
import { requestIdFor } from '../http/request-id.ts';
import type { Upstream } from '../upstream/upstream.ts';
import { forwardedHeaders } from '../upstream/upstream-request.ts';
import { callUpstreamAside, copyUpstreamAnswer } from '../upstream/upstream-side-call.ts';

/** What the counting routes need of the gateway. */
export interface TokenCountContext {
  upstreams: readonly Upstream[];
  /** The upstream a count for `model` goes to (the pool's: one that lists it and takes requests now). */
  pick(model: string | undefined): Upstream;
  /** The largest request body read (`GatewayOptions.maxBodyBytes`). */
  readonly maxBodyBytes: number;
  closing(): boolean;
}

type CountingDialect = 'anthropic-messages' | 'openai-responses';

/** One counting route: the dialect whose body it reads, and its path after the dialect's own. */
interface CountRoute {
  dialect: CountingDialect;
  suffix: string;
}

const ROUTES: readonly CountRoute[] = [
  { dialect: 'anthropic-messages', suffix: '/count_tokens' },
  { dialect: 'openai-responses', suffix: '/input_tokens' },
];

/**
 * The upstream dialects whose servers may have the other counting route although the upstream was not
 * configured with that dialect: llama-server (its OpenAI and native routes) serves both, vLLM and SGLang
 * serve `count_tokens`. Ollama and TGI have neither.
 */
const MAY_COUNT: ReadonlySet<DialectId> = new Set<DialectId>([
  'openai-chat',
  'openai-completions',
  'llamacpp',
  'anthropic-messages',
  'openai-responses',
]);

/** Client headers an Anthropic-speaking upstream reads on count_tokens. */
const ANTHROPIC_HEADERS = ['anthropic-version', 'anthropic-beta'];

/** How long a count waits for the upstream. */
const COUNT_TIMEOUT_MS = 30_000;

/**
 * `POST /v1/messages/count_tokens` and `POST /v1/responses/input_tokens` (on every path of the two
 * dialects: `/responses/input_tokens` too). The gateway has no tokenizer of its own (the model's is the
 * upstream's), so the count is always the upstream's:
 * 1. the upstream serving the model speaks the route's dialect: the same body goes to the same route and
 *    its answer comes back as it is (status, content type, body);
 * 2. else, or when it has no such route (404, 405, 501) or cannot be reached, an upstream that may serve
 *    the other counting route (llama-server serves both) gets the request translated to that dialect,
 *    and its `input_tokens` is answered in this route's shape (`{"input_tokens": N}`;
 *    `{"object": "response.input_tokens", "input_tokens": N}`);
 * 3. else a 501 in the dialect's error shape saying the upstream cannot count tokens.
 * Undefined when the target is neither route.
 */
export function tokenCountRoute(
  request: IncomingRequest,
  target: RequestTarget,
  context: TokenCountContext,
): Promise<Response> | undefined {
  const path = target.path;
  for (const route of ROUTES) {
    const dialect = getDialect(route.dialect);
    for (const base of dialect.paths) {
      if (path === base + route.suffix) return count(dialect, route, request, context);
    }
  }
  return undefined;
}

async function count(
  dialect: Dialect,
  route: CountRoute,
  request: IncomingRequest,
  context: TokenCountContext,
): Promise<Response> {
  if (request.method !== 'POST') {
    const answer = refuse(dialect, 405, `use POST for ${dialect.paths[0]}${route.suffix}`);
    answer.headers.set('allow', 'POST');
    return answer;
  }
  if (context.closing()) return refuse(dialect, 503, 'the gateway is shutting down', 'unavailable_error');
  let body: Record<string, unknown>;
  try {
    const read = await readJsonBody(request, context.maxBodyBytes);
    if (typeof read !== 'object' || read === null || Array.isArray(read))
      return refuse(dialect, 400, 'the request body must be a JSON object');
    body = read as Record<string, unknown>;
  } catch (error) {
    if (error instanceof BodyError) return refuse(dialect, error.status, error.message);
    throw error;
  }
  const model = typeof body.model === 'string' ? body.model : undefined;
  const upstream = context.pick(model);
  const headers = countHeaders(request, upstream);
  if (upstream.dialects.includes(dialect.id)) {
    const answer = await callUpstream(upstream, `${dialect.paths[0]}${route.suffix}`, body, headers);
    if (answer !== undefined && !isMissing(answer.status)) return copyUpstreamAnswer(answer);
    await answer?.body?.cancel();
  }
  const other = ROUTES.find((candidate) => candidate.dialect !== route.dialect)!;
  if (upstream.dialects.some((id) => MAY_COUNT.has(id))) {
    let translated: Record<string, unknown>;
    try {
      translated = translate(dialect, getDialect(other.dialect), body);
    } catch (error) {
      if (error instanceof RequestError) return refuse(dialect, error.status, error.message);
      throw error;
    }
    const otherDialect = getDialect(other.dialect);
    const answer = await callUpstream(
      upstream,
      `${otherDialect.paths[0]}${other.suffix}`,
      translated,
      headers,
    );
    if (answer !== undefined && !isMissing(answer.status)) return reshape(dialect, answer);
    await answer?.body?.cancel();
  }
  return refuse(
    dialect,
    501,
    `the upstream ${upstream.name} cannot count tokens: it serves neither ${getDialect('anthropic-messages').paths[0]}/count_tokens nor ${getDialect('openai-responses').paths[0]}/input_tokens`,
    dialect.id === 'anthropic-messages' ? 'api_error' : 'not_implemented',
  );
}

/**
 * The request in the other counting dialect (through the normalized request, so an unreadable body is a
 * 400 naming the field), without the generation's fields a count route has no use for.
 */
function translate(from: Dialect, to: Dialect, body: Record<string, unknown>): Record<string, unknown> {
  // Anthropic's count_tokens takes no `max_tokens`, which the Messages mapping requires of a generation.
  const readable =
    from.id === 'anthropic-messages' && body.max_tokens === undefined
      ? Object.assign({}, body, { max_tokens: 1 })
      : body;
  const sent = to.toRequestBody(Object.assign(from.fromRequestBody(readable), { extra: undefined }));
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(sent)) {
    if (key === 'stream' || key === 'stream_options' || key === 'max_tokens' || key === 'max_output_tokens')
      continue;
    out[key] = value;
  }
  return out;
}

/** The other route's answer in this route's shape; an error in this dialect's error shape. */
async function reshape(dialect: Dialect, answer: Response): Promise<Response> {
  const text = await answer.text();
  let tokens: unknown;
  try {
    tokens = (JSON.parse(text) as { input_tokens?: unknown } | null)?.input_tokens;
  } catch {
    tokens = undefined;
  }
  if (answer.ok && Number.isSafeInteger(tokens) && (tokens as number) >= 0) {
    const body =
      dialect.id === 'openai-responses'
        ? { object: 'response.input_tokens', input_tokens: tokens }
        : { input_tokens: tokens };
    return Response.json(body);
  }
  const status = answer.ok ? 502 : answer.status;
  return refuse(
    dialect,
    status,
    `the upstream could not count tokens (HTTP ${answer.status}): ${text.slice(0, 200)}`,
  );
}

function refuse(dialect: Dialect, status: number, message: string, errorType?: string): Response {
  return errorResponse(dialect, 'dialect', status, message, errorType);
}

function isMissing(status: number): boolean {
  return status === 404 || status === 405 || status === 501;
}

function countHeaders(request: IncomingRequest, upstream: Upstream): Record<string, string> {
  const headers = forwardedHeaders(request, requestIdFor(request.headers));
  for (const name of ANTHROPIC_HEADERS) {
    const value = request.headers.get(name);
    if (value !== null) headers[name] = value;
  }
  // The upstream's own credentials win over anything a client sent.
  return Object.assign(headers, upstream.headers, { 'content-type': 'application/json' });
}

function callUpstream(
  upstream: Upstream,
  path: string,
  body: Record<string, unknown>,
  headers: Record<string, string>,
) {
  return callUpstreamAside(
    upstream,
    path,
    { method: 'POST', headers, body: JSON.stringify(body) },
    COUNT_TIMEOUT_MS,
  );
}
