/**
 * The sampling settings beyond temperature, top p and seed (top k, min p, the repeat penalty) and the
 * "extra JSON" field, and how each dialect names them: read from the request field table
 * (src/dialects/request-field-table.ts), the same table the dialects' request mappings follow, so the
 * page never spells a field per dialect. Pure: tested in Node (test/web/sampling-fields.test.ts).
 */
import type { DialectId } from '../src/dialects/dialect.ts';
import { fieldRow, REQUEST_FIELDS } from '../src/dialects/request-field-table.ts';
import type { ChatRequest } from '../src/events/chat-request.ts';

/** A setting of the Settings panel: its input's id and the normalized field it fills. */
export interface SamplingSetting {
  readonly id: string;
  readonly field: 'topK' | 'minP' | 'repetitionPenalty';
  /** Whole numbers only (top k). */
  readonly whole: boolean;
}

export const SAMPLING_SETTINGS: readonly SamplingSetting[] = [
  { id: 'top-k', field: 'topK', whole: true },
  { id: 'min-p', field: 'minP', whole: false },
  { id: 'repeat-penalty', field: 'repetitionPenalty', whole: false },
];

/** Where `dialect` keeps `field` in its body (`options.top_k`), or undefined when it has no such field. */
export function wireName(field: keyof ChatRequest, dialect: DialectId): string | undefined {
  const cell = fieldRow(field)?.wire[dialect];
  return typeof cell === 'string' ? cell : undefined;
}

/** Body keys of `dialect` the page writes itself: the extra JSON may not set them (it would overwrite them unseen). */
export function reservedKeys(dialect: DialectId): Set<string> {
  const keys = new Set(['model', 'messages', 'prompt', 'input', 'system', 'stream', 'inputs']);
  for (const row of REQUEST_FIELDS) {
    const cell = row.wire[dialect];
    if (typeof cell !== 'string') continue;
    for (const path of cell.split(', ')) {
      // A nested path (`options.top_k`, `parameters.seed`) leaves its group open to extra keys.
      if (!path.includes('.') && !path.includes('[')) keys.add(path);
    }
  }
  return keys;
}

/**
 * The extra JSON field as the request's `extra` (fields written into the body as they are), or an
 * error message. '' is no extra fields.
 */
export function parseExtraJson(
  text: string,
  dialect: DialectId,
): { extra: Record<string, unknown> | undefined } | { error: string } {
  const trimmed = text.trim();
  if (trimmed === '') return { extra: undefined };
  let value: unknown;
  try {
    value = JSON.parse(trimmed);
  } catch (error) {
    return { error: `not JSON: ${(error as Error).message}` };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { error: 'give a JSON object ({"key": value}): its fields go into the request body' };
  const reserved = reservedKeys(dialect);
  const taken = Object.keys(value).filter((key) => reserved.has(key));
  if (taken.length > 0)
    return {
      error: `${taken.join(', ')} ${taken.length === 1 ? 'is' : 'are'} set by the page's own fields for ${dialect}: use those`,
    };
  return { extra: value as Record<string, unknown> };
}
