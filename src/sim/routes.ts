import { hashSeed, mulberry32, randomHexFrom } from './prng.ts';

/** What the informational routes need to know. */
export interface RouteContext {
  models: readonly string[];
  /** Clock time when the sim was created (ms). */
  createdAt: number;
}

const JSON_HEADERS = { 'content-type': 'application/json' };

/**
 * The routes that are not a dialect endpoint: `GET /health` (llama-server's `{"status":"ok"}`),
 * `GET /v1/models` (the OpenAI list), `GET /api/tags` and `GET /api/version` (Ollama). Like dialect
 * paths, they match at the end of the path, so a proxy prefix works. Undefined when none matches.
 */
export function infoRoute(method: string, path: string, context: RouteContext): Response | undefined {
  const clean = path.replace(/\/+$/, '') || '/';
  const route = ROUTES.find((candidate) => clean === candidate.path || clean.endsWith(candidate.path));
  if (route === undefined) return undefined;
  if (method !== 'GET' && method !== 'HEAD') {
    return jsonResponse(
      405,
      errorBody(`${method} is not allowed on ${route.path}; use GET`, 'invalid_request_error', 405),
      {
        allow: 'GET, HEAD',
      },
    );
  }
  return jsonResponse(200, route.body(context));
}

/** 404 for a path no route or registered dialect serves. */
export function notFoundResponse(method: string, path: string): Response {
  return jsonResponse(
    404,
    errorBody(`tokenwire sim: no route for ${method} ${path}`, 'not_found_error', 404),
  );
}

export function jsonResponse(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { ...JSON_HEADERS, ...headers } });
}

function errorBody(message: string, type: string, code: number): unknown {
  return { error: { message, type, code } };
}

const ROUTES: readonly { path: string; body: (context: RouteContext) => unknown }[] = [
  { path: '/health', body: () => ({ status: 'ok' }) },
  {
    path: '/v1/models',
    body: (context) => ({
      object: 'list',
      data: context.models.map((id) => ({
        id,
        object: 'model',
        created: Math.floor(context.createdAt / 1000),
        owned_by: 'tokenwire',
      })),
    }),
  },
  {
    path: '/api/tags',
    body: (context) => ({
      models: context.models.map((name) => ({
        name,
        model: name,
        modified_at: new Date(context.createdAt).toISOString(),
        size: 0,
        digest: randomHexFrom(mulberry32(hashSeed(name)), 64),
        details: simModelDetails(),
      })),
    }),
  },
  { path: '/api/version', body: () => ({ version: '0.0.0-tokenwire-sim' }) },
];

/** Ollama's `details` of a simulated model, as `/api/tags` and `/api/show` give them. */
export function simModelDetails(): Record<string, unknown> {
  return {
    parent_model: '',
    format: 'gguf',
    family: 'sim',
    families: ['sim'],
    parameter_size: '0B',
    quantization_level: 'none',
  };
}
