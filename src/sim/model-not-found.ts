import type { Dialect } from '../dialects/dialect.ts';
import { listsModel, modelNotFound, servesAnyModelName } from '../dialects/model-not-found.ts';

/**
 * Whether `model` (the name without any `@faults` suffix) is one the sim serves: one of `models`, with
 * Ollama's implicit `:latest` tag on its own routes (`sim` and `sim:latest` are the same model there);
 * any name on the routes whose real server ignores it (llama-server's `/completion`, TGI).
 */
export function servesModel(dialect: Dialect, models: readonly string[], model: string): boolean {
  if (servesAnyModelName(dialect.id)) return true;
  if (models.includes(model)) return true;
  return dialect.framing === 'ndjson' && listsModel(models, model);
}

/** The imitated server's "model not found" (dialects/model-not-found.ts), before any streaming. */
export function modelNotFoundResponse(dialect: Dialect, model: string): Response {
  const error = dialect.errorResponse(modelNotFound(dialect, model));
  return new Response(error.body, { status: error.status, headers: { 'content-type': error.contentType } });
}
