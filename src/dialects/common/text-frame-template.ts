import type { Frame } from '../../wire/frame.ts';
import type { Emit } from '../dialect.ts';

const TEXT = 0;
const STRING = 1;
const NUMBER = 2;
type HoleKind = typeof TEXT | typeof STRING | typeof NUMBER;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
/** V8 makes a `slice` of 13 or more characters a view that keeps the whole frame alive. */
const SLICE_MIN_LENGTH = 13;
/** Templates learned and replaced before a single frame matched: the stream's frames differ, stop trying. */
const MAX_FRUITLESS_LEARNS = 8;

/**
 * Reads the text of a frame without `JSON.parse` when the frame has the shape of an earlier text frame.
 *
 * The servers write every text frame of a stream with the same bytes around the text: vLLM's
 * `{"id":"chatcmpl-…","object":"chat.completion.chunk",…,"delta":{"content":"` + text + `"},…}`, Ollama's
 * line with only `created_at` changing, and so on. Parsing JSON is most of a client's decoding time
 * (bench/RESULTS.md: `JSON.parse` alone is about 60% of the floor), so after the full decoder turned a
 * frame into exactly one text event, its data is kept as a template: the bytes before the text, the
 * bytes after it, and holes for the values the decoder ignores on text frames (Ollama's `created_at`,
 * TGI's token `id` and `logprob`). A later frame matches when it has the same bytes outside the holes,
 * the text hole holds a JSON string body with no escape and no control character, and each ignored hole
 * holds a JSON string body of the same kind or a JSON number. Such a frame is valid JSON that parses to
 * the template's object with only the hole values changed, so the full decoder would emit exactly one text
 * event with the hole's text (or nothing for ""): the match returns that text. Any other frame (the
 * first, the finish, usage, tool calls, escapes in the text) takes the full path, unchanged.
 *
 * Learning is safe only from a frame with no backslash at all: then every string's bytes are its value,
 * so the text's one occurrence as `"text"` is where the decoder read it (two occurrences: not learned).
 * test/dialects/common/text-frame-template.test.ts checks the equivalence with random frames.
 */
export class TextFrameTemplate {
  readonly #ignoredKeys: readonly string[];
  /** The bytes between holes: one more than the holes. */
  #literals: string[] | undefined;
  #holes: HoleKind[] = [];
  #event: string | undefined;
  #hitsSinceLearn = 0;
  #fruitless = 0;
  #learning = true;
  /** Frames the full path turned into exactly one text event. */
  #textFrames = 0;
  // The full path's output for the frame being learned (set around one call of `decode`).
  #downstream: Emit | undefined;
  #events = 0;
  #text: string | undefined;
  readonly #tap: Emit = (event) => {
    this.#events += 1;
    // Only a bare text event is learned: a match emits text alone (no choice, token ids or logprobs).
    this.#text =
      event.type === 'text' &&
      event.choice === undefined &&
      event.tokenIds === undefined &&
      event.logprobs === undefined
        ? event.text
        : undefined;
    this.#downstream!(event);
  };

  /**
   * @param ignoredKeys keys (as they appear in the JSON, with quotes and colon: `"created_at":`) whose
   * string or number values the decoder ignores on a text frame; they may change from frame to frame.
   */
  constructor(ignoredKeys: readonly string[] = []) {
    this.#ignoredKeys = ignoredKeys;
  }

  /**
   * Decodes one frame: a frame with the learned shape becomes its text event here; any other goes to
   * `decode` (the full decoder), and its shape is learned when `decode` emitted exactly one event, a text
   * event, for it. Returns the text emitted here ('' when the frame took the full path).
   */
  frame(frame: Frame, emit: Emit, decode: (frame: Frame, emit: Emit) => void): string {
    const text = this.match(frame);
    if (text === undefined) {
      this.#decode(frame, emit, decode);
      return '';
    }
    if (text !== '') emit({ type: 'text', text });
    return text;
  }

  /** The text of a frame that has the learned shape (maybe ""), or undefined: decode it in full. */
  match(frame: Frame): string | undefined {
    const literals = this.#literals;
    if (literals === undefined || frame.event !== this.#event || frame.legacyError === true) return undefined;
    const data = frame.data;
    const first = literals[0]!;
    if (!startsWithAt(data, first, 0)) return undefined;
    const holes = this.#holes;
    let pos = first.length;
    let text = '';
    for (let i = 0; i < holes.length; i++) {
      const kind = holes[i]!;
      let end: number;
      if (kind === NUMBER) {
        end = numberEnd(data, pos);
        if (end === -1) return undefined;
      } else {
        end = data.indexOf('"', pos);
        if (end === -1 || !plainStringBody(data, pos, end)) return undefined;
        if (kind === TEXT) text = copyOf(data, pos, end);
      }
      const literal = literals[i + 1]!;
      if (!startsWithAt(data, literal, end)) return undefined;
      pos = end + literal.length;
    }
    if (pos !== data.length) return undefined;
    this.#hitsSinceLearn += 1;
    return text;
  }

  #decode(frame: Frame, emit: Emit, decode: (frame: Frame, emit: Emit) => void): void {
    if (!this.#learning || frame.legacyError === true) {
      decode(frame, emit);
      return;
    }
    this.#downstream = emit;
    this.#events = 0;
    this.#text = undefined;
    try {
      decode(frame, this.#tap);
    } finally {
      this.#downstream = undefined;
    }
    if (this.#events !== 1 || this.#text === undefined) return;
    // The first text frame is only counted: most one-token answers end before a second, and learning
    // costs more than parsing one frame.
    if (this.#textFrames++ > 0) this.#learn(frame, this.#text);
  }

  #learn(frame: Frame, text: string): void {
    const data = frame.data;
    if (data.includes('\\')) return;
    const quoted = `"${text}"`;
    const at = data.indexOf(quoted);
    if (at === -1 || data.indexOf(quoted, at + 1) !== -1) return;
    const holes: { start: number; end: number; kind: HoleKind }[] = [
      { start: at + 1, end: at + 1 + text.length, kind: TEXT },
    ];
    for (const key of this.#ignoredKeys) {
      const keyAt = data.indexOf(key);
      if (keyAt === -1 || data.indexOf(key, keyAt + 1) !== -1) continue;
      let start = keyAt + key.length;
      while (data[start] === ' ') start += 1;
      if (data.charCodeAt(start) === QUOTE) {
        const end = data.indexOf('"', start + 1);
        if (end !== -1) holes.push({ start: start + 1, end, kind: STRING });
      } else {
        const end = numberEnd(data, start);
        if (end !== -1) holes.push({ start, end, kind: NUMBER });
      }
    }
    holes.sort((a, b) => a.start - b.start);
    const literals: string[] = [];
    let pos = 0;
    for (const hole of holes) {
      // A hole inside another (an ignored key's value inside the text) makes no template.
      if (hole.start < pos) return;
      literals.push(data.slice(pos, hole.start));
      pos = hole.end;
    }
    literals.push(data.slice(pos));
    if (this.#literals !== undefined && this.#hitsSinceLearn === 0) {
      this.#fruitless += 1;
      if (this.#fruitless >= MAX_FRUITLESS_LEARNS) this.#learning = false;
    }
    this.#literals = literals;
    this.#holes = holes.map((hole) => hole.kind);
    this.#event = frame.event;
    this.#hitsSinceLearn = 0;
  }
}

/**
 * `data.startsWith(literal, at)`, 8x faster on Node 20 for literals of a hundred characters: V8 11's
 * `startsWith` compares character by character (~500 ns for a 170-character vLLM prefix), while `===` on
 * a slice compares memory (a micro-benchmark of 200,000 frames: 105 ms -> 13 ms).
 */
function startsWithAt(data: string, literal: string, at: number): boolean {
  return data.slice(at, at + literal.length) === literal;
}

/** True when `data[start..end)` is a JSON string body with no escape and no control character. */
function plainStringBody(data: string, start: number, end: number): boolean {
  for (let i = start; i < end; i++) {
    const c = data.charCodeAt(i);
    if (c < 0x20 || c === BACKSLASH) return false;
  }
  return true;
}

/** The end of the JSON number that starts at `start`, or -1 when none does (RFC 8259 §6). */
function numberEnd(data: string, start: number): number {
  let i = start;
  if (data.charCodeAt(i) === 0x2d) i += 1;
  const lead = data.charCodeAt(i);
  if (lead === 0x30) i += 1;
  else if (lead >= 0x31 && lead <= 0x39) i = digitsEnd(data, i + 1);
  else return -1;
  if (data.charCodeAt(i) === 0x2e) {
    const after = digitsEnd(data, i + 1);
    if (after === i + 1) return -1;
    i = after;
  }
  const e = data.charCodeAt(i);
  if (e === 0x65 || e === 0x45) {
    i += 1;
    const sign = data.charCodeAt(i);
    if (sign === 0x2b || sign === 0x2d) i += 1;
    const after = digitsEnd(data, i);
    if (after === i) return -1;
    i = after;
  }
  return i;
}

function digitsEnd(data: string, start: number): number {
  let i = start;
  for (;;) {
    // Past the end charCodeAt is NaN, which is no digit either.
    const c = data.charCodeAt(i);
    if (!(c >= 0x30 && c <= 0x39)) return i;
    i += 1;
  }
}

/** `data[start..end)` as a string of its own: a long slice would keep the whole frame alive. */
function copyOf(data: string, start: number, end: number): string {
  if (end - start < SLICE_MIN_LENGTH) return data.slice(start, end);
  // JSON.parse of the quoted body (no escapes: checked) copies it into a new string.
  return JSON.parse(data.slice(start - 1, end + 1)) as string;
}
