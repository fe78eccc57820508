/**
 * The byte primitives the line splitter runs once per line: find a byte, decode a range as UTF-8, copy
 * a range. Web-standard by default (`Uint8Array.prototype.indexOf`, `TextDecoder`); where Node's Buffer
 * exists (Node, Bun) its methods are used instead — found on `globalThis`, never imported from
 * `node:*`, so this still runs in a browser — because they are several times cheaper per call:
 * Buffer's indexOf is a `memchr` (the searches of 200,000 SSE events: 23 ms -> 5 ms), and `utf8Slice`
 * called as a method of a Buffer view decodes a line with no subarray and no TextDecoder (~250 -> ~140
 * ns a line in a micro-benchmark). Measured with bench/decode-throughput.ts.
 */

interface NodeBuffer extends Uint8Array {
  utf8Slice(start: number, end: number): string;
}

interface NodeBufferClass {
  new (...args: never[]): NodeBuffer;
  prototype: NodeBuffer;
  from(buffer: ArrayBufferLike, byteOffset: number, length: number): NodeBuffer;
}

const NodeBufferCtor = (globalThis as unknown as { Buffer?: NodeBufferClass }).Buffer;
const usable =
  NodeBufferCtor !== undefined &&
  typeof NodeBufferCtor.from === 'function' &&
  typeof NodeBufferCtor.prototype.utf8Slice === 'function' &&
  typeof NodeBufferCtor.prototype.indexOf === 'function';
const nodeIndexOf = usable ? NodeBufferCtor.prototype.indexOf : undefined;
const nodeUtf8Slice = usable ? NodeBufferCtor.prototype.utf8Slice : undefined;

/**
 * The same bytes as a Node Buffer view (no copy) where Buffer exists, so that per-line calls on it are
 * fast method calls; else the bytes themselves. Made once per read. Buffer's `slice` does not copy:
 * copy with `copyBytes`, never `.slice()`.
 */
export const fastView: (bytes: Uint8Array) => Uint8Array =
  !usable || NodeBufferCtor === undefined
    ? (bytes) => bytes
    : (bytes) =>
        bytes instanceof NodeBufferCtor
          ? bytes
          : NodeBufferCtor.from(bytes.buffer, bytes.byteOffset, bytes.length);

/** A copy of `bytes[start..end)` as a plain Uint8Array (whatever kind of view `bytes` is). */
export function copyBytes(bytes: Uint8Array, start: number, end: number): Uint8Array {
  const out = new Uint8Array(end - start);
  out.set(bytes.subarray(start, end));
  return out;
}

/** The index of `byte` in `bytes` at or after `from` (0 <= from <= length), or -1. */
export const indexOfByte: (bytes: Uint8Array, byte: number, from: number) => number =
  nodeIndexOf === undefined
    ? (bytes, byte, from) => bytes.indexOf(byte, from)
    : (bytes, byte, from) => (from >= bytes.length ? -1 : nodeIndexOf.call(bytes, byte, from));

/**
 * Decodes `bytes[start..end)` as UTF-8 when that is cheap and certain, else returns undefined so the
 * caller decodes with a TextDecoder. Node's decoder replaces every invalid sequence with U+FFFD (its
 * documented `toString('utf8')` behaviour), so a result without U+FFFD proves the bytes were valid
 * UTF-8 and equals what a fatal TextDecoder returns; a result holding U+FFFD (invalid bytes, or a real
 * U+FFFD) is left to the exact, policy-aware path. test/wire/byte-search.test.ts checks this claim.
 */
export const quickUtf8: (bytes: Uint8Array, start: number, end: number) => string | undefined =
  nodeUtf8Slice === undefined || NodeBufferCtor === undefined
    ? () => undefined
    : (bytes, start, end) => {
        // A method call on a Buffer is the fast path; `.call` on another view works but costs more.
        const text =
          bytes instanceof NodeBufferCtor
            ? (bytes as NodeBuffer).utf8Slice(start, end)
            : nodeUtf8Slice.call(bytes, start, end);
        return text.indexOf('\uFFFD') === -1 ? text : undefined;
      };
