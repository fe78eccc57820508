import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { NdjsonDecoder } from '../../src/wire/ndjson-decoder.ts';
import { WireError } from '../../src/wire/wire-error.ts';
import { splitAt, utf8 } from '../helpers/chunks.ts';

describe('NdjsonDecoder', () => {
  const lineArbitrary = fc
    .string({ unit: 'grapheme', maxLength: 30 })
    .map((text) => JSON.stringify({ text }));

  it('decodes any split of a stream (LF or CRLF, blank lines) to the same lines', () => {
    fc.assert(
      fc.property(
        fc.array(lineArbitrary, { maxLength: 10 }),
        fc.array(fc.nat(), { maxLength: 12 }),
        fc.constantFrom('\n', '\r\n'),
        fc.boolean(),
        fc.boolean(),
        (lines, cuts, newline, blanks, finalNewline) => {
          let wire = lines.map((line) => `${line}${newline}${blanks ? newline : ''}`).join('');
          if (!finalNewline && wire.endsWith(newline)) wire = wire.slice(0, -newline.length);
          const bytes = utf8(wire);
          const decode = (chunks: Uint8Array[]) => {
            const out: string[] = [];
            const decoder = new NdjsonDecoder({ onFrame: (frame) => out.push(frame.data) });
            for (const chunk of chunks) decoder.feed(chunk);
            decoder.end();
            return out;
          };
          assert.deepEqual(decode([bytes]), lines);
          assert.deepEqual(decode(splitAt(bytes, cuts)), lines);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('fails with invalid-utf8, or replaces and counts the line when asked', () => {
    const bad = new Uint8Array([...utf8('{"a":"x'), 0xed, 0xa0, 0x80, ...utf8('"}\n{"b":1}\n')]);
    assert.throws(
      () => new NdjsonDecoder({ onFrame: () => {} }).feed(bad),
      (error: unknown) => error instanceof WireError && error.code === 'invalid-utf8',
    );
    const lines: string[] = [];
    const lenient = new NdjsonDecoder({ onFrame: (frame) => lines.push(frame.data), invalidUtf8: 'replace' });
    lenient.feed(bad);
    assert.deepEqual(lines, ['{"a":"x\uFFFD\uFFFD\uFFFD"}', '{"b":1}']);
    assert.equal(lenient.invalidUtf8Lines, 1);
  });
});
