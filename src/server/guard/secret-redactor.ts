import { concatBytes } from '../../wire/concat-bytes.ts';
import type { Upstream } from '../upstream/upstream.ts';

/** What a secret is replaced with. */
export const REDACTED = '[redacted]';

/**
 * Shorter values are not treated as secrets: redacting `1` or `true` would garble every answer, and a
 * credential is never that short.
 */
export const MIN_SECRET_CHARS = 8;

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const REDACTED_BYTES = encoder.encode(REDACTED);
/** `…(`: how `snippet()` marks a cut, so a secret cut in half by it is still caught (its head leaks otherwise). */
const CUT_MARK = encoder.encode('\u2026(');
/** The shortest head of a secret redacted in front of a cut mark. */
const MIN_CUT_HEAD = 4;

/**
 * The secrets in upstream headers: each value, and the credential after an auth scheme
 * (`Bearer sk-…` -> `sk-…`), when long enough to be one.
 */
export function upstreamSecrets(upstreams: readonly Pick<Upstream, 'headers'>[]): string[] {
  const out = new Set<string>();
  for (const upstream of upstreams) {
    for (const value of Object.values(upstream.headers ?? {})) {
      const trimmed = value.trim();
      if (trimmed.length >= MIN_SECRET_CHARS) out.add(trimmed);
      const space = trimmed.indexOf(' ');
      const credential = space === -1 ? '' : trimmed.slice(space + 1).trim();
      if (credential.length >= MIN_SECRET_CHARS) out.add(credential);
    }
  }
  return [...out];
}

/**
 * Replaces secrets (upstream credentials) in anything about to leave the gateway: response bodies
 * (whole or streamed), log records. Each secret is matched raw and as JSON escapes it (once and twice:
 * an upstream's JSON error quoted inside the gateway's JSON error). Works on bytes so a stream needs no
 * re-decoding; only the tail of a read that could be the start of a secret is held back to the next
 * read, which for SSE and NDJSON (reads end at a line end) is in practice never.
 */
export class SecretRedactor {
  readonly #patterns: Uint8Array[];
  readonly #textPatterns: string[];

  constructor(secrets: readonly string[]) {
    const forms = new Set<string>();
    for (const secret of secrets) {
      if (secret.length < MIN_SECRET_CHARS) continue;
      const once = JSON.stringify(secret).slice(1, -1);
      const twice = JSON.stringify(once).slice(1, -1);
      forms.add(secret).add(once).add(twice);
    }
    // Longest first: a secret that contains another is replaced whole.
    this.#textPatterns = [...forms].sort((a, b) => b.length - a.length);
    this.#patterns = this.#textPatterns.map((form) => encoder.encode(form));
  }

  /** Whether there is anything to redact at all (callers skip the work when not). */
  get active(): boolean {
    return this.#patterns.length > 0;
  }

  text(value: string): string {
    if (!this.active) return value;
    return decoder.decode(this.bytes(encoder.encode(value)));
  }

  /** Every string inside a JSON-like value (log records). */
  value<T>(value: T): T {
    if (!this.active) return value;
    return this.#walk(value) as T;
  }

  /** Redacts whole bytes (no holding back). */
  bytes(input: Uint8Array): Uint8Array {
    return this.#replace(input);
  }

  /**
   * The same for text written piece by piece (a response written straight to a socket): `push` returns
   * what can go out now, holding back a tail that may be the start of a secret; `end` returns the rest.
   */
  textStream(): { push(text: string): string; end(): string } {
    if (!this.active) return { push: (text) => text, end: () => '' };
    const chunks = this.#chunks();
    return {
      push: (text) => {
        const out = chunks.push(encoder.encode(text));
        return out.length === 0 ? '' : decoder.decode(out);
      },
      end: () => {
        const rest = chunks.end();
        return rest.length === 0 ? '' : decoder.decode(rest);
      },
    };
  }

  /** A stream with every secret replaced, also one split across reads. */
  stream(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
    if (!this.active) return body;
    const reader = body.getReader();
    const chunks = this.#chunks();
    return new ReadableStream<Uint8Array>(
      {
        pull: async (controller) => {
          for (;;) {
            let next: Awaited<ReturnType<typeof reader.read>>;
            try {
              next = await reader.read();
            } catch (error) {
              controller.error(error);
              return;
            }
            if (next.done) {
              const rest = chunks.end();
              if (rest.length > 0) controller.enqueue(rest);
              controller.close();
              return;
            }
            const out = chunks.push(next.value);
            if (out.length > 0) {
              controller.enqueue(out);
              return;
            }
          }
        },
        cancel: (reason) => reader.cancel(reason),
      },
      { highWaterMark: 0 },
    );
  }

  /**
   * Redaction of bytes that arrive in pieces: `push` returns what can go out now, holding back a tail
   * that may be the start of a secret; `end` returns the rest. Shared by `stream` and `textStream`.
   */
  #chunks(): { push(bytes: Uint8Array): Uint8Array; end(): Uint8Array } {
    let held = new Uint8Array(0);
    return {
      push: (bytes) => {
        const out = this.#replace(held.length === 0 ? bytes : concatBytes(held, bytes));
        const keep = this.#partialTail(out);
        held = out.slice(out.length - keep);
        return out.subarray(0, out.length - keep);
      },
      end: () => {
        const rest = held.length === 0 ? held : this.bytes(held);
        held = new Uint8Array(0);
        return rest;
      },
    };
  }

  #walk(value: unknown): unknown {
    if (typeof value === 'string') return this.text(value);
    if (Array.isArray(value)) return value.map((item) => this.#walk(item));
    if (typeof value === 'object' && value !== null) {
      const out: Record<string, unknown> = {};
      for (const [key, item] of Object.entries(value)) out[key] = this.#walk(item);
      return out;
    }
    return value;
  }

  /** Every whole occurrence, then any secret's head cut off by a snippet mark. */
  #replace(input: Uint8Array): Uint8Array {
    let out = input;
    for (const pattern of this.#patterns) out = replaceAll(out, pattern, REDACTED_BYTES);
    return indexOf(out, CUT_MARK, 0) === -1 ? out : this.#redactCutHeads(out);
  }

  #redactCutHeads(input: Uint8Array): Uint8Array {
    const parts: Uint8Array[] = [];
    let from = 0;
    for (
      let at = indexOf(input, CUT_MARK, 0);
      at !== -1;
      at = indexOf(input, CUT_MARK, at + CUT_MARK.length)
    ) {
      let head = 0;
      for (const pattern of this.#patterns) {
        for (let length = Math.min(pattern.length - 1, at - from); length >= MIN_CUT_HEAD; length--) {
          if (length > head && equalAt(input, at - length, pattern, length)) {
            head = length;
            break;
          }
        }
      }
      if (head === 0) continue;
      parts.push(input.subarray(from, at - head), REDACTED_BYTES);
      from = at;
    }
    if (parts.length === 0) return input;
    parts.push(input.subarray(from));
    return concatBytes(...parts);
  }

  /** Bytes at the end that are a proper prefix of some secret: they may continue in the next read. */
  #partialTail(bytes: Uint8Array): number {
    let keep = 0;
    for (const pattern of this.#patterns) {
      const max = Math.min(pattern.length - 1, bytes.length);
      for (let length = max; length > keep; length--) {
        if (equalAt(bytes, bytes.length - length, pattern, length)) {
          keep = length;
          break;
        }
      }
    }
    return keep;
  }
}

function equalAt(haystack: Uint8Array, at: number, needle: Uint8Array, length: number): boolean {
  if (at < 0) return false;
  for (let i = 0; i < length; i++) if (haystack[at + i] !== needle[i]) return false;
  return true;
}

function indexOf(haystack: Uint8Array, needle: Uint8Array, from: number): number {
  const first = needle[0]!;
  let at = haystack.indexOf(first, from);
  while (at !== -1 && at + needle.length <= haystack.length) {
    if (equalAt(haystack, at, needle, needle.length)) return at;
    at = haystack.indexOf(first, at + 1);
  }
  return -1;
}

function replaceAll(input: Uint8Array, pattern: Uint8Array, replacement: Uint8Array): Uint8Array {
  let at = indexOf(input, pattern, 0);
  if (at === -1) return input;
  const parts: Uint8Array[] = [];
  let from = 0;
  while (at !== -1) {
    parts.push(input.subarray(from, at), replacement);
    from = at + pattern.length;
    at = indexOf(input, pattern, from);
  }
  parts.push(input.subarray(from));
  return concatBytes(...parts);
}
