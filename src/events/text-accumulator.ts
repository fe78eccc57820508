/** Pieces of text gathered before they are joined into one flat string. */
const CHUNK_PIECES = 128;

/**
 * A text built from many small pieces (one per streamed token). The pieces are gathered in a chunk of up
 * to 128, and each full chunk is flattened before it joins the text, so the text is a short list of flat
 * chunks rather than one string node per piece: what a garbage collection copies and keeps per stream
 * stays small. Shape kept for speed: bench/README.md "Why the code is shaped as it is" (The Result's text).
 */
export class TextAccumulator {
  #text = '';
  #chunk = '';
  #pieces = 0;

  add(piece: string): void {
    this.#chunk += piece;
    this.#pieces += 1;
    if (this.#pieces === CHUNK_PIECES) this.#fold();
  }

  get text(): string {
    if (this.#pieces > 0) this.#fold();
    return this.#text;
  }

  #fold(): void {
    const chunk = this.#chunk;
    // ToNumber flattens a rope in V8: the chunk's per-piece nodes are garbage from here on.
    Number(chunk);
    this.#text += chunk;
    this.#chunk = '';
    this.#pieces = 0;
  }
}
