import type { DialectId } from '../../dialects/dialect.ts';
import { listsModel } from '../../dialects/model-not-found.ts';
import { getDialect } from '../../dialects/registry.ts';
import { goJsonStringify } from '../../wire/go-json.ts';
import { abortSignalOf } from '../http/client-signal.ts';
import { errorResponse } from '../http/gateway-errors.ts';
import type { IncomingRequest, RequestTarget } from '../http/incoming-request.ts';
import { type OutputFormat, outputFormat } from '../http/output-format.ts';
import { BodyError, readJsonBody } from '../http/read-body.ts';
import type { Upstream } from '../upstream/upstream.ts';
import { callUpstreamAside, copyUpstreamAnswer } from '../upstream/upstream-side-call.ts';

/** The gateway's version: `/api/version`, `/props` `build_info`, TGI `/info` `version` (package.json's). */
export const GATEWAY_VERSION = '0.1.0';

/** What the side routes need from the gateway. */
export interface SideRouteContext {
  readonly upstreams: readonly Upstream[];
  /** The upstream a call about `model` goes to (the pool's: one that lists it and takes requests now). */
  pick(model: string | undefined): Upstream;
  /** Every model the upstreams list (their `models`). */
  models(): string[];
  /** True while the gateway shuts down: `/health` answers 503. */
  closing(): boolean;
  /** The largest request body read (`GatewayOptions.maxBodyBytes`). */
  readonly maxBodyBytes: number;
  /** TGI's non-stream generation, answered as `POST /` answers it (a one-element list). */
  generate(request: IncomingRequest): Promise<Response>;
}

/** How long a side route waits for an upstream it passes the call to. */
const PASS_THROUGH_TIMEOUT_MS = 10_000;
/** `%2F` and `%5C` (either case): a slash or backslash that the upstream's router may decode into a path. */
const ENCODED_SEPARATOR = /%(?:2f|5c)/i;
/** `/api/show` bodies are a model name and a flag or two. */
const MAX_SHOW_BODY_BYTES = 64 * 1024;

const OLLAMA: readonly DialectId[] = ['ollama-chat', 'ollama-generate'];
const OPENAI: readonly DialectId[] = ['openai-chat', 'openai-completions'];
/** The servers that serve `GET /health`: vLLM and llama-server (OpenAI routes), llama-server, TGI. */
const HEALTH: readonly DialectId[] = ['llamacpp', 'tgi', 'openai-chat', 'openai-completions'];

/**
 * The routes the servers' own clients call before or beside streaming (ollama-js, Open WebUI, llama.cpp's
 * web UI, huggingface_hub, health checks), each in its server's shape:
 * - Ollama: `GET /api/version`, `POST /api/show`, `GET /api/ps`, and gin's plain-text 404 on any other
 *   `/api/…` path;
 * - vLLM / llama-server: `GET /health`, `GET /v1/models/{id}`; llama-server `GET /props`;
 * - TGI: `GET /info`, `GET /health`, `POST /generate` (non-stream: `POST /`'s answer without the list).
 *
 * Where an upstream speaks that server's dialect, the call goes to it and its answer comes back as it
 * is; when none does, or it has no such route (404, 405, 501) or cannot be reached, the gateway answers
 * from what it knows — the model list and its own version — and invents nothing else: fields it cannot
 * know are left out. A model outside the upstreams' lists (when every upstream has one) gets the server's
 * "model not found". Undefined when the target is none of these routes (called after the generation
 * routes, `/v1/models` and `/api/tags`).
 */
export function sideRoute(
  request: IncomingRequest,
  target: RequestTarget,
  context: SideRouteContext,
): Promise<Response> | undefined {
  const method = request.method;
  const path = target.path;
  const get = method === 'GET' || method === 'HEAD';
  if (get) {
    switch (path) {
      case '/api/version':
        return ollamaVersion(context);
      case '/api/ps':
        return ollamaPs(context);
      case '/health':
        return health(context);
      case '/props':
        return props(context);
      case '/info':
        return tgiInfo(context);
    }
    if (path.startsWith('/v1/models/')) return openAiModel(path.slice('/v1/models/'.length), context);
  }
  if (method === 'POST') {
    if (path === '/api/show') return ollamaShow(request, context);
    if (path === '/generate') return tgiGenerate(request, context);
  }
  // gin's own 404 (Ollama registers no catch-all): a wrong method on a known path is a 404 there too.
  if (path === '/api' || path.startsWith('/api/')) return Promise.resolve(ginNotFound(request, target));
  return undefined;
}

/** `404 page not found` as gin writes it, or the gateway's error line to a client that asked for text. */
function ginNotFound(request: IncomingRequest, target: RequestTarget): Response {
  let format: OutputFormat;
  try {
    format = outputFormat(target.query('format'), request.headers.get('accept'));
  } catch {
    format = 'dialect';
  }
  if (format === 'text') return errorResponse(getDialect('ollama-chat'), 'text', 404, '404 page not found');
  return new Response('404 page not found', { status: 404, headers: { 'content-type': 'text/plain' } });
}

/** Ollama's `{"version": "…"}`: the upstream's, else the gateway's own. */
async function ollamaVersion(context: SideRouteContext): Promise<Response> {
  const passed = await passThrough(firstSpeaking(context, OLLAMA), 'GET', '/api/version');
  if (passed !== undefined) return passed;
  return ollamaJson(200, { version: GATEWAY_VERSION });
}

/**
 * Ollama's running models. Without an Ollama upstream the gateway does not know what any upstream holds
 * in memory, so it lists none (an empty list is what Ollama answers with nothing loaded).
 */
async function ollamaPs(context: SideRouteContext): Promise<Response> {
  const passed = await passThrough(firstSpeaking(context, OLLAMA), 'GET', '/api/ps');
  if (passed !== undefined) return passed;
  return ollamaJson(200, { models: [] });
}

/**
 * `POST /api/show {"model"}` (`name` in older clients). Ollama answers 400 `model is required` and 404
 * `model 'x' not found`; the gateway's own answer has the name and `/api/tags`' details, and empty
 * strings where Ollama has the Modelfile, parameters and template, which only the upstream knows.
 */
async function ollamaShow(request: IncomingRequest, context: SideRouteContext): Promise<Response> {
  let body: unknown;
  try {
    body = await readJsonBody(request, MAX_SHOW_BODY_BYTES);
  } catch (error) {
    return ollamaJson(400, { error: error instanceof BodyError ? error.message : 'invalid request body' });
  }
  const record = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
  const model =
    typeof record.model === 'string' && record.model !== ''
      ? record.model
      : typeof record.name === 'string'
        ? record.name
        : '';
  if (model === '') return ollamaJson(400, { error: 'model is required' });
  const upstream = speakingFor(context, OLLAMA, model);
  const passed = await passThrough(upstream, 'POST', '/api/show', JSON.stringify(body));
  if (passed !== undefined) return passed;
  if (!knows(context, model)) return ollamaJson(404, { error: `model '${model}' not found` });
  return ollamaJson(200, {
    modelfile: '',
    parameters: '',
    template: '',
    details: {
      parent_model: '',
      format: 'gguf',
      family: 'tokenwire',
      families: ['tokenwire'],
      parameter_size: '',
      quantization_level: '',
    },
    model_info: {},
    capabilities: ['completion'],
    modified_at: new Date(0).toISOString(),
  });
}

/**
 * `GET /health`: the first upstream's own answer (vLLM: an empty 200; llama-server: `{"status":"ok"}`,
 * 503 while loading; TGI: an empty 200). An upstream with no such route (Ollama) is healthy when it
 * answers at all; one that cannot be reached, or a gateway shutting down, is 503 in llama-server's shape.
 */
async function health(context: SideRouteContext): Promise<Response> {
  if (context.closing()) return unavailable('the gateway is shutting down');
  const upstream = context.upstreams[0];
  if (upstream === undefined || !upstream.dialects.some((d) => HEALTH.includes(d)))
    return Response.json({ status: 'ok' });
  const answer = await callUpstream(upstream, 'GET', '/health');
  if (answer === undefined) return unavailable('the upstream cannot be reached');
  if (answer.status === 404 || answer.status === 405 || answer.status === 501) {
    await answer.body?.cancel();
    return Response.json({ status: 'ok' });
  }
  return copyUpstreamAnswer(answer);
}

function unavailable(message: string): Response {
  const error = getDialect('llamacpp').errorResponse({
    status: 503,
    message,
    errorType: 'unavailable_error',
  });
  return new Response(error.body, { status: 503, headers: { 'content-type': error.contentType } });
}

/**
 * llama-server's `GET /props`: the llama.cpp upstream's. Otherwise only what the gateway knows: the
 * model (`model_alias`, `model_path`), its build, and which of llama-server's endpoints it has — no
 * generation settings, context size, slots or chat template, which belong to a server it is not.
 */
async function props(context: SideRouteContext): Promise<Response> {
  const passed = await passThrough(firstSpeaking(context, ['llamacpp']), 'GET', '/props');
  if (passed !== undefined) return passed;
  const model = context.models()[0];
  const body: Record<string, unknown> = {};
  if (model !== undefined) {
    body.model_alias = model;
    body.model_path = model;
  }
  body.build_info = `tokenwire-${GATEWAY_VERSION}`;
  body.endpoint_slots = false;
  body.endpoint_props = false;
  body.endpoint_metrics = true;
  return Response.json(body, { headers: { 'content-type': 'application/json; charset=utf-8' } });
}

/**
 * TGI's `GET /info`: the TGI upstream's. Otherwise the fields the gateway knows (the model, its router
 * and version) with TGI's nulls for the ones it cannot (`model_sha`, `sha`, `docker_label`); TGI's
 * limits (max tokens, concurrency, batch) are the serving engine's and are left out.
 */
async function tgiInfo(context: SideRouteContext): Promise<Response> {
  const passed = await passThrough(firstSpeaking(context, ['tgi']), 'GET', '/info');
  if (passed !== undefined) return passed;
  return Response.json({
    model_id: context.models()[0] ?? null,
    model_sha: null,
    model_pipeline_tag: 'text-generation',
    router: 'tokenwire',
    version: GATEWAY_VERSION,
    sha: null,
    docker_label: null,
  });
}

/**
 * TGI's `POST /generate`: `POST /`'s non-stream answer, `{"generated_text"…}` without the list around it.
 * TGI's `/generate` has no `stream` field (only `POST /` does), so one sent is not read: never a stream.
 */
async function tgiGenerate(request: IncomingRequest, context: SideRouteContext): Promise<Response> {
  let body: unknown;
  try {
    body = await readJsonBody(request, context.maxBodyBytes);
  } catch (error) {
    const status = error instanceof BodyError ? error.status : 400;
    const message = error instanceof Error ? error.message : 'invalid request body';
    const tgi = getDialect('tgi').errorResponse({ status, message });
    return new Response(tgi.body, { status, headers: { 'content-type': tgi.contentType } });
  }
  if (typeof body === 'object' && body !== null && !Array.isArray(body) && 'stream' in body)
    body = Object.fromEntries(Object.entries(body).filter(([key]) => key !== 'stream'));
  const sent: [string, string][] = [];
  for (const name of request.headers.keys())
    if (name !== 'content-length') sent.push([name, request.headers.get(name) ?? '']);
  const response = await context.generate(
    new Request(request.url, {
      method: 'POST',
      headers: sent,
      body: JSON.stringify(body),
      signal: abortSignalOf(request.signal),
    }),
  );
  if (response.status !== 200 || !(response.headers.get('content-type') ?? '').includes('json'))
    return response;
  const list = (await response.json()) as unknown;
  const answer = Array.isArray(list) && list.length === 1 ? list[0] : list;
  const headers = new Headers(response.headers);
  headers.delete('content-length');
  return new Response(JSON.stringify(answer), { status: 200, headers });
}

/**
 * The OpenAI `GET /v1/models/{id}` (ids may hold `/`). The serving upstream's answer when it has the
 * route (vLLM and llama-server do not); else the gateway's `/v1/models` entry, or vLLM's 404 for a model
 * it does not serve.
 */
async function openAiModel(encoded: string, context: SideRouteContext): Promise<Response> {
  let id: string;
  try {
    id = decodeURIComponent(encoded);
  } catch {
    id = encoded;
  }
  // The id goes upstream in the path, with the gateway's upstream credentials: one that would move
  // that path elsewhere (`..%2F..%2Fadmin`: an encoded slash or backslash, a dot segment) is refused
  // before anything is sent.
  if (
    ENCODED_SEPARATOR.test(encoded) ||
    id.split('/').some((segment) => segment === '.' || segment === '..')
  ) {
    const error = getDialect('openai-chat').errorResponse({
      status: 400,
      message: `invalid model id ${JSON.stringify(id.slice(0, 200))}: a model id holds no encoded slash or backslash and no "." or ".." segment`,
      errorType: 'invalid_request_error',
    });
    return new Response(error.body, { status: 400, headers: { 'content-type': error.contentType } });
  }
  const upstream = speakingFor(context, OPENAI, id);
  const passed = await passThrough(upstream, 'GET', `/v1/models/${encoded}`);
  if (passed !== undefined) return passed;
  if (!knows(context, id)) {
    const error = getDialect('openai-chat').errorResponse({
      status: 404,
      message: `The model \`${id}\` does not exist.`,
      errorType: 'NotFoundError',
    });
    return new Response(error.body, { status: 404, headers: { 'content-type': error.contentType } });
  }
  return Response.json({ id, object: 'model', created: 0, owned_by: 'tokenwire' });
}

/** Whether `model` (or its base before a `@` suffix) is served; true when some upstream lists no models. */
function knows(context: SideRouteContext, model: string): boolean {
  if (context.upstreams.some((u) => u.models === undefined || u.models.length === 0)) return true;
  return listsModel(context.models(), model);
}

function firstSpeaking(context: SideRouteContext, dialects: readonly DialectId[]): Upstream | undefined {
  return context.upstreams.find((u) => u.dialects.some((d) => dialects.includes(d)));
}

/** The upstream serving `model` when it speaks one of `dialects`, else the first that does. */
function speakingFor(
  context: SideRouteContext,
  dialects: readonly DialectId[],
  model: string,
): Upstream | undefined {
  const chosen = context.pick(model);
  return chosen.dialects.some((d) => dialects.includes(d)) ? chosen : firstSpeaking(context, dialects);
}

/**
 * The upstream's answer to the same call, copied: undefined when there is no such upstream, when it has
 * no such route (404, 405, 501 — except a JSON 404 to `/api/show`, Ollama's "model not found"), or when
 * it cannot be reached.
 */
async function passThrough(
  upstream: Upstream | undefined,
  method: string,
  path: string,
  body?: string,
): Promise<Response | undefined> {
  if (upstream === undefined) return undefined;
  const answer = await callUpstream(upstream, method, path, body);
  if (answer === undefined) return undefined;
  const missing = answer.status === 404 || answer.status === 405 || answer.status === 501;
  if (missing && !(path === '/api/show' && isOllamaError(answer))) {
    await answer.body?.cancel();
    return undefined;
  }
  return copyUpstreamAnswer(answer);
}

/** Ollama's errors are `{"error": "…"}` JSON; gin's missing route is plain text. */
function isOllamaError(answer: Response): boolean {
  return (answer.headers.get('content-type') ?? '').includes('application/json');
}

function callUpstream(upstream: Upstream, method: string, path: string, body?: string) {
  const headers: Record<string, string> = Object.assign({}, upstream.headers);
  if (body !== undefined) headers['content-type'] = 'application/json';
  return callUpstreamAside(upstream, path, { method, headers, body }, PASS_THROUGH_TIMEOUT_MS);
}

/** gin's `c.JSON`: Go's escaping, `application/json; charset=utf-8`. */
function ollamaJson(status: number, body: unknown): Response {
  return new Response(goJsonStringify(body), {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8' },
  });
}
