import { RequestError } from '../../dialects/dialect.ts';

/** What the client gets: its dialect's own stream, or the answer as plain UTF-8 text. */
export type OutputFormat = 'dialect' | 'text';

/** The headers of a plain-text stream. `nosniff` keeps browsers from holding the first bytes to sniff them. */
export const PLAIN_TEXT_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/plain; charset=utf-8',
  'x-content-type-options': 'nosniff',
};

/**
 * Plain text when the query's `format` parameter (`format`) says `text`, or when `text/plain` is the
 * client's first choice in `Accept` (highest q, earliest on ties). A listed-but-not-first `text/plain`
 * (axios sends `application/json, text/plain, *\/*`) keeps the dialect's stream. `?format=` with any
 * other value than `text` or `dialect` is a 400 naming `format`.
 */
export function outputFormat(format: string | null, accept: string | null): OutputFormat {
  if (format !== null) {
    if (format === 'text') return 'text';
    if (format === 'dialect' || format === '') return 'dialect';
    throw new RequestError(`format must be "text" or "dialect", got ${JSON.stringify(format)}`, {
      field: 'format',
    });
  }
  if (accept === null || !accept.includes('text/plain')) return 'dialect';
  let best: string | undefined;
  let bestQ = -1;
  for (const part of accept.split(',')) {
    const [type, ...params] = part.split(';');
    const media = type?.trim().toLowerCase() ?? '';
    if (media === '') continue;
    let q = 1;
    for (const param of params) {
      const [key, value] = param.split('=');
      if (key?.trim() === 'q') q = Number(value?.trim());
    }
    if (!Number.isFinite(q) || q <= 0) continue;
    if (q > bestQ) {
      best = media;
      bestQ = q;
    }
  }
  return best === 'text/plain' ? 'text' : 'dialect';
}
