/**
 * What the page shows of each network read on the raw wire: the bytes as text (control characters and
 * the bytes of a split character made visible), and where the read split things — inside a UTF-8
 * character, mid-line, or on an event boundary. Pure: tested in Node (test/web/wire-reads.test.ts).
 */
export interface ReadView {
  /** The read's bytes as text: `\n` as `⏎` (the line break is kept), a split character's bytes as `‹e3 81›`. */
  readonly text: string;
  readonly bytes: number;
  /** The read ends inside a multi-byte UTF-8 character (its last bytes wait for the next read). */
  readonly endsInsideCharacter: boolean;
  /** The read ends inside a line (the rest of the line comes with the next read). */
  readonly endsMidLine: boolean;
  /** Lines of this read that start with `:`: SSE comments (keepalives). */
  readonly comments: number;
}

/** Reads the raw wire read by read, keeping what a split left open. */
export class ReadViewer {
  /** Bytes of a character the previous read left unfinished. */
  #carry: number[] = [];
  #atLineStart = true;
  #inComment = false;

  view(bytes: Uint8Array): ReadView {
    let text = '';
    let comments = 0;
    let i = 0;
    // The rest of a character the previous read split: shown as the bytes that completed it.
    if (this.#carry.length > 0) {
      const need = sequenceLength(this.#carry[0]!) - this.#carry.length;
      const tail: number[] = [];
      while (i < bytes.length && tail.length < need && (bytes[i]! & 0xc0) === 0x80) tail.push(bytes[i++]!);
      text += `‹${hex(tail)}›`;
      this.#carry = tail.length === need ? [] : [...this.#carry, ...tail];
    }
    let run = '';
    const flushRun = () => {
      text += run;
      run = '';
    };
    while (i < bytes.length) {
      const byte = bytes[i]!;
      if (this.#atLineStart && byte === 0x3a && !this.#inComment) {
        comments += 1;
        this.#inComment = true;
      }
      this.#atLineStart = false;
      if (byte === 0x0a) {
        run += '⏎\n';
        this.#atLineStart = true;
        this.#inComment = false;
        i++;
        continue;
      }
      if (byte === 0x0d) {
        run += '␍';
        i++;
        continue;
      }
      const length = sequenceLength(byte);
      if (length === 1) {
        run += byte < 0x20 || byte === 0x7f ? `‹${hex([byte])}›` : String.fromCharCode(byte);
        i++;
        continue;
      }
      if (length === 0) {
        run += `‹${hex([byte])}›`;
        i++;
        continue;
      }
      if (i + length > bytes.length) {
        // Split inside this character: its first bytes end the read.
        flushRun();
        this.#carry = [...bytes.subarray(i)];
        text += `‹${hex(this.#carry)}›`;
        i = bytes.length;
        break;
      }
      run += new TextDecoder().decode(bytes.subarray(i, i + length));
      i += length;
    }
    flushRun();
    return {
      text,
      bytes: bytes.length,
      endsInsideCharacter: this.#carry.length > 0,
      endsMidLine: !this.#atLineStart,
      comments,
    };
  }
}

/** Bytes in the UTF-8 sequence a lead byte starts; 1 for ASCII, 0 for a byte that cannot start one. */
function sequenceLength(byte: number): number {
  if (byte < 0x80) return 1;
  if (byte >= 0xc2 && byte <= 0xdf) return 2;
  if (byte >= 0xe0 && byte <= 0xef) return 3;
  if (byte >= 0xf0 && byte <= 0xf4) return 4;
  return 0;
}

function hex(bytes: readonly number[]): string {
  return bytes.map((byte) => byte.toString(16).padStart(2, '0')).join(' ');
}
