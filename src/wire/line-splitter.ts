import { copyBytes, indexOfByte } from './byte-search.ts';
import { concatBytes } from './concat-bytes.ts';
import { DEFAULT_MAX_LINE_BYTES, WireError } from './wire-error.ts';

const LF = 0x0a;
const CR = 0x0d;

export interface LineSplitterOptions {
  /** A line longer than this fails with `line-too-long` instead of growing memory. Default 1 MiB. */
  maxLineBytes?: number | undefined;
  /**
   * SSE ends lines on CR, LF or CRLF. NDJSON ends them on LF only (a CR before the LF is dropped):
   * a bare CR is whitespace to JSON, not a line end.
   */
  crEndsLine: boolean;
  /** Called with each complete line as a byte range (no terminator). Valid only during the call. */
  onLine: (bytes: Uint8Array, start: number, end: number) => void;
}

/**
 * Splits a byte stream into lines, on bytes. CR and LF bytes never occur inside a multi-byte UTF-8
 * sequence, so splitting before decoding can never cut a character; each line is then decoded whole.
 * Handles a CRLF split across two reads, and a UTF-8 byte-order mark at the start of the stream even
 * when it arrives one byte at a time.
 */
export class LineSplitter {
  readonly #maxLineBytes: number;
  readonly #crEndsLine: boolean;
  readonly #onLine: LineSplitterOptions['onLine'];
  /** Bytes of an unterminated line, kept as parts and joined once: no quadratic growth on 1-byte reads. */
  #parts: Uint8Array[] = [];
  #partsBytes = 0;
  /** The previous read ended on CR: an LF at the start of the next read belongs to it. */
  #pendingCR = false;
  /** Up to 3 first bytes held until we know whether they are a BOM. */
  #head: Uint8Array | null = new Uint8Array(0);
  #offset = 0;
  #failed = false;

  constructor(options: LineSplitterOptions) {
    this.#maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
    this.#crEndsLine = options.crEndsLine;
    this.#onLine = options.onLine;
  }

  /** Bytes consumed so far (for error offsets). */
  get offset(): number {
    return this.#offset;
  }

  feed(chunk: Uint8Array): void {
    if (this.#failed) throw new WireError('decoder-failed', 'the decoder already failed; create a new one');
    if (this.#head !== null) {
      const stripped = this.#stripBom(chunk);
      if (stripped === null) return;
      chunk = stripped;
    }
    try {
      this.#split(chunk);
    } catch (error) {
      this.#failed = true;
      throw error;
    }
  }

  /**
   * The stream ended. Returns the bytes of a last line that had no terminator (or null), so the caller
   * decides what an unterminated line means in its format.
   */
  end(): Uint8Array | null {
    if (this.#head !== null && this.#head.length > 0) {
      const head = this.#head;
      this.#head = null;
      this.#appendPart(head);
    }
    if (this.#partsBytes === 0) return null;
    const rest = this.#joinParts(null, 0, 0);
    this.#parts = [];
    this.#partsBytes = 0;
    return rest;
  }

  #stripBom(chunk: Uint8Array): Uint8Array | null {
    const head = this.#head!;
    const joined = head.length === 0 ? chunk : concatBytes(head, chunk);
    const bom = [0xef, 0xbb, 0xbf];
    const n = Math.min(3, joined.length);
    for (let i = 0; i < n; i++) {
      if (joined[i] !== bom[i]) {
        this.#head = null;
        return joined;
      }
    }
    if (joined.length < 3) {
      this.#head = copyBytes(joined, 0, joined.length);
      return null;
    }
    this.#head = null;
    this.#offset += 3;
    return joined.subarray(3);
  }

  #split(chunk: Uint8Array): void {
    const length = chunk.length;
    let pos = 0;
    if (this.#pendingCR) {
      this.#pendingCR = false;
      if (length > 0 && chunk[0] === LF) pos = 1;
    }
    // Most streams never contain a CR: look once per read and skip the second search when absent.
    let nextCR = this.#crEndsLine ? indexOfByte(chunk, CR, pos) : -1;
    while (pos < length) {
      // An empty line (the end of every SSE event) needs no search.
      let nextLF = chunk[pos] === LF ? pos : indexOfByte(chunk, LF, pos);
      if (nextCR !== -1 && nextCR < pos) nextCR = indexOfByte(chunk, CR, pos);
      let end: number;
      if (nextCR !== -1 && (nextLF === -1 || nextCR < nextLF)) end = nextCR;
      else end = nextLF;
      if (end === -1) {
        this.#appendPart(copyBytes(chunk, pos, length));
        this.#offset += length - pos;
        return;
      }
      let lineEnd = end;
      if (!this.#crEndsLine && lineEnd > pos && chunk[lineEnd - 1] === CR) lineEnd -= 1;
      if (this.#partsBytes > 0) {
        const line = this.#joinParts(chunk, pos, lineEnd);
        this.#parts = [];
        this.#partsBytes = 0;
        this.#checkLength(line.length);
        this.#onLine(line, 0, line.length);
      } else {
        this.#checkLength(lineEnd - pos);
        this.#onLine(chunk, pos, lineEnd);
      }
      let next = end + 1;
      if (chunk[end] === CR) {
        if (next < length) {
          if (chunk[next] === LF) next += 1;
        } else {
          this.#pendingCR = true;
        }
        nextLF = -1;
      }
      this.#offset += next - pos;
      pos = next;
    }
  }

  #appendPart(part: Uint8Array): void {
    if (part.length === 0) return;
    this.#parts.push(part);
    this.#partsBytes += part.length;
    // A partial line of an NDJSON stream may still end in a CR that is not part of the line.
    this.#checkLength(this.#partsBytes - (this.#crEndsLine ? 0 : 1));
  }

  #checkLength(bytes: number): void {
    if (bytes > this.#maxLineBytes) {
      throw new WireError(
        'line-too-long',
        `a line is longer than the limit of ${this.#maxLineBytes} bytes (raise maxLineBytes if this server really sends such lines)`,
        { byteOffset: this.#offset },
      );
    }
  }

  #joinParts(tail: Uint8Array | null, start: number, end: number): Uint8Array {
    let total = this.#partsBytes;
    if (tail !== null) total += end - start;
    let cutCR = false;
    if (!this.#crEndsLine && tail !== null && end === start) {
      // The CR before this LF sat at the end of the previous read.
      const last = this.#parts[this.#parts.length - 1]!;
      if (last[last.length - 1] === CR) cutCR = true;
    }
    const out = new Uint8Array(total);
    let at = 0;
    for (const part of this.#parts) {
      out.set(part, at);
      at += part.length;
    }
    if (tail !== null) out.set(tail.subarray(start, end), at);
    return cutCR ? out.subarray(0, total - 1) : out;
  }
}
