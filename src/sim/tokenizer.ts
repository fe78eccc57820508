import { TokenwireError } from '../errors.ts';

/**
 * The real cl100k_base BPE tokenizer (`gpt-tokenizer`), loaded once and lazily: the module takes a
 * quarter of a second to load, so nothing pays for it until the first request needs tokens.
 *
 * gpt-tokenizer's merge loop is quadratic in the length of one pre-token (it rescans and splices the
 * whole piece per merge), and its pre-tokenizer leaves runs of letters, punctuation or whitespace whole:
 * 40 000 × "a" took 1.9 s, a 3 MB run minutes. We run the same pre-tokenizer and cut any piece longer
 * than {@link MAX_PIECE_CHARS} into pieces of that length, so BPE costs at most that many steps per
 * character: linear in the input. Text whose pieces are all shorter encodes exactly as gpt-tokenizer
 * does; a long run gets a realistic count (a run of random letters within 0.3 %, 4 000 × "a" exactly).
 */
export interface SimTokenizer {
  /** Token ids of `text`. Special-token text such as `<|endoftext|>` is encoded as plain text. */
  encode(text: string): number[];
  /**
   * How many tokens `encode(text)` returns, counted in slices that give the event loop a turn between
   * them (every {@link SLICE_WORK} units of BPE work), so a prompt of megabytes never blocks the process.
   * Resolves `undefined` once `signal` aborts. With `limit`, counting stops as soon as the count
   * reaches it: the result is then the count so far (at least `limit`), not the whole text's.
   */
  count(text: string, signal?: AbortSignal, limit?: number): Promise<number | undefined>;
  /** The exact bytes of one token. A token may hold part of a UTF-8 character. */
  tokenBytes(token: number): Uint8Array;
  /** The id of a token whose bytes `tokenBytes` returned (the same array); undefined for any other array. */
  idOf(bytes: Uint8Array): number | undefined;
}

/** The longest piece (UTF-16 units) handed to BPE whole; longer pre-tokens are cut into pieces this long. */
export const MAX_PIECE_CHARS = 128;
/**
 * Work (Σ piece length², plus a constant per piece) between two event-loop turns of `count()`: about
 * 10 ms of BPE (a 128-letter piece of random letters takes 0.7 ms, ~40 ns per unit).
 */
export const SLICE_WORK = 1 << 18;
const PIECE_OVERHEAD = 64;

type TokenPart = string | Uint8Array;

interface EncodingModule {
  default: unknown;
}

interface BpeCore {
  decodeNativeGenerator(tokens: Iterable<number>): Iterable<TokenPart>;
  bytePairEncode(piece: string): number[];
  getBpeRankFromString(piece: string): number | undefined;
  tokenSplitRegex: RegExp;
}

let loading: Promise<SimTokenizer> | undefined;

/** The shared tokenizer; the first call starts loading it. */
export function loadTokenizer(): Promise<SimTokenizer> {
  loading ??= import('gpt-tokenizer/encoding/cl100k_base').then(
    (module) => createTokenizer(module as unknown as EncodingModule),
    (error: unknown) => {
      // An optional peer dependency (30 MB, only the simulator needs it): say what to install.
      const code = (error as { code?: unknown } | null)?.code;
      if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') throw error;
      throw new TokenwireError(
        'missing-package',
        'the simulated model needs the npm package gpt-tokenizer, which is not installed: npm install gpt-tokenizer',
        { cause: error },
      );
    },
  );
  return loading;
}

/**
 * The pre-tokens of `text` as BPE sees them: the encoding's own split, with every piece longer than
 * `maxPieceChars` cut into pieces of that length (never inside a surrogate pair). Exported for tests:
 * their lengths bound the work (`count()` and `encode()` do at most length² steps per piece).
 */
export function* pieces(
  text: string,
  splitRegex: RegExp,
  maxPieceChars = MAX_PIECE_CHARS,
): Generator<string> {
  // A copy: the shared regex's `lastIndex` must not be moved under a `count()` that is waiting.
  const regex = new RegExp(
    splitRegex.source,
    splitRegex.flags.includes('g') ? splitRegex.flags : `${splitRegex.flags}g`,
  );
  for (let match = regex.exec(text); match !== null; match = regex.exec(text)) {
    const piece = match[0];
    if (piece === '') {
      regex.lastIndex += 1;
      continue;
    }
    if (piece.length <= maxPieceChars) {
      yield piece;
      continue;
    }
    let start = 0;
    while (start < piece.length) {
      let end = Math.min(piece.length, start + maxPieceChars);
      // Do not cut between the halves of a surrogate pair.
      if (end < piece.length && isHighSurrogate(piece.charCodeAt(end - 1))) end -= 1;
      yield piece.slice(start, end);
      start = end;
    }
  }
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function createTokenizer(module: EncodingModule): SimTokenizer {
  // Per-token bytes, the pre-tokenizer and the piece encoder are not public API (gpt-tokenizer encodes
  // and decodes whole texts only); its BPE core has them: check they are there.
  const core = (module.default as { bytePairEncodingCoreProcessor?: Partial<BpeCore> })
    .bytePairEncodingCoreProcessor;
  if (
    core === undefined ||
    typeof core.decodeNativeGenerator !== 'function' ||
    typeof core.bytePairEncode !== 'function' ||
    typeof core.getBpeRankFromString !== 'function' ||
    !(core.tokenSplitRegex instanceof RegExp)
  ) {
    throw new Error('tokenwire sim: this gpt-tokenizer version does not expose its BPE core');
  }
  const decodeParts = core.decodeNativeGenerator.bind(core);
  const bytePairEncode = core.bytePairEncode.bind(core);
  const rankOf = core.getBpeRankFromString.bind(core);
  const splitRegex = core.tokenSplitRegex;
  const encoder = new TextEncoder();
  const cache = new Map<number, Uint8Array>();
  const ids = new WeakMap<Uint8Array, number>();
  return {
    encode(text) {
      const tokens: number[] = [];
      for (const piece of pieces(text, splitRegex)) {
        const rank = rankOf(piece);
        if (rank !== undefined) tokens.push(rank);
        else for (const token of bytePairEncode(piece)) tokens.push(token);
      }
      return tokens;
    },
    async count(text, signal, limit = Number.POSITIVE_INFINITY) {
      let total = 0;
      let work = 0;
      for (const piece of pieces(text, splitRegex)) {
        total += rankOf(piece) !== undefined ? 1 : bytePairEncode(piece).length;
        if (total >= limit) break;
        work += PIECE_OVERHEAD + piece.length * piece.length;
        if (work >= SLICE_WORK) {
          work = 0;
          await nextTurn();
          if (signal?.aborted === true) return undefined;
        }
      }
      return signal?.aborted === true ? undefined : total;
    },
    tokenBytes(token) {
      let bytes = cache.get(token);
      if (bytes === undefined) {
        const parts = [...decodeParts([token])];
        const part = parts[0];
        if (parts.length !== 1 || part === undefined)
          throw new Error(`tokenwire sim: unknown token ${token}`);
        bytes = typeof part === 'string' ? encoder.encode(part) : part;
        cache.set(token, bytes);
        ids.set(bytes, token);
      }
      return bytes;
    },
    idOf(bytes) {
      return ids.get(bytes);
    },
  };
}

/**
 * A macrotask: I/O (a `/healthz`, a SIGTERM) runs before it resolves. Node's `setImmediate` when there is
 * one (a `setTimeout(0)` waits at least 1 ms, a second per thousand slices), else a timer.
 */
function nextTurn(): Promise<void> {
  const immediate = (globalThis as { setImmediate?: (callback: () => void) => unknown }).setImmediate;
  return new Promise((resolve) => {
    if (immediate !== undefined) immediate(resolve);
    else setTimeout(resolve, 0);
  });
}
