/**
 * JSON as Go's `encoding/json` writes it (Ollama): compact, raw UTF-8, but with HTML-sensitive
 * characters escaped (`<` `>` `&` as `\u003c` `\u003e` `\u0026`), U+2028 and U+2029 escaped, and
 * control characters other than `\n` `\r` `\t` written as `\u00XX` (Go never writes `\b` or `\f`).
 * A lone surrogate, which Go cannot hold, becomes U+FFFD.
 */
export function goJsonStringify(value: unknown): string {
  const json = JSON.stringify(value);
  return GO_ESCAPE.test(json) ? json.replace(GO_ESCAPE_ALL, escapeForGo) : json;
}

const GO_ESCAPE = /[<>&\u2028\u2029]|\\[bf]|\\u[dD][89abAB]|\\u[dD][c-fC-F]/;
const GO_ESCAPE_ALL =
  /[<>&\u2028\u2029]|\\\\|\\[bf]|\\u[dD][89abAB][0-9a-fA-F]{2}(?:\\u[dD][c-fC-F][0-9a-fA-F]{2})?|\\u[dD][c-fC-F][0-9a-fA-F]{2}/g;

function escapeForGo(match: string): string {
  switch (match) {
    case '<':
      return '\\u003c';
    case '>':
      return '\\u003e';
    case '&':
      return '\\u0026';
    case '\u2028':
      return '\\u2028';
    case '\u2029':
      return '\\u2029';
    case '\\\\':
      return match;
    case '\\b':
      return '\\u0008';
    case '\\f':
      return '\\u000c';
    default:
      // JSON.stringify escapes only lone surrogates; a paired one arrives here whole and stays.
      return match.length === 12 ? match : '\\ufffd';
  }
}
