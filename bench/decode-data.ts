import type { DialectId, FrameKind } from '../src/dialects/dialect.ts';
import { frameText } from '../src/dialects/frame-text.ts';
import { getDialect } from '../src/dialects/registry.ts';
import type { StreamEvent } from '../src/events/stream-event.ts';
import { CORPUS, PARAGRAPH_BREAK } from '../src/sim/corpus.ts';
import { loadTokenizer } from '../src/sim/tokenizer.ts';

/** A whole response body held in memory, with the text a correct client must reassemble from it. */
export interface DecodeStream {
  dialect: DialectId;
  bytes: Buffer;
  /** The answer text, joined from the pieces the encoder was given (independent of every decoder). */
  expectedText: string;
  /** Content events written (one text piece each). */
  contentEvents: number;
  /** Frames on the wire (SSE events or NDJSON lines), terminator and trailer included. */
  frames: number;
}

/**
 * Which paragraphs of the simulator's corpus an answer cycles through: mostly English (with accents and
 * emoji), and one of the non-Latin paragraphs (Japanese, Russian, Arabic, Hindi) in every seventh
 * sentence group, so the stream is realistic for an English chat with some non-Latin text.
 */
const LATIN = [0, 6, 7, 1, 0, 7];
const NON_LATIN = [2, 3, 4, 5];

/** One streamed piece of text and the ids of the tokens that spelled it. */
export interface AnswerPiece {
  text: string;
  tokenIds: number[];
}

/**
 * The pieces of text an answer of `count` pieces streams, cut by the real cl100k BPE tokenizer the
 * simulator uses. A token that ends inside a UTF-8 character releases nothing; its bytes go out with
 * the next one (as vLLM does), so every piece is non-empty, and carries the ids of both.
 */
export async function answerPieces(count: number): Promise<AnswerPiece[]> {
  const tokenizer = await loadTokenizer();
  const decoder = new TextDecoder('utf-8', { ignoreBOM: true });
  const paragraphTokens = (index: number): number[] => {
    const paragraph = CORPUS[index]!;
    return tokenizer.encode(paragraph.sentences.join(paragraph.joiner) + PARAGRAPH_BREAK);
  };
  const cycle: number[][] = [];
  for (const latin of LATIN) cycle.push(paragraphTokens(latin));
  const nonLatin = NON_LATIN.map(paragraphTokens);
  const pieces: AnswerPiece[] = [];
  let held: number[] = [];
  let round = 0;
  while (pieces.length < count) {
    const groups = [...cycle, nonLatin[round % nonLatin.length]!];
    round += 1;
    for (const group of groups) {
      for (const token of group) {
        held.push(token);
        const text = decoder.decode(tokenizer.tokenBytes(token), { stream: true });
        if (text === '') continue;
        pieces.push({ text, tokenIds: held });
        held = [];
        if (pieces.length === count) return pieces;
      }
    }
  }
  return pieces;
}

/** Dialects whose servers put the token ids on every streamed piece (llama-server since Dec 2024). */
const SENDS_TOKEN_IDS: ReadonlySet<DialectId> = new Set(['llamacpp']);

/**
 * Writes the pieces as `dialect`'s server would (its default encoder flavor: vLLM for the OpenAI
 * dialects), with the start, the finish and usage, and frames them as SSE events or NDJSON lines.
 */
export function encodeStream(dialect: DialectId, pieces: readonly AnswerPiece[]): DecodeStream {
  const d = getDialect(dialect);
  let clock = Date.UTC(2026, 0, 15, 12, 0, 0);
  const encoder = d.createEncoder({
    id: 'chatcmpl-bench0123456789abcdef',
    model: 'meta-llama/Llama-3.1-8B-Instruct',
    created: 1768478400,
    includeUsage: true,
    // Ollama writes a fresh created_at per line: advance a fake clock so lines differ as they do live.
    now: () => {
      clock += 20;
      return clock;
    },
  });
  const parts: string[] = [];
  let frames = 0;
  const sink = (data: string, kind?: FrameKind): void => {
    frames += 1;
    parts.push(frameText(encoder, data, kind));
  };
  const events: StreamEvent[] = [
    { type: 'start', id: 'chatcmpl-bench0123456789abcdef', model: 'meta-llama/Llama-3.1-8B-Instruct' },
  ];
  for (const event of events) encoder.event(event, sink);
  const withIds = SENDS_TOKEN_IDS.has(dialect);
  for (const { text, tokenIds } of pieces)
    encoder.event(withIds ? { type: 'text', text, tokenIds } : { type: 'text', text }, sink);
  encoder.flush?.(sink);
  encoder.event({ type: 'finish', reason: 'stop', raw: 'stop' }, sink);
  encoder.event({ type: 'usage', usage: { inputTokens: 24, outputTokens: pieces.length } }, sink);
  encoder.end(sink);
  return {
    dialect,
    bytes: Buffer.from(parts.join(''), 'utf8'),
    expectedText: pieces.map((piece) => piece.text).join(''),
    contentEvents: pieces.length,
    frames,
  };
}
