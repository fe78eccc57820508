/**
 * Some servers repeat the whole text so far in every event instead of sending deltas. Detected when
 * an event's text starts with everything received before it (at least 3 characters, so two short
 * tokens that happen to repeat do not trigger it); from then on only the new suffix is passed on.
 */
export class CumulativeTextFilter {
  #seen = '';
  #cumulative = false;
  #events = 0;
  /** After this many plain delta events the stream is taken to be deltas and checks stop. */
  static readonly DECIDE_AFTER = 8;
  #settled = false;
  /** True once cumulative mode was detected. */
  get detected(): boolean {
    return this.#cumulative;
  }

  /** Returns the new text of this event ('' when nothing is new). */
  next(text: string): string {
    if (this.#settled) return text;
    this.#events += 1;
    if (this.#cumulative) {
      if (text.startsWith(this.#seen)) {
        const fresh = text.slice(this.#seen.length);
        this.#seen = text;
        return fresh;
      }
      // The server went back to deltas (or restarted): pass the text through.
      this.#cumulative = false;
      this.#seen += text;
      return text;
    }
    if (
      this.#events > 1 &&
      this.#seen.length >= 3 &&
      text.length > this.#seen.length &&
      text.startsWith(this.#seen)
    ) {
      this.#cumulative = true;
      const fresh = text.slice(this.#seen.length);
      this.#seen = text;
      return fresh;
    }
    this.#seen += text;
    if (this.#events >= CumulativeTextFilter.DECIDE_AFTER) {
      this.#settled = true;
      this.#seen = '';
    }
    return text;
  }
}
