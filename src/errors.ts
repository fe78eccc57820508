/**
 * The base error of tokenwire. Every error the package throws or reports carries a stable,
 * kebab-case `code` so callers, metrics and tests key on the code and never on message text.
 *
 * `TokenwireError.is(value)` works across duplicate installs of the package (a gateway and a CLI
 * can load two copies), because it checks a `Symbol.for` marker rather than the class identity.
 */

const MARKER = Symbol.for('tokenwire.error');

/** Longest piece of foreign text (a payload, a body, a field name) quoted inside an error message. */
export const MAX_SNIPPET_CHARS = 200;

export interface TokenwireErrorOptions {
  cause?: unknown;
}

export class TokenwireError extends Error {
  readonly code: string;
  readonly [MARKER] = true;

  constructor(code: string, message: string, options: TokenwireErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.name = 'TokenwireError';
  }

  static is(value: unknown): value is TokenwireError {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[MARKER] === true;
  }
}

/** Cuts foreign text to a bounded, printable snippet for error messages. */
export function snippet(text: string, max: number = MAX_SNIPPET_CHARS): string {
  const cut = text.length > max ? `${text.slice(0, max)}…(${text.length - max} more chars)` : text;
  return JSON.stringify(cut);
}
