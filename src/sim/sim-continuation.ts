import type { ChatRequest } from '../events/chat-request.ts';
import type { CorpusLanguage } from './corpus.ts';
import { corpusUnits } from './corpus-units.ts';
import {
  type GenerationPlan,
  type PlanInput,
  planContinuation,
  planGeneration,
  planTokenContinuation,
} from './generate.ts';
import type { SimTokenizer } from './tokenizer.ts';

/**
 * How a request may continue an earlier answer of the simulator, whose answer is a function of the
 * prompt and the seed: an assistant prefill (the request's last turn is the assistant's), or a
 * llama.cpp `/completion` prompt of token ids (a prompt's ids followed by ids the simulator generated).
 */
export type SimContinuation =
  | {
      readonly kind: 'prefill';
      /** The request without its trailing assistant turn: the answer continued is this one's. */
      readonly request: ChatRequest;
      readonly prefill: string;
      readonly seed: number;
    }
  | {
      /** A bare text prompt that may end with the first part of the answer to a shorter prompt. */
      readonly kind: 'text';
      readonly seedOf: (request: ChatRequest) => number;
    }
  | {
      readonly kind: 'tokens';
      readonly ids: readonly number[];
      /** Each id's bytes, in order. */
      readonly bytes: readonly Uint8Array[];
      readonly seedOf: (request: ChatRequest) => number;
    };

/** The most generated tokens a token prompt is searched for (answers are at most ~420 tokens). */
const MAX_CONTINUED_TOKENS = 1024;

/**
 * The request without a trailing assistant turn, and that turn's text; undefined when the last turn
 * is not a plain assistant text turn (a turn with tool calls is not a prefill).
 */
export function prefillOf(chat: ChatRequest): { request: ChatRequest; prefill: string } | undefined {
  const messages = chat.messages;
  const last = messages?.at(-1);
  if (messages === undefined || last === undefined || last.role !== 'assistant') return undefined;
  if (last.toolCalls !== undefined && last.toolCalls.length > 0) return undefined;
  return {
    request: Object.assign({}, chat, { messages: messages.slice(0, -1) }),
    prefill: last.content,
  };
}

/**
 * A llama.cpp `/completion` prompt sent as token ids (it travels in `extra.prompt`): ids alone, or ids
 * mixed with strings (llama.cpp's mixed prompt, `["text", 15043, 3186]`: each string tokenized in place).
 * An array of strings only is several prompts, not this.
 */
export function tokenPromptOf(chat: ChatRequest): (number | string)[] | undefined {
  const prompt = chat.extra?.prompt;
  if (!Array.isArray(prompt) || prompt.length === 0) return undefined;
  let ids = 0;
  for (const part of prompt) {
    if (typeof part === 'string') continue;
    if (typeof part !== 'number' || !Number.isSafeInteger(part) || part < 0) return undefined;
    ids += 1;
  }
  return ids === 0 ? undefined : (prompt as (number | string)[]);
}

/** A mixed prompt's ids: its strings tokenized in place. */
export function idsOfMixedPrompt(tokenizer: SimTokenizer, prompt: readonly (number | string)[]): number[] {
  const ids: number[] = [];
  for (const part of prompt) {
    if (typeof part === 'number') ids.push(part);
    else for (const id of tokenizer.encode(part)) ids.push(id);
  }
  return ids;
}

/**
 * The plan of one answer: the continuation's when it continues an earlier answer, else the plan of
 * `input` (the request as sent; a token prompt decoded to its text).
 */
export function planWithContinuation(
  input: PlanInput,
  continuation: SimContinuation | undefined,
  seedFor: (seed: number) => number,
): GenerationPlan {
  if (continuation?.kind === 'prefill') {
    const continued = planContinuation(
      Object.assign({}, input, { request: continuation.request, seed: seedFor(continuation.seed) }),
      continuation.prefill,
    );
    if (continued !== undefined) return continued;
  } else if (continuation?.kind === 'text') {
    const continued = textContinuation(input, continuation, seedFor);
    if (continued !== undefined) return continued;
  } else if (continuation?.kind === 'tokens') {
    const continued = tokenContinuation(input, continuation, seedFor);
    if (continued !== undefined) return continued;
  }
  return planGeneration(input);
}

/**
 * Token-exact continuation: the ids are split into a prompt P (its ids) and k >= 1 generated ids; the
 * first split whose P, answered as a string prompt, begins with those k ids wins (the longest
 * continuation first: a match of k >= 1 ids is no coincidence). Splits inside a UTF-8 character are
 * skipped (no string prompt tokenizes so).
 */
function tokenContinuation(
  input: PlanInput,
  continuation: Extract<SimContinuation, { kind: 'tokens' }>,
  seedFor: (seed: number) => number,
): GenerationPlan | undefined {
  const { ids, bytes } = continuation;
  const offsets = [0];
  for (const piece of bytes) offsets.push((offsets.at(-1) as number) + piece.length);
  const all = new Uint8Array(offsets.at(-1) as number);
  bytes.forEach((piece, i) => {
    all.set(piece, offsets[i] as number);
  });
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  for (let j = Math.max(0, ids.length - MAX_CONTINUED_TOKENS); j < ids.length; j++) {
    let prompt: string;
    try {
      prompt = decoder.decode(all.subarray(0, offsets[j]));
    } catch {
      continue;
    }
    const request = Object.assign({}, input.request, { prompt });
    const seed = seedFor(continuation.seedOf(request));
    const continued = planTokenContinuation(
      Object.assign({}, input, { request, seed }),
      ids.slice(j),
      1 + ids.length,
    );
    if (continued !== undefined) return continued;
  }
  return undefined;
}

/** The bytes of each id; throws a RangeError naming an id the tokenizer does not have. */
export function tokenBytesOf(tokenizer: SimTokenizer, ids: readonly number[]): Uint8Array[] {
  return ids.map((id) => {
    try {
      return tokenizer.tokenBytes(id);
    } catch {
      throw new RangeError(`invalid token id ${id} in prompt`);
    }
  });
}

/** How far back from a text prompt's end its continued part may start (an answer is at most ~420 tokens). */
const MAX_CONTINUED_CHARS = 8192;
/**
 * The most places a text prompt is tried at (each costs a plan): a prompt full of the corpus's sentence
 * starts is answered as itself beyond them. Tried from the end (the shortest continuation first): only
 * the sentence starts inside the answer so far come before the place it starts at, so a prompt that holds
 * earlier answers (a conversation rendered as text) still finds it.
 */
const MAX_TEXT_TRIES = 16;

/**
 * A bare text prompt that continues an earlier answer: the prompt is a prompt P followed by the first
 * part of P's answer (what a server that died wrote), so it goes on with the rest. Only the places where a
 * sentence of the corpus starts are tried (an answer starts with one), from the end: a prompt that
 * continues nothing costs a scan of its last characters and at most MAX_TEXT_TRIES plans.
 */
function textContinuation(
  input: PlanInput,
  continuation: Extract<SimContinuation, { kind: 'text' }>,
  seedFor: (seed: number) => number,
): GenerationPlan | undefined {
  const whole = input.request.prompt;
  if (whole === undefined || whole === '') return undefined;
  const starts = answerStarts(input.tokenizer);
  let tries = 0;
  for (let j = whole.length - 1; j >= Math.max(1, whole.length - MAX_CONTINUED_CHARS); j--) {
    const candidates = starts.get(whole[j] as string);
    if (candidates === undefined) continue;
    const rest = whole.slice(j);
    if (!candidates.some((start) => start.startsWith(rest) || rest.startsWith(start))) continue;
    if (++tries > MAX_TEXT_TRIES) return undefined;
    const request = Object.assign({}, input.request, { prompt: whole.slice(0, j) });
    const seed = seedFor(continuation.seedOf(request));
    const continued = planContinuation(Object.assign({}, input, { request, seed }), rest);
    if (continued !== undefined) return continued;
  }
  return undefined;
}

const ANSWER_START_CHARS = 12;
/** Every language an answer is written in (corpus.ts `languageOf`), Markdown's blocks in their order. */
const ANSWER_LANGUAGES: readonly CorpusLanguage[] = [
  'multilingual',
  'en',
  'is',
  'ja',
  'ru',
  'ar',
  'hi',
  'md-list',
  'md-code',
  'md-table',
  'md-list-code',
  'md-list-table',
  'md-code-table',
  'md-list-code-table',
];
const answerStartsOf = new WeakMap<SimTokenizer, Map<string, string[]>>();

/** The first characters of every sentence an answer may start with, by their first character. */
function answerStarts(tokenizer: SimTokenizer): Map<string, string[]> {
  let starts = answerStartsOf.get(tokenizer);
  if (starts !== undefined) return starts;
  starts = new Map();
  for (const language of ANSWER_LANGUAGES)
    for (const unit of corpusUnits(tokenizer, language).answer) {
      const start = unit.text.slice(0, ANSWER_START_CHARS);
      const first = start[0];
      if (first === undefined) continue;
      const list = starts.get(first) ?? [];
      if (!list.includes(start)) list.push(start);
      starts.set(first, list);
    }
  answerStartsOf.set(tokenizer, starts);
  return starts;
}
