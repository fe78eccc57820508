import type { Frame } from '../../wire/frame.ts';
import type { Emit } from '../dialect.ts';

const TEXT = 0;
const STRING = 1;
const NUMBER = 2;
/** A non-empty list of token ids, `[` and `]` excluded: the text event's `tokenIds`. */
const TOKENS = 3;
type HoleKind = typeof TEXT | typeof STRING | typeof NUMBER | typeof TOKENS;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
/** Digits of one token id at most: every such integer is exact as a double, so `n * 10 + d` is. */
const MAX_ID_DIGITS = 15;
/**
 * Matches of one template before it is compiled to a RegExp. Irregexp compares the bytes outside the
 * holes in machine code, 2-3x faster than slice-and-compare (llama.cpp's frames: ~70 ns against
 * ~190 ns a frame), but compiling (and V8's tier-up to native code on the second call) costs ~30-50 µs
 * for a new pattern, earned back after some 400 more frames: a stream of 512 frames has cost enough for
 * that to be at most ~5% of it, and a stream that long is likely to run on.
 */
const COMPILE_AFTER = 512;
/**
 * The longest RegExp source compiled: V8 refuses a pattern of some 50,000 characters ("Regular expression
 * too large", thrown by the first `exec`), and one that long costs more to compile than it saves.
 */
const MAX_PATTERN_LENGTH = 8192;
/** Regex syntax characters, escaped in a template's literals. */
const REGEX_SYNTAX = /[\\^$.*+?()[\]{}|/]/g;
/** The hole patterns, each exactly the language the literal path accepts (see `#compile`). */
const PLAIN_BODY = '[^"\\\\\\x00-\\x1f]*';
const NUMBER_PATTERN = '-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?';
const ID_PATTERN = `(?:0|[1-9][0-9]{0,${MAX_ID_DIGITS - 1}})`;
const TOKENS_PATTERN = `(${ID_PATTERN}(?:,${ID_PATTERN})*)`;
/** V8 makes a `slice` of 13 or more characters a view that keeps the whole frame alive. */
const SLICE_MIN_LENGTH = 13;
/** Templates learned and replaced before a single frame matched: the stream's frames differ, stop trying. */
const MAX_FRUITLESS_LEARNS = 8;

/** Options of a TextFrameTemplate beyond its ignored keys. */
export interface TextFrameTemplateOptions {
  /**
   * The key (as in the JSON, with quotes and colon: `"tokens":`) of a list of token ids that the decoder
   * puts on the text event as `tokenIds` (llama-server's `tokens`). With it, a text event that carries
   * token ids is learned too, and a match returns the frame's ids (`matchedTokenIds`).
   */
  tokenIdsKey?: string | undefined;
  /** Matches before the template is compiled to a RegExp (default 512; tests use 0 and Infinity). */
  compileAfter?: number | undefined;
}

/**
 * Reads the text of a frame without `JSON.parse` when the frame has the shape of an earlier text frame.
 *
 * The servers write every text frame of a stream with the same bytes around the text: vLLM's
 * `{"id":"chatcmpl-…","object":"chat.completion.chunk",…,"delta":{"content":"` + text + `"},…}`, Ollama's
 * line with only `created_at` changing, and so on. Parsing JSON is most of a client's decoding time
 * (bench/RESULTS.md: `JSON.parse` alone is about 60% of the floor), so after the full decoder turned a
 * frame into exactly one text event, its data is kept as a template: the bytes before the text, the
 * bytes after it, and holes for the values the decoder ignores on text frames (Ollama's `created_at`,
 * TGI's token `id` and `logprob`) and for the token ids it reads (llama-server's `"tokens":[…]`). A later
 * frame matches when it has the same bytes outside the holes, the text hole holds a JSON string body with
 * no escape and no control character, each ignored hole holds a JSON string body of the same kind or a
 * JSON number, and the token-id hole holds one or more integers of up to 15 digits, comma-separated.
 * Such a frame is valid JSON that parses to the template's object with only the hole values changed, so
 * the full decoder would emit exactly one text event with the hole's text and ids (or nothing for ""):
 * the match returns that text (and `matchedTokenIds` the ids). Any other frame (the first, the finish,
 * usage, tool calls, escapes in the text) takes the full path, unchanged.
 *
 * Learning is safe only from a frame with no backslash at all: then every string's bytes are its value,
 * so the text's one occurrence as `"text"` is where the decoder read it (two occurrences: not learned),
 * and a key that occurs once is the key the decoder read (the ids hole must also read back as exactly
 * the event's ids). test/dialects/common/text-frame-template.test.ts checks the equivalence with random
 * frames, on both matchers (byte comparison first, the compiled RegExp after 512 matches).
 */
export class TextFrameTemplate {
  readonly #ignoredKeys: readonly string[];
  readonly #tokenIdsKey: string | undefined;
  readonly #compileAfter: number;
  /** The bytes between holes: one more than the holes. */
  #literals: string[] | undefined;
  #holes: HoleKind[] = [];
  /** The template as one anchored RegExp (after `compileAfter` matches): groups for text and ids. */
  #pattern: RegExp | undefined;
  /** The RegExp group of the text hole and of the ids hole (0: none). */
  #textGroup = 0;
  #idsGroup = 0;
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
  #textIds: number[] | undefined;
  /** The token ids of the last frame `match` read, when the template has an ids hole. */
  #matchedIds: number[] | undefined;
  readonly #tap: Emit = (event) => {
    this.#events += 1;
    // Only a text event with no choice or logprobs is learned: a match emits text alone, and token ids
    // (when the decoder named their key: see `#idsHole`).
    const learnable = event.type === 'text' && event.choice === undefined && event.logprobs === undefined;
    this.#text = learnable ? event.text : undefined;
    this.#textIds = learnable ? event.tokenIds : undefined;
    this.#downstream!(event);
  };

  /**
   * @param ignoredKeys keys (as they appear in the JSON, with quotes and colon: `"created_at":`) whose
   * string or number values the decoder ignores on a text frame; they may change from frame to frame.
   */
  constructor(ignoredKeys: readonly string[] = [], options: TextFrameTemplateOptions = {}) {
    this.#ignoredKeys = ignoredKeys;
    this.#tokenIdsKey = options.tokenIdsKey;
    this.#compileAfter = options.compileAfter ?? COMPILE_AFTER;
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
    if (text === '' && this.#matchedIds !== undefined) {
      // A token with ids and no text (llama.cpp's unrendered special token): the full decoder keeps them.
      this.#decode(frame, emit, decode);
      return '';
    }
    if (text !== '') {
      const ids = this.#matchedIds;
      emit(ids === undefined ? { type: 'text', text } : { type: 'text', text, tokenIds: ids });
    }
    return text;
  }

  /**
   * The token ids of the frame the last `match` returned text for: set when the learned frame's text
   * event carried ids (the template's ids hole), else undefined.
   */
  get matchedTokenIds(): number[] | undefined {
    return this.#matchedIds;
  }

  /** The text of a frame that has the learned shape (maybe ""), or undefined: decode it in full. */
  match(frame: Frame): string | undefined {
    const literals = this.#literals;
    if (literals === undefined || frame.event !== this.#event || frame.legacyError === true) return undefined;
    const text =
      this.#pattern === undefined ? this.#matchBytes(frame.data, literals) : this.#matchPattern(frame.data);
    if (text === undefined) return undefined;
    this.#hitsSinceLearn += 1;
    if (this.#hitsSinceLearn === this.#compileAfter) this.#compile(literals);
    return text;
  }

  /** The match, comparing the bytes outside the holes literal by literal. */
  #matchBytes(data: string, literals: string[]): string | undefined {
    const first = literals[0]!;
    if (!startsWithAt(data, first, 0)) return undefined;
    const holes = this.#holes;
    let pos = first.length;
    let text = '';
    let ids: number[] | undefined;
    for (let i = 0; i < holes.length; i++) {
      const kind = holes[i]!;
      let end: number;
      if (kind === NUMBER) {
        end = numberEnd(data, pos);
        if (end === -1) return undefined;
      } else if (kind === TOKENS) {
        end = idListEnd(data, pos);
        if (end === -1) return undefined;
        ids = idsIn(data, pos, end);
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
    this.#matchedIds = ids;
    return text;
  }

  /** The match, with the compiled RegExp: the same frames, the same text and ids. */
  #matchPattern(data: string): string | undefined {
    const match = this.#pattern!.exec(data);
    if (match === null) return undefined;
    const text = match[this.#textGroup]!;
    if (this.#idsGroup !== 0) {
      const ids = match[this.#idsGroup]!;
      this.#matchedIds = idsIn(ids, 0, ids.length);
    }
    // A capture of 13 or more characters is a view of the frame: copied, as `copyOf` does.
    return text.length < SLICE_MIN_LENGTH ? text : (JSON.parse(`"${text}"`) as string);
  }

  /**
   * One anchored RegExp for the template: each literal escaped, each hole the pattern of exactly the
   * values `#matchBytes` accepts there. Every literal after a hole starts with a character that cannot
   * continue the hole (`"` after a string body; after a number, what follows a value in the learned
   * frame, valid JSON: `,` `}` `]` or a space; `]` after the ids), so the RegExp cannot backtrack into
   * another reading of a hole than the byte matcher's greedy scan.
   */
  #compile(literals: string[]): void {
    let source = `^${escapeRegex(literals[0]!)}`;
    let group = 0;
    this.#textGroup = 0;
    this.#idsGroup = 0;
    for (const [i, kind] of this.#holes.entries()) {
      if (kind === TEXT) {
        group += 1;
        this.#textGroup = group;
        source += `(${PLAIN_BODY})`;
      } else if (kind === TOKENS) {
        group += 1;
        this.#idsGroup = group;
        source += TOKENS_PATTERN;
      } else {
        source += kind === NUMBER ? NUMBER_PATTERN : PLAIN_BODY;
      }
      source += escapeRegex(literals[i + 1]!);
    }
    // A frame this long keeps the byte matcher.
    if (source.length < MAX_PATTERN_LENGTH) this.#pattern = new RegExp(`${source}$`);
  }

  #decode(frame: Frame, emit: Emit, decode: (frame: Frame, emit: Emit) => void): void {
    if (!this.#learning || frame.legacyError === true) {
      decode(frame, emit);
      return;
    }
    this.#downstream = emit;
    this.#events = 0;
    this.#text = undefined;
    this.#textIds = undefined;
    try {
      decode(frame, this.#tap);
    } finally {
      this.#downstream = undefined;
    }
    if (this.#events !== 1 || this.#text === undefined) return;
    // The first text frame is only counted: most one-token answers end before a second, and learning
    // costs more than parsing one frame.
    if (this.#textFrames++ > 0) this.#learn(frame, this.#text, this.#textIds);
  }

  #learn(frame: Frame, text: string, tokenIds: number[] | undefined): void {
    const data = frame.data;
    if (data.includes('\\')) return;
    const quoted = `"${text}"`;
    const at = data.indexOf(quoted);
    if (at === -1 || data.indexOf(quoted, at + 1) !== -1) return;
    const holes: { start: number; end: number; kind: HoleKind }[] = [
      { start: at + 1, end: at + 1 + text.length, kind: TEXT },
    ];
    if (tokenIds !== undefined) {
      const ids = this.#idsHole(data, tokenIds);
      // Ids the frame does not show as a plain list where the decoder read them: no template.
      if (ids === undefined) return;
      holes.push(ids);
    }
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
    this.#pattern = undefined;
    this.#matchedIds = undefined;
    this.#event = frame.event;
    this.#hitsSinceLearn = 0;
    if (this.#compileAfter === 0) this.#compile(literals);
  }

  /**
   * The ids hole of a frame whose text event carried `tokenIds`: the body of the list after the one
   * occurrence of the ids key, when it reads back as exactly those ids.
   */
  #idsHole(data: string, tokenIds: number[]): { start: number; end: number; kind: HoleKind } | undefined {
    const key = this.#tokenIdsKey;
    if (key === undefined) return undefined;
    const keyAt = data.indexOf(key);
    if (keyAt === -1 || data.indexOf(key, keyAt + 1) !== -1) return undefined;
    const start = keyAt + key.length + 1;
    if (data.charCodeAt(start - 1) !== OPEN_BRACKET) return undefined;
    const end = idListEnd(data, start);
    if (end === -1 || data.charCodeAt(end) !== CLOSE_BRACKET) return undefined;
    const ids = idsIn(data, start, end);
    if (ids.length !== tokenIds.length) return undefined;
    for (let i = 0; i < ids.length; i++) if (ids[i] !== tokenIds[i]) return undefined;
    return { start, end, kind: TOKENS };
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

/**
 * The end of a list body of token ids that starts at `start`: one or more non-negative integers of up to
 * 15 digits (no leading zero), comma-separated, nothing else; -1 when there is none.
 */
function idListEnd(data: string, start: number): number {
  let i = start;
  for (;;) {
    const lead = data.charCodeAt(i);
    if (lead === 0x30) i += 1;
    else if (lead >= 0x31 && lead <= 0x39) {
      const end = digitsEnd(data, i + 1);
      if (end - i > MAX_ID_DIGITS) return -1;
      i = end;
    } else return -1;
    const next = data.charCodeAt(i);
    if (next !== COMMA) return i;
    i += 1;
  }
}

/** The ids of a list body that `idListEnd` accepted (or the RegExp's ids group). */
function idsIn(data: string, start: number, end: number): number[] {
  const ids: number[] = [];
  let value = 0;
  for (let i = start; i < end; i++) {
    const c = data.charCodeAt(i);
    if (c === COMMA) {
      ids.push(value);
      value = 0;
    } else value = value * 10 + (c - 0x30);
  }
  ids.push(value);
  return ids;
}

function escapeRegex(literal: string): string {
  return literal.replace(REGEX_SYNTAX, '\\$&');
}
