import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import * as nodePath from '../../src/wire/byte-search.ts';
import { NdjsonDecoder } from '../../src/wire/ndjson-decoder.ts';
import { SseDecoder } from '../../src/wire/sse-decoder.ts';
import { utf8 } from '../helpers/chunks.ts';

type ByteSearch = typeof nodePath;

/** A second instance of the module evaluated without `Buffer`: the browser path. */
async function loadWebPath(): Promise<ByteSearch> {
  const saved = globalThis.Buffer;
  Reflect.deleteProperty(globalThis, 'Buffer');
  try {
    const url = new URL('../../src/wire/byte-search.js?web', import.meta.url).href;
    return (await import(url)) as ByteSearch;
  } finally {
    globalThis.Buffer = saved;
  }
}

const fatal = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Bytes biased toward what breaks UTF-8 decoders: surrogates, overlongs, truncations, U+FFFD itself. */
const trickyBytes = fc.array(
  fc.oneof(
    fc.integer({ min: 0, max: 255 }),
    fc.constantFrom(
      0x0a,
      0x0d,
      0x61,
      0xc0,
      0xc1,
      0xc2,
      0xe0,
      0xed,
      0xa0,
      0x80,
      0xbf,
      0xf0,
      0xf4,
      0x90,
      0xf5,
      0xff,
    ),
    fc.constantFrom(0xef, 0xbb, 0xbd),
  ),
  { maxLength: 24 },
);

describe('byte-search', () => {
  it('uses the Node fast path here and falls back to the web APIs without Buffer', async () => {
    const web = await loadWebPath();
    assert.notEqual(web.indexOfByte, nodePath.indexOfByte);
    assert.equal(web.quickUtf8(utf8('abc'), 0, 3), undefined, 'no quick decode without Buffer');
    assert.equal(nodePath.quickUtf8(utf8('abc'), 0, 3), 'abc');
  });

  it('indexOfByte finds what Uint8Array.indexOf finds, from every offset, on both paths', async () => {
    const web = await loadWebPath();
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), fc.integer({ min: 0, max: 255 }), (bytes, byte) => {
        for (let from = 0; from <= bytes.length; from++) {
          const want = bytes.indexOf(byte, from);
          assert.equal(nodePath.indexOfByte(bytes, byte, from), want);
          assert.equal(web.indexOfByte(bytes, byte, from), want);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('quickUtf8 returns exactly what a fatal TextDecoder returns, or leaves the bytes to it', () => {
    fc.assert(
      fc.property(trickyBytes, fc.nat(), fc.nat(), (list, a, b) => {
        const bytes = new Uint8Array(list);
        const start = Math.min(a, b) % (bytes.length + 1);
        const end = Math.max(start, Math.max(a, b) % (bytes.length + 1));
        let exact: string | undefined;
        try {
          exact = fatal.decode(bytes.subarray(start, end));
        } catch {
          exact = undefined;
        }
        const quick = nodePath.quickUtf8(bytes, start, end);
        // Invalid bytes are never decoded quickly; a quick result is always the exact one.
        if (exact === undefined) assert.equal(quick, undefined);
        else if (quick !== undefined) assert.equal(quick, exact);
        // Valid text without U+FFFD always takes the quick path.
        if (exact !== undefined && !exact.includes('\uFFFD')) assert.equal(quick, exact);
      }),
      { numRuns: 2000 },
    );
  });

  it('keeps a BOM and a real U+FFFD exactly as the decoder policy says', () => {
    assert.equal(nodePath.quickUtf8(new Uint8Array([0xef, 0xbb, 0xbf, 0x61]), 0, 4), '\uFEFFa');
    // A real U+FFFD is valid UTF-8: the exact path decides (and keeps it).
    assert.equal(nodePath.quickUtf8(utf8('a\uFFFDb'), 0, 5), undefined);
    const lines: string[] = [];
    const decoder = new NdjsonDecoder({ onFrame: (frame) => lines.push(frame.data) });
    decoder.feed(utf8('{"t":"a\uFFFDb"}\n'));
    assert.deepEqual(lines, ['{"t":"a\uFFFDb"}']);
    assert.equal(decoder.invalidUtf8Lines, 0);
  });

  it('fastView shares the bytes; copyBytes copies them', () => {
    const bytes = utf8('hello');
    const view = nodePath.fastView(bytes);
    assert.deepEqual([...view], [...bytes]);
    bytes[0] = 0x6a;
    assert.equal(view[0], 0x6a, 'a view, not a copy');
    const copy = nodePath.copyBytes(view, 1, 4);
    bytes[1] = 0x61;
    assert.deepEqual([...copy], [...utf8('ell')]);
    assert.equal(Object.getPrototypeOf(copy), Uint8Array.prototype);
  });

  it('keeps a partial line intact when the caller reuses its read buffer', () => {
    // Buffer#slice does not copy: a decoder holding `chunk.slice()` of a Buffer view would see the
    // caller's next read through it.
    const frames: string[] = [];
    const decoder = new SseDecoder({ onFrame: (frame) => frames.push(frame.data) });
    const read = new Uint8Array(16);
    const first = utf8('data: {"a":"he');
    read.set(first);
    decoder.feed(read.subarray(0, first.length));
    read.fill(0x78);
    decoder.feed(utf8('llo"}\n\n'));
    assert.deepEqual(frames, ['{"a":"hello"}']);
  });
});
