import type { DialectId } from '../dialects/dialect.ts';
import type { ChatMessage, ChatRequest } from '../events/chat-request.ts';
import { seededRandom } from './arrivals.ts';

/** A prompt: plain text (sent as one user turn) or whole chat turns. */
export type Prompt = string | ChatMessage[];

/** A length in tokens: fixed (min = max) or drawn uniformly per request. */
export interface TokenRange {
  min: number;
  max: number;
}

/** The requests of a run: the i-th send gets `request(i)`. Pure, so any index can be rebuilt. */
export interface Workload {
  request(index: number): ChatRequest;
  /** One line saying what is sent (for the report). */
  readonly description: string;
  /** Things the user should know (an option the dialect cannot honour). */
  readonly warnings: readonly string[];
}

/** One request of a dataset: its prompt, and the output length its recorded answer had (if any). */
export interface DatasetEntry {
  prompt: Prompt;
  /** The recorded answer's length in tokens (estimated): the request's output cap, as vLLM bench does. */
  outputTokens?: number | undefined;
}

export interface WorkloadOptions {
  dialect: DialectId;
  model?: string | undefined;
  /** Prompts to cycle through in order; default the built-in set. */
  prompts?: readonly Prompt[] | undefined;
  /**
   * A dataset (`parseDataset`) to cycle through in order, instead of `prompts`: each entry's recorded
   * answer length is its output cap unless `outputTokens` is given.
   */
  dataset?: readonly DatasetEntry[] | undefined;
  /** Synthetic prompts of about this many tokens, different for every request (instead of `prompts`). */
  inputTokens?: TokenRange | undefined;
  /** The output cap (max tokens) per request. */
  outputTokens?: TokenRange | undefined;
  /** Ask the server to keep generating past end-of-sequence, up to the output cap, where it can. */
  ignoreEos?: boolean | undefined;
  seed?: number | undefined;
}

/** The built-in prompts: short, varied, answerable at any length. */
export const BUILT_IN_PROMPTS: readonly string[] = [
  'Explain how a hash table handles collisions.',
  'Write a short story about a lighthouse keeper who finds a message in a bottle.',
  'What are the trade-offs between TCP and UDP for a multiplayer game?',
  'Summarize the causes of the French Revolution in a few paragraphs.',
  'Describe how to make bread from scratch, step by step.',
  'Why is the sky blue? Answer for a curious ten-year-old.',
  'Compare three approaches to caching in a web application.',
  'Write a polite email asking a colleague to review a pull request.',
  'What happens, in order, when you type a URL into a browser and press enter?',
  'List ten ideas for a weekend project with a Raspberry Pi, with one sentence each.',
  'Explain the difference between concurrency and parallelism with an example.',
  'Translate into French and explain the grammar: "We would have left earlier if it had not rained."',
];

/**
 * Common English words that are one token each, with their leading space, in the GPT-4 (cl100k) and
 * GPT-4o (o200k) vocabularies, and in practice in the Llama 3, Qwen and Mistral ones: N of them make a
 * prompt of about N tokens (plus the server's chat template) without loading any tokenizer.
 */
const WORDS: readonly string[] =
  `time year people way day man thing woman life child world school state family
student group country problem hand part place case week company system program question work government
number night point home water room mother area money story fact month lot right study book eye job word
business issue side kind head house service friend father power hour game line end member law car city
community name president team minute idea kid body information back parent face others level office door
health person art war history party result change morning reason research girl guy moment air teacher
force education foot boy age policy music market sense nation plan college interest death experience
effect class control care field development role effort rate heart drug show leader light voice`
    .split(/\s+/)
    .filter((word) => word !== '');

/**
 * A synthetic prompt of `tokens` words, seeded by the request index: every request differs from its
 * first word, so a server's prefix cache cannot answer for it.
 */
export function syntheticPrompt(tokens: number, seed: number, index: number): string {
  const random = seededRandom(mix(seed, index));
  const parts = new Array<string>(tokens);
  for (let i = 0; i < tokens; i++) parts[i] = WORDS[Math.floor(random() * WORDS.length)] as string;
  return parts.join(' ');
}

/** `128` or `100-200` (tokens). Throws a RangeError on anything else. */
export function parseTokenRange(text: string, what = 'a token count'): TokenRange {
  const match = /^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$/.exec(text);
  if (match === null) throw new RangeError(`${what} must be N or MIN-MAX, got ${JSON.stringify(text)}`);
  const min = Number(match[1]);
  const max = match[2] === undefined ? min : Number(match[2]);
  if (min < 1 || max < min) throw new RangeError(`${what} must be at least 1 and MIN <= MAX, got ${text}`);
  return { min, max };
}

/**
 * Prompts from a file's text: one per line, or JSON Lines where each line is a JSON string, an
 * object with `prompt` / `text` / `content` (a prompt) or `messages` (chat turns), or an array of
 * chat turns. Blank lines are skipped. Throws a RangeError naming the bad line.
 */
export function parsePrompts(text: string): Prompt[] {
  const prompts: Prompt[] = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = (lines[i] as string).trim();
    if (line === '') continue;
    const first = line[0];
    if (first !== '{' && first !== '[' && first !== '"') {
      prompts.push(line);
      continue;
    }
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      throw new RangeError(`line ${i + 1}: not valid JSON (${(error as Error).message})`);
    }
    const prompt = promptOf(value);
    if (prompt === undefined) {
      throw new RangeError(
        `line ${i + 1}: want a JSON string, {"prompt": "..."} or {"messages": [{"role": "user", "content": "..."}]}`,
      );
    }
    prompts.push(prompt);
  }
  if (prompts.length === 0) throw new RangeError('the prompts file holds no prompt');
  return prompts;
}

function promptOf(value: unknown): Prompt | undefined {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return messagesOf(value);
  if (typeof value !== 'object' || value === null) return undefined;
  const record = value as Record<string, unknown>;
  if (Array.isArray(record.messages)) return messagesOf(record.messages);
  for (const key of ['prompt', 'text', 'content']) {
    if (typeof record[key] === 'string') return record[key];
  }
  return undefined;
}

const ROLES = new Set(['system', 'user', 'assistant', 'tool']);

function messagesOf(list: unknown[]): ChatMessage[] | undefined {
  const out: ChatMessage[] = [];
  for (const item of list) {
    if (typeof item !== 'object' || item === null) return undefined;
    const { role, content } = item as { role?: unknown; content?: unknown };
    if (typeof role !== 'string' || !ROLES.has(role) || typeof content !== 'string') return undefined;
    out.push({ role: role as ChatMessage['role'], content });
  }
  return out.length === 0 ? undefined : out;
}

/** Tokens in a text, without a tokenizer: about 4 characters a token in English (OpenAI's rule of thumb). */
export function estimateTokens(text: string): number {
  return Math.max(1, Math.round(text.length / 4));
}

const SHAREGPT_ROLES: Record<string, ChatMessage['role']> = {
  human: 'user',
  user: 'user',
  gpt: 'assistant',
  assistant: 'assistant',
  chatgpt: 'assistant',
  bard: 'assistant',
  bing: 'assistant',
  model: 'assistant',
  system: 'system',
};

/**
 * One ShareGPT record (`{"conversations": [{"from": "human", "value": "..."}, {"from": "gpt", ...}]}`)
 * as vLLM bench samples it: the first user turn is the prompt (after a leading system turn, if any),
 * and the assistant reply that follows gives the output length. Undefined when there is no user turn.
 */
function shareGptEntry(turns: unknown[]): DatasetEntry | undefined {
  const messages: ChatMessage[] = [];
  for (const turn of turns) {
    if (typeof turn !== 'object' || turn === null) return undefined;
    const { from, value } = turn as { from?: unknown; value?: unknown };
    const role = typeof from === 'string' ? SHAREGPT_ROLES[from.toLowerCase()] : undefined;
    if (role === undefined || typeof value !== 'string') return undefined;
    if (messages.length > 0 && messages.at(-1)?.role === 'user') {
      // The reply to the first user turn: its length is the output cap.
      if (role !== 'assistant') break;
      return { prompt: messages, outputTokens: estimateTokens(value) };
    }
    if (role === 'assistant') return undefined;
    messages.push({ role, content: value });
  }
  return messages.some((m) => m.role === 'user') ? { prompt: messages } : undefined;
}

function datasetEntryOf(value: unknown): DatasetEntry | undefined {
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const record = value as Record<string, unknown>;
    const turns = record.conversations ?? record.conversation;
    if (Array.isArray(turns)) return shareGptEntry(turns);
  }
  const prompt = promptOf(value);
  if (prompt === undefined) return undefined;
  const record = value as Record<string, unknown> | null;
  const entry: DatasetEntry = { prompt };
  // GuideLLM-style columns for the answer length, when the record gives one.
  for (const key of ['output_tokens', 'output_len', 'max_tokens']) {
    const n = typeof record === 'object' && record !== null ? record[key] : undefined;
    if (typeof n === 'number' && Number.isInteger(n) && n > 0) {
      entry.outputTokens = n;
      break;
    }
  }
  return entry;
}

/**
 * A dataset file, as vLLM bench and GuideLLM take them: a JSON array (ShareGPT's own files are one) or
 * JSON Lines, of ShareGPT conversations (`{"conversations": [{"from": "human", "value": ...}, ...]}`),
 * prompts (`{"prompt": ...}`, `{"text": ...}`, a JSON string, `{"messages": [...]}`), or plain lines of
 * text. Records it cannot use (no user turn, a reply first) are skipped and counted; a file with
 * nothing usable is a RangeError.
 */
export function parseDataset(text: string): { entries: DatasetEntry[]; skipped: number } {
  const trimmed = text.trim();
  let records: unknown[] | undefined;
  if (trimmed.startsWith('[')) {
    try {
      const value = JSON.parse(trimmed) as unknown;
      if (Array.isArray(value)) records = value;
    } catch {
      // Not one JSON array: JSON Lines whose first line is an array of turns.
    }
  }
  const entries: DatasetEntry[] = [];
  let skipped = 0;
  if (records === undefined) {
    records = [];
    const lines = text.split(/\r?\n/);
    for (let i = 0; i < lines.length; i++) {
      const line = (lines[i] as string).trim();
      if (line === '') continue;
      const first = line[0];
      if (first !== '{' && first !== '[' && first !== '"') {
        records.push(line);
        continue;
      }
      try {
        records.push(JSON.parse(line) as unknown);
      } catch (error) {
        throw new RangeError(`line ${i + 1}: not valid JSON (${(error as Error).message})`);
      }
    }
  }
  for (const record of records) {
    const entry = datasetEntryOf(record);
    if (entry === undefined) skipped += 1;
    else entries.push(entry);
  }
  if (entries.length === 0)
    throw new RangeError(
      `the dataset holds no usable record${skipped > 0 ? ` (${skipped} skipped)` : ''}: want ShareGPT {"conversations": [{"from": "human", "value": "..."}, ...]}, {"prompt": "..."} or a JSON string per record`,
    );
  return { entries, skipped };
}

/** Dialects whose servers take `ignore_eos` (vLLM, SGLang and llama-server on every route they serve). */
const IGNORE_EOS_DIALECTS: ReadonlySet<DialectId> = new Set([
  'openai-chat',
  'openai-completions',
  'llamacpp',
]);

/** The requests of a run, built lazily per index (no per-run array, so a duration run has no cap). */
export function createWorkload(options: WorkloadOptions): Workload {
  const seed = options.seed ?? 1;
  const warnings: string[] = [];
  const output = options.outputTokens;
  const input = options.inputTokens;
  const dataset = options.dataset;
  const prompts = dataset?.map((entry) => entry.prompt) ?? options.prompts ?? BUILT_IN_PROMPTS;
  if (prompts.length === 0) throw new RangeError('no prompts');
  let extra: Record<string, unknown> | undefined;
  if (options.ignoreEos === true) {
    if (IGNORE_EOS_DIALECTS.has(options.dialect)) extra = { ignore_eos: true };
    else
      warnings.push(
        `${options.dialect} has no way to ignore end-of-sequence (TGI and Ollama offer none): answers may stop before the output cap`,
      );
  }
  const pick = (range: TokenRange, index: number, salt: number): number =>
    range.min === range.max
      ? range.min
      : range.min + Math.floor(seededRandom(mix(seed + salt, index))() * (range.max - range.min + 1));

  const describeRange = (range: TokenRange): string =>
    range.min === range.max ? `${range.min}` : `${range.min}-${range.max}`;
  const source =
    input !== undefined
      ? `synthetic prompts of ~${describeRange(input)} tokens`
      : dataset !== undefined
        ? `${dataset.length} record${dataset.length === 1 ? '' : 's'} from the dataset`
        : options.prompts !== undefined
          ? `${prompts.length} prompt${prompts.length === 1 ? '' : 's'} from the file`
          : `${prompts.length} built-in prompts`;
  const recordedCaps = output === undefined && dataset?.some((entry) => entry.outputTokens !== undefined);
  const cap =
    output !== undefined
      ? `max ${describeRange(output)} tokens`
      : recordedCaps === true
        ? "each record's recorded answer length as the output cap (~4 characters a token)"
        : 'the server default output cap';
  const description = `${source}, ${cap}${extra !== undefined ? ', ignore_eos' : ''}`;

  return {
    description,
    warnings,
    request(index: number): ChatRequest {
      const request: ChatRequest = { includeUsage: true };
      if (options.model !== undefined) request.model = options.model;
      if (input !== undefined) {
        request.prompt = syntheticPrompt(pick(input, index, 1), seed, index);
      } else {
        const prompt = prompts[index % prompts.length] as Prompt;
        if (typeof prompt === 'string') request.prompt = prompt;
        else request.messages = prompt;
      }
      if (output !== undefined) request.maxTokens = pick(output, index, 2);
      else if (dataset !== undefined) {
        const recorded = dataset[index % dataset.length]?.outputTokens;
        if (recorded !== undefined) request.maxTokens = recorded;
      }
      if (extra !== undefined) request.extra = extra;
      return request;
    },
  };
}

/** Mixes a seed and an index into one 32-bit seed (so request i is the same whatever ran before it). */
function mix(seed: number, index: number): number {
  let h = (seed ^ Math.imul(index + 1, 0x9e3779b1)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}
