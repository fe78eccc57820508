import { UsageError } from '../cli-io.ts';

/** `--header 'Name: value'` flags -> a header record with lower-case names; refuses malformed ones. */
export function parseHeaders(
  values: readonly string[] | undefined,
  flag = '--header',
): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const header of values ?? []) {
    const colon = header.indexOf(':');
    if (colon <= 0) throw new UsageError(`${flag} needs "Name: value", got ${JSON.stringify(header)}`);
    headers[header.slice(0, colon).trim().toLowerCase()] = header.slice(colon + 1).trim();
  }
  return headers;
}

/** Header names whose values are secrets: shown as `<redacted>` in reports and never echoed. */
const SECRET =
  /^(authorization|proxy-authorization|cookie)$|api[-_]?key|secret|password|(^|-)(auth-|access-)?token$/i;

/** The headers with credential values replaced, for printing. */
export function redactHeaders(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) out[name] = SECRET.test(name) ? '<redacted>' : value;
  return out;
}
