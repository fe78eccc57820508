import type { DialectId } from '../dialects/dialect.ts';
import {
  type ChatRequest,
  renderPrompt,
  requestMessages,
  type ToolDefinition,
} from '../events/chat-request.ts';
import type { FinishEvent } from '../events/stream-event.ts';
import { languageOf } from './corpus.ts';
import { type CorpusUnit, corpusUnits, tokenizeToBytes } from './corpus-units.ts';
import type { Faults } from './faults.ts';
import { mulberry32, type Rng, randomHexFrom, randomInt } from './prng.ts';
import { type EndKind, simFinish } from './sim-finish.ts';
import type { SimTokenizer } from './tokenizer.ts';
import { toolArguments } from './tool-arguments.ts';

/** One output token and what it releases. */
export interface PlannedToken {
  readonly channel: 'reasoning' | 'text' | 'tool';
  /**
   * The text this token releases: '' when it ends inside a UTF-8 character (the character goes out
   * with the token that completes it) or is held back before a stop string. For `tool`, a piece of
   * the arguments JSON; the first tool token stands for the call's name and releases ''.
   */
  readonly text: string;
  /** The token's bytes in the tokenizer's vocabulary; absent for text a fault puts in the answer. */
  readonly bytes?: Uint8Array | undefined;
}

export interface PlannedToolCall {
  readonly index: number;
  readonly id: string;
  readonly name: string;
  readonly arguments: string;
  readonly input: unknown;
  /** False when the output cap cut the arguments short: no complete `tool-call` event then. */
  readonly complete: boolean;
}

/** A whole answer, decided before the first token is paced out. Deterministic for its inputs. */
export interface GenerationPlan {
  readonly inputTokens: number;
  readonly tokens: readonly PlannedToken[];
  readonly reasoningTokens: number;
  readonly toolCall?: PlannedToolCall | undefined;
  readonly finish: FinishEvent;
}

export interface PlanInput {
  tokenizer: SimTokenizer;
  request: ChatRequest;
  /** Already mixes the sim's seed, the request's seed and the prompt. */
  seed: number;
  maxTokens: number;
  faults: Faults;
  dialect: DialectId;
  flavor: string;
}

const MAX_ANSWER_TOKENS = 400;

export function planGeneration(input: PlanInput): GenerationPlan {
  return capped(withInputTokens(draftPlan(input), input), input);
}

/**
 * The rest of an answer after a prefill: `input.request` is the request without its trailing assistant
 * turn (its seed too), `prefill` that turn's text. When the prefill is the text of the answer's first k
 * tokens (a text answer: no reasoning, no tool call), the plan is the answer's tokens from k on, with its
 * finish, the output cap counting only them, and the prompt counted with the prefill in it, as
 * llama-server continues a prefilled assistant turn. `undefined` when the prefill is not such a prefix.
 */
export function planContinuation(input: PlanInput, prefill: string): GenerationPlan | undefined {
  const draft = draftPlan(input);
  if (draft.toolCall !== undefined) return undefined;
  const k = prefixTokens(draft.tokens, prefill);
  if (k === undefined) return undefined;
  draft.tokens = draft.tokens.slice(k);
  // Counted only for a match: a prompt searched for a continuation is tokenized once, not per try.
  withInputTokens(draft, input);
  draft.inputTokens += input.tokenizer.encode(prefill).length;
  return capped(draft, input);
}

/**
 * The rest of an answer whose first tokens are `ids` (token-exact continuation): the plan's tokens after
 * them, when the answer's first `ids.length` token ids are `ids` (a text answer only). `inputTokens`
 * replaces the prompt's count (the ids given, as a server counts a token prompt).
 */
export function planTokenContinuation(
  input: PlanInput,
  ids: readonly number[],
  inputTokens: number,
): GenerationPlan | undefined {
  const draft = draftPlan(input);
  if (draft.toolCall !== undefined || ids.length > draft.tokens.length) return undefined;
  for (let i = 0; i < ids.length; i++) {
    const token = draft.tokens[i] as PlannedToken;
    if (token.channel !== 'text' || token.bytes === undefined) return undefined;
    if (input.tokenizer.idOf(token.bytes) !== ids[i]) return undefined;
  }
  draft.tokens = draft.tokens.slice(ids.length);
  draft.inputTokens = inputTokens;
  return capped(draft, input);
}

/** The smallest k whose first k tokens (all text) release exactly `prefill`; undefined if none. */
function prefixTokens(tokens: readonly PlannedToken[], prefill: string): number | undefined {
  let text = '';
  for (let k = 0; ; k++) {
    if (text.length === prefill.length) return text === prefill ? k : undefined;
    const token = tokens[k];
    if (token === undefined || token.channel !== 'text') return undefined;
    text += token.text;
    if (text.length > prefill.length || !prefill.startsWith(text)) return undefined;
  }
}

/** The draft with its prompt's token count (tokenizing the prompt is the plan's costly part). */
function withInputTokens(draft: DraftPlan, input: PlanInput): DraftPlan {
  draft.inputTokens = promptTokens(input.tokenizer, input.request);
  return draft;
}

/** An answer before the output cap, for a plan or a continuation to cut. */
interface DraftPlan {
  inputTokens: number;
  tokens: PlannedToken[];
  toolCall: PlannedToolCall | undefined;
  end: EndKind;
  stopSequence: string | undefined;
}

/** The output cap applied to a draft: `length` when it cuts. */
function capped(draft: DraftPlan, input: PlanInput): GenerationPlan {
  let { tokens, end, stopSequence, toolCall } = draft;
  if (tokens.length > input.maxTokens) {
    tokens = tokens.slice(0, input.maxTokens);
    end = 'length';
    stopSequence = undefined;
    if (toolCall !== undefined) toolCall = { ...toolCall, complete: false };
  }
  return {
    inputTokens: draft.inputTokens,
    tokens,
    reasoningTokens: tokens.filter((token) => token.channel === 'reasoning').length,
    toolCall,
    finish: simFinish(end, input.dialect, input.flavor, stopSequence),
  };
}

function draftPlan(input: PlanInput): DraftPlan {
  const { tokenizer, request, faults } = input;
  const rng = mulberry32(input.seed);
  const units = corpusUnits(
    tokenizer,
    faults.multilingual === true ? 'multilingual' : languageOf(lastUserText(request)),
  );

  const reasoning: PlannedToken[] = wantsReasoning(request.reasoning)
    ? planned('reasoning', answerBytes(units.reasoning, rng, 16, 40))
    : [];

  let body: PlannedToken[];
  let end: EndKind;
  let stopSequence: string | undefined;
  let toolCall: PlannedToolCall | undefined;
  const tool = chosenTool(request);
  if (tool !== undefined) {
    const args = toolArguments(tool.parameters, rng);
    const json = JSON.stringify(args);
    toolCall = {
      index: 0,
      id: `call_${randomHexFrom(rng, 24)}`,
      name: tool.name,
      arguments: json,
      input: args,
      complete: true,
    };
    body = [{ channel: 'tool', text: '' }, ...planned('tool', tokenizeToBytes(tokenizer, json))];
    end = 'tool-calls';
  } else {
    body = planned('text', answerBytes(units.answer, rng, 24, 120));
    end = 'eos';
    const texts = body.map((token) => token.text);
    const stops = (request.stop ?? []).filter((stop) => stop !== '');
    if (stops.length > 0 && faults.ignoreStop !== true) {
      const cut = cutAtStop(texts, stops);
      if (cut !== undefined) {
        // The token that completes the stop string is the last one, its text cut before the stop.
        body = cut.texts.map((text, i) => ({ channel: 'text', text, bytes: body[i]?.bytes }));
        stopSequence = cut.stop;
        end = 'stop-sequence';
      }
    } else if (stops.length > 0 && !stops.some((stop) => texts.join('').includes(stop))) {
      // The ignore-stop fault: make sure a stop string shows up in the text the server should have cut.
      body.splice(Math.floor(body.length / 2), 0, { channel: 'text', text: stops[0] as string });
    }
    if (end === 'eos' && faults.controlTokens !== undefined)
      body.push({ channel: 'text', text: faults.controlTokens });
  }

  return { inputTokens: 0, tokens: [...reasoning, ...body], toolCall, end, stopSequence };
}

/** Tokens a chat template adds around each message (`<|start_header_id|>role<|end_header_id|>\n\n … <|eot_id|>`). */
const TEMPLATE_TOKENS_PER_MESSAGE = 5;
/** The beginning-of-sequence token every prompt starts with. */
const BOS_TOKENS = 1;
/** The open assistant turn a chat template ends with. */
const TEMPLATE_TOKENS_ASSISTANT = 4;

/**
 * The prompt's size as a server counts it: a beginning-of-sequence token, and for chat turns the chat
 * template's tokens around each message and the open assistant turn (a Llama-3-style template: "hello"
 * is 11 tokens, which is what llama-server b10108 reports for it; see
 * /work/shared/real-captures/llamacpp-b10108/c02). Tools are rendered as their JSON, as templates do.
 */
export function promptTokens(tokenizer: SimTokenizer, request: ChatRequest): number {
  let count = BOS_TOKENS;
  const messages = request.messages;
  if (messages !== undefined && messages.length > 0) {
    for (const message of messages) {
      count += TEMPLATE_TOKENS_PER_MESSAGE + tokenizer.encode(message.content).length;
      for (const call of message.toolCalls ?? [])
        count += tokenizer.encode(call.name + call.arguments).length;
    }
    count += TEMPLATE_TOKENS_ASSISTANT;
  } else {
    count += tokenizer.encode(renderPrompt(request)).length;
  }
  if (request.tools !== undefined && request.tools.length > 0) {
    count += tokenizer.encode(JSON.stringify(request.tools)).length;
  }
  return count;
}

/** What the answer's language follows: the last user turn (or the raw prompt). */
function lastUserText(request: ChatRequest): string {
  const messages = request.messages;
  if (messages === undefined || messages.length === 0) return request.prompt ?? '';
  for (let i = messages.length - 1; i >= 0; i--)
    if (messages[i]!.role === 'user') return messages[i]!.content;
  return messages.at(-1)?.content ?? '';
}

function wantsReasoning(value: boolean | string | undefined): boolean {
  if (typeof value === 'string') return !['', 'none', 'false', 'off'].includes(value.toLowerCase());
  return value === true;
}

/** The tool to call: none when tools are not offered, `tool_choice` is `none`, or a tool result came last. */
function chosenTool(request: ChatRequest): ToolDefinition | undefined {
  const tools = request.tools;
  if (tools === undefined || tools.length === 0 || request.toolChoice === 'none') return undefined;
  if (requestMessages(request).at(-1)?.role === 'tool') return undefined;
  const choice = request.toolChoice;
  const named = choice !== undefined && choice !== 'auto' && choice !== 'required';
  return (named ? tools.find((tool) => tool.name === choice) : undefined) ?? tools[0];
}

/** Sentences from a seeded starting point until at least `min..max` tokens, ending on a sentence. */
function answerBytes(units: readonly CorpusUnit[], rng: Rng, min: number, max: number): Uint8Array[] {
  let index = randomInt(rng, 0, units.length - 1);
  const target = randomInt(rng, min, max);
  const out: Uint8Array[] = [];
  for (;;) {
    const unit = units[index % units.length] as CorpusUnit;
    out.push(...unit.tokens);
    if (out.length >= target || out.length >= MAX_ANSWER_TOKENS) return out;
    out.push(...unit.after);
    index += 1;
  }
}

/** Tokens of one channel, each with its bytes and the text it releases. */
function planned(channel: PlannedToken['channel'], tokens: readonly Uint8Array[]): PlannedToken[] {
  return pieces(tokens).map((text, i) => ({ channel, text, bytes: tokens[i] }));
}

/**
 * The text each token releases. A token that ends inside a UTF-8 character releases what was complete
 * before it; the held bytes go out with the token that completes the character. Bytes still held at
 * the end (never the case for whole sentences) are dropped, never sent broken.
 */
function pieces(tokens: readonly Uint8Array[]): string[] {
  const decoder = new TextDecoder('utf-8', { ignoreBOM: true });
  return tokens.map((bytes) => decoder.decode(bytes, { stream: true }));
}

/** Ends the text before the earliest stop string; the token that completes it is the last one. */
function cutAtStop(
  texts: readonly string[],
  stops: readonly string[],
): { texts: string[]; stop: string } | undefined {
  const full = texts.join('');
  let at = -1;
  let stop = '';
  for (const candidate of stops) {
    const index = full.indexOf(candidate);
    if (index !== -1 && (at === -1 || index < at)) {
      at = index;
      stop = candidate;
    }
  }
  if (at === -1) return undefined;
  const end = at + stop.length;
  const out: string[] = [];
  let offset = 0;
  for (const text of texts) {
    const next = offset + text.length;
    out.push(full.slice(Math.min(offset, at), Math.min(next, at)));
    offset = next;
    if (offset >= end) break;
  }
  return { texts: out, stop };
}
