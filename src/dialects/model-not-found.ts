import type { Dialect, DialectId } from './dialect.ts';

/**
 * Dialects whose server ignores the requested model name and serves the one model it loaded
 * (llama-server's native `/completion`, TGI's `/generate_stream`): any name is served there.
 */
export function servesAnyModelName(dialect: DialectId): boolean {
  return dialect === 'llamacpp' || dialect === 'tgi';
}

/**
 * Whether `model` is one of `models`: the same name, its base before a `@` suffix (the simulator's
 * faults, `sim@cut-after=5`), or the same name with or without Ollama's implicit `:latest` tag.
 */
export function listsModel(models: readonly string[], model: string): boolean {
  if (models.includes(model)) return true;
  const at = model.indexOf('@');
  const base = at === -1 ? model : model.slice(0, at);
  if (base !== model && models.includes(base)) return true;
  const tagged = base.endsWith(':latest') ? base.slice(0, -':latest'.length) : `${base}:latest`;
  return models.includes(tagged);
}

/** The HTTP error a server answers, in its dialect's shape, for a model it does not serve. */
export interface ModelNotFound {
  status: 404;
  message: string;
  errorType: string | undefined;
}

/**
 * The server's own "model not found", before any streaming: Ollama's `model "x" not found, try pulling
 * it first`, vLLM's `The model \`x\` does not exist.` (type `NotFoundError`), each written in the dialect's
 * error shape by `dialect.errorResponse`.
 */
export function modelNotFound(dialect: Dialect, model: string): ModelNotFound {
  const ollama = dialect.id.startsWith('ollama');
  return {
    status: 404,
    message: ollama
      ? `model ${JSON.stringify(model)} not found, try pulling it first`
      : `The model \`${model}\` does not exist.`,
    errorType: ollama ? undefined : 'NotFoundError',
  };
}
