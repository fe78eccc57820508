import type { Dialect } from '../dialects/dialect.ts';

/**
 * Dialects whose imitated server ignores the requested model name and serves the one model it loaded
 * (llama-server's native `/completion`, TGI): any name is served there, as on the real servers.
 */
const SERVES_ANY_NAME: ReadonlySet<string> = new Set(['llamacpp', 'tgi']);

/**
 * Whether `model` (the name without any `@faults` suffix) is one the sim serves: one of `models`, with
 * Ollama's implicit `:latest` tag (`sim` and `sim:latest` are the same model there).
 */
export function servesModel(dialect: Dialect, models: readonly string[], model: string): boolean {
  if (SERVES_ANY_NAME.has(dialect.id)) return true;
  if (models.includes(model)) return true;
  if (dialect.framing === 'ndjson') {
    const bare = model.endsWith(':latest') ? model.slice(0, -':latest'.length) : `${model}:latest`;
    return models.includes(bare);
  }
  return false;
}

/**
 * The imitated server's "model not found", before any streaming: Ollama's
 * `404 {"error":"model \"x\" not found, try pulling it first"}`, vLLM's
 * `404 {"error":{"message":"The model `x` does not exist.","type":"NotFoundError","code":404}}` (in each
 * dialect's own error shape, from `dialect.errorResponse`).
 */
export function modelNotFoundResponse(dialect: Dialect, model: string): Response {
  const ollama = dialect.id.startsWith('ollama');
  const error = dialect.errorResponse({
    status: 404,
    message: ollama
      ? `model ${JSON.stringify(model)} not found, try pulling it first`
      : `The model \`${model}\` does not exist.`,
    errorType: ollama ? undefined : 'NotFoundError',
  });
  return new Response(error.body, { status: error.status, headers: { 'content-type': error.contentType } });
}
