/**
 * The real cl100k_base BPE tokenizer (`gpt-tokenizer`), loaded once and lazily: the module takes a
 * quarter of a second to load, so nothing pays for it until the first request needs tokens.
 */
export interface SimTokenizer {
  /** Token ids of `text`. Special-token text such as `<|endoftext|>` is encoded as plain text. */
  encode(text: string): number[];
  /** The exact bytes of one token. A token may hold part of a UTF-8 character. */
  tokenBytes(token: number): Uint8Array;
}

type TokenPart = string | Uint8Array;

interface EncodingModule {
  encode(text: string, options?: { disallowedSpecial?: Set<string> }): number[];
  default: unknown;
}

interface BpeCore {
  decodeNativeGenerator(tokens: Iterable<number>): Iterable<TokenPart>;
}

let loading: Promise<SimTokenizer> | undefined;

/** The shared tokenizer; the first call starts loading it. */
export function loadTokenizer(): Promise<SimTokenizer> {
  loading ??= import('gpt-tokenizer/encoding/cl100k_base').then((module) =>
    createTokenizer(module as unknown as EncodingModule),
  );
  return loading;
}

function createTokenizer(module: EncodingModule): SimTokenizer {
  // The per-token bytes are not public API: gpt-tokenizer decodes whole sequences only. Its BPE core
  // yields each token's bytes (a string when they are valid UTF-8 on their own); check it is there.
  const core = (module.default as { bytePairEncodingCoreProcessor?: Partial<BpeCore> })
    .bytePairEncodingCoreProcessor;
  if (core === undefined || typeof core.decodeNativeGenerator !== 'function') {
    throw new Error('tokenwire sim: this gpt-tokenizer version does not expose per-token bytes');
  }
  const decodeParts = core.decodeNativeGenerator.bind(core);
  const encoder = new TextEncoder();
  const noSpecial = { disallowedSpecial: new Set<string>() };
  const cache = new Map<number, Uint8Array>();
  return {
    encode: (text) => module.encode(text, noSpecial),
    tokenBytes(token) {
      let bytes = cache.get(token);
      if (bytes === undefined) {
        const parts = [...decodeParts([token])];
        const part = parts[0];
        if (parts.length !== 1 || part === undefined)
          throw new Error(`tokenwire sim: unknown token ${token}`);
        bytes = typeof part === 'string' ? encoder.encode(part) : part;
        cache.set(token, bytes);
      }
      return bytes;
    },
  };
}
