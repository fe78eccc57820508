/** The SSE comment tokenwire's gateway writes where another replica goes on with the answer. */
const SEAM = /^\s*continued on (.+) after (\d+) tokens\s*$/;

/**
 * A comment line's text (after its `:`) that marks a continuation's seam: which replica went on, after
 * how many tokens. Undefined for any other comment (a keepalive).
 */
export function continuationSeam(text: string): { upstream: string; afterTokens: number } | undefined {
  const match = SEAM.exec(text);
  return match === null ? undefined : { upstream: match[1]!, afterTokens: Number(match[2]) };
}
