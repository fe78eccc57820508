export type ParseJsonResult = { ok: true; value: unknown } | { ok: false; error: string };

/** JSON.parse that never throws: upstream payloads are untrusted. */
export function parseJson(text: string): ParseJsonResult {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    return { ok: false, error: (error as Error).message };
  }
}
