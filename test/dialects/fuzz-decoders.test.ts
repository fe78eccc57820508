import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { DIALECTS } from '../../src/dialects/registry.ts';
import { StreamDecoder } from '../../src/dialects/stream-decoder.ts';
import { TokenwireError } from '../../src/errors.ts';
import { splitAt, utf8 } from '../helpers/chunks.ts';
import { fixturePath, readFixture } from '../helpers/paths.ts';

/**
 * Fuzzing every decoder (the wire decoder of its framing + the dialect): arbitrary bytes, and arbitrary
 * mutations of the valid streams in test/fixtures, split into arbitrary reads. Whatever arrives, a
 * decoder either decodes it or throws one of tokenwire's own errors (WireError, DialectError), which the
 * client turns into an incomplete result; never a TypeError or RangeError, never a hang, and it never
 * holds more than the maximum line (event) size.
 */

/** Above every fixture's longest line, so mutated streams reach the dialect decoders. */
const FUZZ_MAX_LINE = 4096;
/** Small, so the bound is reached often in the memory properties. */
const MAX_LINE = 512;

const fixtures: Uint8Array[] = [];
for (const dir of ['wire-examples', 'extra', 'real-captures/llamacpp-b4747']) {
  for (const name of readdirSync(fixturePath(dir)).sort()) {
    if (name.endsWith('.sse') || name.endsWith('.ndjson')) fixtures.push(readFixture(dir, name));
  }
}

/** Decodes `chunks` with `dialect`; returns the error it threw, if any. Fails the test on a foreign error. */
function decode(dialectId: string, chunks: Uint8Array[]): TokenwireError | undefined {
  const dialect = DIALECTS[dialectId]!;
  let events = 0;
  const decoder = new StreamDecoder(
    dialect,
    () => {
      events += 1;
    },
    { maxLineBytes: FUZZ_MAX_LINE },
  );
  try {
    for (const chunk of chunks) decoder.feed(chunk);
    decoder.end();
    void events;
    return undefined;
  } catch (error) {
    if (TokenwireError.is(error)) return error;
    throw new Error(
      `${dialectId}: a foreign error escaped the decoder: ${(error as Error)?.stack ?? String(error)}`,
    );
  }
}

/** Splits of a byte string into reads. */
const cuts = fc.array(fc.nat({ max: 4096 }), { maxLength: 12 });

/** Byte sequences that mean something to some framing: line ends, field names, sentinels, JSON pieces. */
const MEANINGFUL = [
  '\n',
  '\r',
  '\r\n',
  '\n\n',
  'data: ',
  'data:',
  'id: ',
  'event: error\n',
  'retry: 5\n',
  ': keepalive\n\n',
  '[DONE]',
  '{',
  '}',
  '"',
  '\\',
  '\\u00',
  'null',
  '{"error":',
  '"done":true',
  '"choices":[',
  '"finish_reason":"stop"',
  '"token":{"id":1,"text":"x","special":false}',
  '\uFEFF',
  '\u00e9',
  '\u{1F600}',
].map(utf8);

type Mutation =
  | { kind: 'flip'; at: number; value: number }
  | { kind: 'insert'; at: number; bytes: Uint8Array }
  | { kind: 'delete'; at: number; length: number }
  | { kind: 'duplicate'; at: number; length: number }
  | { kind: 'truncate'; at: number };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), value: fc.integer({ min: 0, max: 255 }) }),
  fc.record({
    kind: fc.constant('insert' as const),
    at: fc.nat(),
    bytes: fc.oneof(fc.constantFrom(...MEANINGFUL), fc.uint8Array({ minLength: 1, maxLength: 8 })),
  }),
  fc.record({ kind: fc.constant('delete' as const), at: fc.nat(), length: fc.integer({ min: 1, max: 40 }) }),
  fc.record({
    kind: fc.constant('duplicate' as const),
    at: fc.nat(),
    length: fc.integer({ min: 1, max: 200 }),
  }),
  fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
);

function mutate(bytes: Uint8Array, mutations: readonly Mutation[]): Uint8Array {
  let out = bytes;
  for (const m of mutations) {
    const at = out.length === 0 ? 0 : m.at % (out.length + 1);
    switch (m.kind) {
      case 'flip':
        if (out.length > 0) {
          out = out.slice();
          out[at % out.length] = m.value;
        }
        break;
      case 'insert':
        out = join(out.subarray(0, at), m.bytes, out.subarray(at));
        break;
      case 'delete':
        out = join(out.subarray(0, at), out.subarray(at + m.length));
        break;
      case 'duplicate':
        out = join(
          out.subarray(0, at + m.length),
          out.subarray(at, at + m.length),
          out.subarray(at + m.length),
        );
        break;
      case 'truncate':
        out = out.slice(0, at);
        break;
    }
  }
  return out;
}

function join(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

describe('decoder fuzzing', () => {
  for (const dialectId of Object.keys(DIALECTS)) {
    it(`${dialectId}: arbitrary bytes in arbitrary reads never throw a foreign error`, () => {
      fc.assert(
        fc.property(fc.uint8Array({ maxLength: 2048 }), cuts, (bytes, at) => {
          decode(dialectId, splitAt(bytes, at));
        }),
        { numRuns: 300 },
      );
    });

    it(`${dialectId}: mutations of every fixture (all dialects' streams) never throw a foreign error`, () => {
      fc.assert(
        fc.property(
          fc.nat({ max: fixtures.length - 1 }),
          fc.array(mutation, { minLength: 1, maxLength: 8 }),
          cuts,
          (index, mutations, at) => {
            decode(dialectId, splitAt(mutate(fixtures[index]!, mutations), at));
          },
        ),
        { numRuns: 400 },
      );
    });
  }

  it('the unmutated fixtures decode cleanly in their own dialect (the mutations start from valid streams)', () => {
    // Sanity for the corpus: each fixture decodes without error in at least one dialect.
    for (const bytes of fixtures) {
      const clean = Object.keys(DIALECTS).some((id) => decode(id, [bytes]) === undefined);
      assert.ok(clean);
    }
  });
});

describe('decoder memory is bounded by the maximum line size', () => {
  for (const dialectId of Object.keys(DIALECTS)) {
    const sse = DIALECTS[dialectId]!.framing === 'sse';

    it(`${dialectId}: a line that never ends fails once it passes the limit, whatever the reads`, () => {
      fc.assert(
        fc.property(
          fc.array(fc.uint8Array({ minLength: 1, maxLength: 300 }), { minLength: 1, maxLength: 40 }),
          (reads) => {
            // No line ends at all: everything fed is one unfinished line.
            const chunks = reads.map((r) => r.map((b) => (b === 0x0a || b === 0x0d ? 0x41 : b)));
            const dialect = DIALECTS[dialectId]!;
            const decoder = new StreamDecoder(dialect, () => {}, { maxLineBytes: MAX_LINE });
            let fed = 0;
            let failed: unknown;
            for (const chunk of chunks) {
              try {
                decoder.feed(chunk);
                fed += chunk.length;
              } catch (error) {
                failed = error;
                break;
              }
              // Held bytes never exceed the limit: past it, the feed that crossed it must have thrown.
              assert.ok(fed <= MAX_LINE + 3, `${fed} bytes held without a line end`);
            }
            if (failed !== undefined) {
              assert.ok(TokenwireError.is(failed));
              assert.match((failed as TokenwireError).code, /line-too-long|event-too-large|invalid-utf8/);
            }
          },
        ),
        { numRuns: 200 },
      );
    });

    if (sse) {
      it(`${dialectId}: an SSE event that never ends (many short data lines) fails once it passes the limit`, () => {
        fc.assert(
          fc.property(
            fc.array(fc.stringMatching(/^[a-z ]{0,40}$/), { minLength: 1, maxLength: 100 }),
            (lines) => {
              const decoder = new StreamDecoder(DIALECTS[dialectId]!, () => {}, { maxLineBytes: MAX_LINE });
              let held = 0;
              for (const line of lines) {
                const bytes = utf8(`data: ${line}\n`);
                try {
                  decoder.feed(bytes);
                } catch (error) {
                  assert.ok(TokenwireError.is(error));
                  assert.equal((error as TokenwireError).code, 'event-too-large');
                  return;
                }
                held += line.length + 1;
                assert.ok(held <= MAX_LINE + 1, `${held} bytes of one event held`);
              }
            },
          ),
          { numRuns: 200 },
        );
      });
    }
  }
});
