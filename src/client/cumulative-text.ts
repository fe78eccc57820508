/**
 * Some servers repeat the whole text so far in every event instead of sending deltas. Detected when an
 * event's text starts with everything received before it: at once when that text is at least 3
 * characters long; when it is shorter (a 1-character first token), the event is held until the next
 * one settles it (it must start with the held text too). From then on only the new suffix is passed on.
 * After a few plain delta events the stream is taken to be deltas and the checks stop.
 */
export class CumulativeTextFilter {
  static readonly DECIDE_AFTER = 8;
  #seen = '';
  #held: string | undefined;
  #cumulative = false;
  #settled = false;
  #events = 0;

  /** True once cumulative mode was detected. */
  get detected(): boolean {
    return this.#cumulative;
  }

  /** True once the stream was taken to be plain deltas: `next` passes every text through from now on. */
  get settled(): boolean {
    return this.#settled;
  }

  /** The new text of this event ('' when nothing is new, or when it is held to decide). */
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
    const held = this.#held;
    if (held !== undefined) {
      this.#held = undefined;
      if (text.length > held.length && text.startsWith(held)) {
        this.#cumulative = true;
        const fresh = held.slice(this.#seen.length) + text.slice(held.length);
        this.#seen = text;
        return fresh;
      }
      this.#seen += held + text;
      return held + text;
    }
    if (
      this.#events > 1 &&
      this.#seen.length > 0 &&
      text.length > this.#seen.length &&
      text.startsWith(this.#seen)
    ) {
      if (this.#seen.length >= 3) {
        this.#cumulative = true;
        const fresh = text.slice(this.#seen.length);
        this.#seen = text;
        return fresh;
      }
      this.#held = text;
      return '';
    }
    this.#seen += text;
    if (this.#events >= CumulativeTextFilter.DECIDE_AFTER) {
      this.#settled = true;
      this.#seen = '';
    }
    return text;
  }

  /** Text held to decide, released as it came (before a non-text event, and at the end). */
  flush(): string {
    const held = this.#held;
    if (held === undefined) return '';
    this.#held = undefined;
    this.#seen += held;
    return held;
  }
}
