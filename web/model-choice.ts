/**
 * Which models the gateway serves, read from its model lists, and which one the page picks. Pure:
 * tested in Node (test/web/model-choice.test.ts).
 */

/** The model names in an OpenAI `/v1/models` body (`data[].id`) or an Ollama `/api/tags` body (`models[].name`). */
export function modelNames(body: unknown): string[] {
  if (typeof body !== 'object' || body === null) return [];
  const { data, models } = body as { data?: unknown; models?: unknown };
  const names: string[] = [];
  const add = (value: unknown) => {
    if (typeof value === 'string' && value !== '' && !names.includes(value)) names.push(value);
  };
  if (Array.isArray(data)) for (const model of data) add((model as { id?: unknown } | null)?.id);
  if (Array.isArray(models)) {
    for (const model of models) {
      const entry = model as { name?: unknown; model?: unknown } | null;
      add(entry?.name ?? entry?.model);
    }
  }
  return names;
}

/**
 * The model to select: the one already chosen when the gateway serves it (a reload, a saved
 * conversation), else the first the gateway lists; undefined when it lists none.
 */
export function pickModel(served: readonly string[], chosen: string | undefined): string | undefined {
  if (chosen !== undefined && served.includes(chosen)) return chosen;
  return served[0];
}
