import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { NdjsonDecoder } from '../../src/wire/ndjson-decoder.ts';
import { WireError } from '../../src/wire/wire-error.ts';
import { splitAt, utf8 } from '../helpers/chunks.ts';

/** Frames, or the error code (where reads end moves the offset an error reports), or the bytes read. */
function decode(
  chunks: Uint8Array[],
  maxLineBytes?: number,
): { frames: string[]; error?: string; offset: number } {
  const frames: string[] = [];
  const decoder = new NdjsonDecoder({ onFrame: (frame) => frames.push(frame.data), maxLineBytes });
  try {
    for (const chunk of chunks) decoder.feed(chunk);
    decoder.end();
  } catch (error) {
    assert.ok(error instanceof WireError, String(error));
    return { frames, error: error.code, offset: -1 };
  }
  return { frames, offset: decoder.offset };
}

function oneByteReads(bytes: Uint8Array): Uint8Array[] {
  return Array.from(bytes, (_, i) => bytes.subarray(i, i + 1));
}

// Any faster path for a read holding many lines (bench/README.md, "The NDJSON path") must give what
// one-byte reads give, which never hold more than one line: the same frames and errors.
describe('NdjsonDecoder, whole reads against line by line', () => {
  const piece = fc.constantFrom('{"a":1}', '"x"', ' ', '\t', '\r', '\n', '\r\n', 'é', '😀', '日本', '\uFEFF');

  it('gives the same frames, errors and offset for any bytes, one read or one byte at a time', () => {
    fc.assert(
      fc.property(
        fc.array(piece, { maxLength: 24 }),
        fc.array(fc.nat(), { maxLength: 6 }),
        fc.option(fc.integer({ min: 1, max: 24 }), { nil: undefined }),
        (pieces, cuts, maxLineBytes) => {
          const bytes = utf8(pieces.join(''));
          const expected = decode(oneByteReads(bytes), maxLineBytes);
          assert.deepEqual(decode([bytes], maxLineBytes), expected);
          assert.deepEqual(decode(splitAt(bytes, cuts), maxLineBytes), expected);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('skips blank and whitespace-only lines and drops the CR of CRLF within one read', () => {
    const out = decode([utf8('{"a":1}\r\n\n  \t\r\n {"b":2}\n{"c":3}\r\r\n{"d":4}')]);
    assert.deepEqual(out.frames, ['{"a":1}', ' {"b":2}', '{"c":3}\r', '{"d":4}']);
  });

  it('still refuses a line over maxLineBytes inside a read of whole lines', () => {
    const out = decode([utf8('{"a":1}\n{"long":"0123456789"}\n{"b":2}\n')], 12);
    assert.equal(out.error, 'line-too-long');
    assert.deepEqual(out.frames, ['{"a":1}']);
  });

  it('keeps invalid UTF-8 in a read of whole lines to the line-by-line policy', () => {
    const bad = new Uint8Array([...utf8('{"a":1}\n{"a":"x'), 0xff, ...utf8('"}\n{"b":1}\n')]);
    const frames: string[] = [];
    const lenient = new NdjsonDecoder({
      onFrame: (frame) => frames.push(frame.data),
      invalidUtf8: 'replace',
    });
    lenient.feed(bad);
    assert.deepEqual(frames, ['{"a":1}', '{"a":"x\uFFFD"}', '{"b":1}']);
    assert.equal(lenient.invalidUtf8Lines, 1);
    assert.equal(decode([bad]).error, 'invalid-utf8');
  });
});
