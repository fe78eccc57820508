/**
 * The normalized request: what a client asks for, independent of the dialect that carries it. Each
 * dialect maps it to and from its own body; fields a dialect does not know travel in `extra`.
 */
export interface ChatRequest {
  model?: string | undefined;
  /** Chat turns. Completion-style dialects receive them rendered as a prompt. */
  messages?: ChatMessage[] | undefined;
  /** A raw prompt (completion-style requests). Chat dialects receive it as one user message. */
  prompt?: string | undefined;
  /** The output cap: `max_tokens`, `max_completion_tokens`, `num_predict`, `n_predict`, `max_new_tokens`. */
  maxTokens?: number | undefined;
  temperature?: number | undefined;
  topP?: number | undefined;
  topK?: number | undefined;
  seed?: number | undefined;
  stop?: string[] | undefined;
  frequencyPenalty?: number | undefined;
  presencePenalty?: number | undefined;
  /**
   * The multiplicative repetition penalty (1 = none): Ollama and llama.cpp `repeat_penalty`, TGI and
   * vLLM `repetition_penalty`. Not OpenAI's `frequency_penalty`, which is additive.
   */
  repetitionPenalty?: number | undefined;
  /** Min-p sampling (llama.cpp, Ollama options, vLLM's extension). */
  minP?: number | undefined;
  /**
   * Log probabilities of the output tokens, with this many alternatives per token (0: the chosen
   * token's only): OpenAI chat `logprobs` + `top_logprobs`, completions `logprobs`, llama.cpp `n_probs`.
   */
  logprobs?: number | undefined;
  /** Choices per prompt (OpenAI `n`; 1 is every server's default). */
  n?: number | undefined;
  /**
   * The prompt is sent as it is, with no chat template (Ollama `raw: true`): what completion-style
   * endpoints always do, and what a chat endpoint cannot do.
   */
  raw?: boolean | undefined;
  /**
   * Ollama's load-only request: `/api/generate` with no (or an empty) prompt, `/api/chat` with no
   * messages. Ollama loads the model and answers one `done: true, done_reason: "load"` line without
   * generating; a server of another dialect would generate from an empty prompt instead.
   */
  loadOnly?: boolean | undefined;
  tools?: ToolDefinition[] | undefined;
  /** `auto`, `none`, `required`, or the name of one function. */
  toolChoice?: string | undefined;
  /** Ask for reasoning text (Ollama `think`, a reasoning effort). */
  reasoning?: boolean | string | undefined;
  /** A token budget for reasoning (Anthropic `thinking.budget_tokens`). */
  reasoningBudgetTokens?: number | undefined;
  /** Ask for usage in the stream (`stream_options.include_usage`). */
  includeUsage?: boolean | undefined;
  /** `stream: false` was asked for explicitly. */
  stream?: boolean | undefined;
  /**
   * Structured output: OpenAI `response_format`, Responses `text.format`, Ollama `format`, llama.cpp
   * `json_schema`, TGI `parameters.grammar` (`json_schema` with its name, schema and strictness).
   */
  responseFormat?: ResponseFormat | undefined;
  /**
   * Responses `store`: false asks that nothing of the answer be kept beyond the stream (a gateway keeps
   * nothing it was told not to, beyond resume when asked); true or absent leaves it to the server.
   */
  store?: boolean | undefined;
  /** Fields of the original body that have no normalized home, passed through to same-dialect upstreams. */
  extra?: Record<string, unknown> | undefined;
  /**
   * Content parts the turns cannot hold (an Anthropic `document`, an OpenAI `input_audio` part…), each
   * named by body path and type: a same-dialect upstream gets them (the body as sent); a translation
   * refuses them, or drops them when allowed, naming them. `hint` marks earlier reasoning sent back for
   * context (Anthropic `thinking` blocks, Responses `reasoning` items, Ollama `thinking`), which no other
   * dialect takes: dropped and named.
   */
  unmapped?: UnmappedContent[] | undefined;
}

/** A content part with no normalized form: `messages[0].content[1] (document)`. */
export interface UnmappedContent {
  name: string;
  hint?: boolean | undefined;
}

/** The shape asked of the answer's text. */
export interface ResponseFormat {
  type: 'text' | 'json_object' | 'json_schema';
  name?: string | undefined;
  /** JSON Schema (`json_schema` only). */
  schema?: unknown;
  strict?: boolean | undefined;
  description?: string | undefined;
}

export type ChatRole = 'system' | 'user' | 'assistant' | 'tool';

export interface ChatMessage {
  role: ChatRole;
  content: string;
  toolCalls?: ChatToolCall[] | undefined;
  toolCallId?: string | undefined;
  name?: string | undefined;
  /**
   * The turn came as OpenAI's `developer` role (its `role` is `system`): an OpenAI-family upstream gets
   * `developer` back, every other dialect a system turn.
   */
  developer?: boolean | undefined;
  /** Images attached to the turn (OpenAI `image_url` parts, Ollama `images`, Anthropic image blocks). */
  images?: ChatImage[] | undefined;
}

/** One image of a turn: inline bytes (base64, with their media type when known) or a URL. */
export interface ChatImage {
  /** `image/png`, `image/jpeg`… (from a data URL, Anthropic's `media_type`, or the bytes' signature). */
  mediaType?: string | undefined;
  /** Base64 bytes. */
  data?: string | undefined;
  /** An http(s) URL (not a data URL: those are split into `mediaType` and `data`). */
  url?: string | undefined;
}

export interface ChatToolCall {
  id: string;
  name: string;
  /** JSON text. */
  arguments: string;
}

export interface ToolDefinition {
  name: string;
  description?: string | undefined;
  /** JSON Schema of the arguments. */
  parameters?: unknown;
}

/**
 * Renders chat turns as one prompt for completion-style upstreams (a plain, documented template:
 * `role: content` lines, then `assistant:`). A single user turn is its own content, so a bare prompt
 * survives chat -> completion -> chat translation unchanged.
 */
export function renderPrompt(request: ChatRequest): string {
  const messages = request.messages;
  if (messages === undefined || messages.length === 0) return request.prompt ?? '';
  if (messages.length === 1 && messages[0]!.role === 'user') return messages[0]!.content;
  const lines = messages.map((message) => `${message.role}: ${message.content}`);
  return `${lines.join('\n')}\nassistant:`;
}

/** The messages of a request, turning a bare prompt into one user turn. */
export function requestMessages(request: ChatRequest): ChatMessage[] {
  if (request.messages !== undefined && request.messages.length > 0) return request.messages;
  return [{ role: 'user', content: request.prompt ?? '' }];
}
