import type { TokenLogprob, TopLogprob } from '../events/stream-event.ts';
import type { PlannedToken } from './generate.ts';
import type { Rng } from './prng.ts';
import type { SimTokenizer } from './tokenizer.ts';

/**
 * Log probabilities for the simulated tokens, seeded and deterministic. The sim samples greedily: each
 * chosen token is the most likely one (probability 0.5–1), as a temperature-0 server's are, and its
 * alternatives share what is left in decreasing shares (40 %, 24 %, 14 %, …), so a token's probabilities
 * never add up to more than 1 and the list is sorted. Alternatives are other tokens of the same answer,
 * with their real ids and bytes.
 */
export class SimLogprobs {
  readonly #rng: Rng;
  readonly #tokenizer: SimTokenizer;
  readonly #pool: readonly Uint8Array[];
  readonly #top: number;
  readonly #decoder = new TextDecoder();
  readonly #encoder = new TextEncoder();

  /** `top`: how many entries each token's list has (the chosen token first); 0 for none. */
  constructor(rng: Rng, tokenizer: SimTokenizer, pool: readonly Uint8Array[], top: number) {
    this.#rng = rng;
    this.#tokenizer = tokenizer;
    this.#pool = pool;
    this.#top = top;
  }

  /** The chosen token's entry, with its alternatives when they were asked for. */
  score(token: PlannedToken): TokenLogprob {
    const probability = 0.5 + 0.5 * this.#rng();
    const chosen = this.#entry(token.bytes, token.text, Math.log(probability));
    if (this.#top <= 0) return chosen;
    const top: TopLogprob[] = [Object.assign({}, chosen)];
    let share = 0.4;
    for (let attempt = 0; top.length < this.#top && attempt < 4 * this.#top; attempt++) {
      const bytes = this.#pool[Math.floor(this.#rng() * this.#pool.length)];
      if (bytes === undefined || top.some((entry) => sameBytes(entry.bytes, bytes))) continue;
      top.push(this.#entry(bytes, '', Math.log((1 - probability) * share)));
      share *= 0.6;
    }
    chosen.top = top;
    return chosen;
  }

  #entry(bytes: Uint8Array | undefined, text: string, logprob: number): TokenLogprob {
    if (bytes === undefined) return { token: text, logprob, bytes: [...this.#encoder.encode(text)] };
    const entry: TokenLogprob = { token: this.#decoder.decode(bytes), logprob, bytes: [...bytes] };
    const id = this.#tokenizer.idOf(bytes);
    if (id !== undefined) entry.id = id;
    return entry;
  }
}

function sameBytes(a: readonly number[] | undefined, b: Uint8Array): boolean {
  if (a === undefined || a.length !== b.length) return false;
  for (let i = 0; i < b.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
