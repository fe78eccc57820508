import {
  type CorpusLanguage,
  type CorpusParagraph,
  corpusFor,
  PARAGRAPH_BREAK,
  REASONING_CORPUS,
} from './corpus.ts';
import type { SimTokenizer } from './tokenizer.ts';

/** One sentence of the corpus as token bytes, with the separator that follows it. */
export interface CorpusUnit {
  readonly text: string;
  readonly tokens: readonly Uint8Array[];
  /** The separator after this sentence (a space, nothing, or a paragraph break), as token bytes. */
  readonly after: readonly Uint8Array[];
  readonly afterText: string;
}

export interface CorpusUnits {
  readonly answer: readonly CorpusUnit[];
  readonly reasoning: readonly CorpusUnit[];
}

const cache = new WeakMap<SimTokenizer, Map<CorpusLanguage, CorpusUnits>>();

/** A language's corpus (default: every script) cut into sentences and tokenized, once per tokenizer. */
export function corpusUnits(tokenizer: SimTokenizer, language: CorpusLanguage = 'multilingual'): CorpusUnits {
  let byLanguage = cache.get(tokenizer);
  if (byLanguage === undefined) {
    byLanguage = new Map();
    cache.set(tokenizer, byLanguage);
  }
  let units = byLanguage.get(language);
  if (units === undefined) {
    units = {
      answer: tokenizeParagraphs(tokenizer, corpusFor(language)),
      reasoning: tokenizeParagraphs(tokenizer, [{ sentences: REASONING_CORPUS, joiner: ' ' }]),
    };
    byLanguage.set(language, units);
  }
  return units;
}

/** Token ids of `text` as byte arrays, one per token. */
export function tokenizeToBytes(tokenizer: SimTokenizer, text: string): Uint8Array[] {
  if (text === '') return [];
  return tokenizer.encode(text).map((token) => tokenizer.tokenBytes(token));
}

function tokenizeParagraphs(tokenizer: SimTokenizer, paragraphs: readonly CorpusParagraph[]): CorpusUnit[] {
  const out: CorpusUnit[] = [];
  paragraphs.forEach((paragraph) => {
    paragraph.sentences.forEach((sentence, index) => {
      const last = index === paragraph.sentences.length - 1;
      const afterText = last ? PARAGRAPH_BREAK : paragraph.joiner;
      out.push({
        text: sentence,
        tokens: tokenizeToBytes(tokenizer, sentence),
        after: tokenizeToBytes(tokenizer, afterText),
        afterText,
      });
    });
  });
  return out;
}
