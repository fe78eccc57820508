import type { FinishEvent, StreamEvent } from '../../events/stream-event.ts';
import type { Usage } from '../../events/usage.ts';
import { isRecord, type JsonRecord, numberField } from '../common/json-fields.ts';
import { randomAlphanumeric, randomHex } from '../common/random-id.ts';
import { StreamTotals } from '../common/stream-totals.ts';
import type { DialectEncoder, EncoderOptions, FrameKind, FrameSink, MidStreamError } from '../dialect.ts';

/**
 * Which server's Messages stream to write (wire-formats.md §14.2, §14.5):
 * - `anthropic`: Anthropic's own API as its documentation shows it: `msg_…` ids, `ping` after the first
 *   block starts, each block stopped before the next starts (parallel tool calls whose fragments
 *   interleave: the first streams, the others are held and written whole after it), `stop_sequence` as
 *   a stop reason, and the cumulative usage (input and cache counts too, `output_tokens` always) in
 *   `message_delta`.
 * - `llamacpp`: llama-server b10108 (captures a01, a03–a09): `chatcmpl-…` ids, usage keys in
 *   alphabetical order with `cache_read_input_tokens`, no `input` in a `tool_use` block's start, every
 *   block stopped at the end (in index order, thinking's closing empty `signature_delta` first),
 *   `end_turn` with the matched `stop_sequence`, only `output_tokens` in `message_delta`, and a
 *   mid-stream failure as `event: error` with its own `{"code","message","type"}` and no `message_stop`.
 * - `vllm`: vLLM's converter over its chat stream (`entrypoints/anthropic/serving.py`, pydantic with
 *   `exclude_unset`): no `type`/`role` in the `message_start` message, `content_block`/`delta` before
 *   `index`, no ping, a random hex signature closing each thinking block, `message_delta` with only
 *   `stop_reason` and both token counts (`input_tokens` is the whole prompt), and `data: [DONE]` after
 *   `message_stop` (and after its `internal_error` event).
 */
export type AnthropicMessagesFlavor = 'anthropic' | 'llamacpp' | 'vllm';

export const ANTHROPIC_MESSAGES_FLAVORS: readonly AnthropicMessagesFlavor[] = [
  'anthropic',
  'llamacpp',
  'vllm',
];

type BlockKind = 'thinking' | 'text' | 'tool';

interface HeldCall {
  id: string | undefined;
  name: string | undefined;
  fragments: string[];
  /** The whole arguments once the call is known complete (its `tool-call` event). */
  arguments: string | undefined;
}

interface Block {
  index: number;
  kind: BlockKind;
  /** The tool call's index (tool blocks). */
  call: number;
  /** A signature to write before the block stops (llama-server writes one, empty, at the end). */
  signature: string | undefined;
}

// SSE event names (FrameKind: an `event:` line before the data).
const MESSAGE_START: FrameKind = 'message_start';
const BLOCK_START: FrameKind = 'content_block_start';
const BLOCK_DELTA: FrameKind = 'content_block_delta';
const BLOCK_STOP: FrameKind = 'content_block_stop';
const MESSAGE_DELTA: FrameKind = 'message_delta';
const MESSAGE_STOP: FrameKind = 'message_stop';
const PING: FrameKind = 'ping';
const ERROR: FrameKind = 'error';

const ANTHROPIC_STOP_REASONS = new Set([
  'end_turn',
  'max_tokens',
  'stop_sequence',
  'tool_use',
  'pause_turn',
  'refusal',
  'model_context_window_exceeded',
]);

const ANTHROPIC_ERROR_TYPES = new Set([
  'invalid_request_error',
  'authentication_error',
  'permission_error',
  'not_found_error',
  'request_too_large',
  'rate_limit_error',
  'api_error',
  'overloaded_error',
]);

export class AnthropicMessagesEncoder implements DialectEncoder {
  readonly framing = 'sse' as const;
  readonly sseSpace = true;
  readonly #flavor: AnthropicMessagesFlavor;
  #id: string | undefined;
  #model: string | undefined;
  /** A `start` came; `message_start` waits for the usage that follows it (or the first content). */
  #pendingStart = false;
  #messageStarted = false;
  /** `input_tokens` as `message_start` wrote it, to tell whether `message_delta` must correct it. */
  #startInput = 0;
  #startCached = 0;
  #startCreation: number | undefined;
  #nextIndex = 0;
  /** Open blocks: Anthropic keeps one open at a time; llama-server keeps all open until the end. */
  readonly #open: Block[] = [];
  /** Tool calls that streamed as fragments (their whole `tool-call` event writes nothing more). */
  readonly #streamedTools = new Set<number>();
  /** One block open at a time (not llama-server): the call whose block is open and still fed fragments. */
  #liveCall: number | undefined;
  /**
   * Calls that arrived while another call's block was open (parallel calls whose fragments interleave):
   * held, in arrival order, until the open block closes, then each written as one whole block.
   */
  readonly #held = new Map<number, HeldCall>();
  #pinged = false;
  readonly #totals = new StreamTotals();
  /**
   * Events that carried content: the output count written when the upstream reported none (the same
   * estimate the client's metrics make from content chunks; the gateway marks it estimated).
   */
  #contentEvents = 0;

  constructor(options: EncoderOptions = {}) {
    this.#flavor = (options.flavor ?? 'anthropic') as AnthropicMessagesFlavor;
    this.#id = options.id;
    this.#model = options.model;
  }

  event(event: StreamEvent, sink: FrameSink): void {
    // One answer per message: a second choice (OpenAI `n`) has no place in this dialect.
    if ('choice' in event && event.choice !== undefined && event.choice !== 0) return;
    if (
      event.type === 'text' ||
      (event.type === 'reasoning' && event.text !== '') ||
      (event.type === 'tool-call-delta' && event.argumentsDelta !== '') ||
      (event.type === 'tool-call' &&
        event.arguments !== '' &&
        !this.#streamedTools.has(event.index) &&
        !this.#held.has(event.index))
    )
      this.#contentEvents += 1;
    switch (event.type) {
      case 'start':
        this.#id ??= event.id;
        this.#model ??= event.model;
        if (!this.#messageStarted) this.#pendingStart = true;
        return;
      case 'text':
        this.#ensureStarted(sink, undefined);
        this.#delta(
          this.#block('text', 0, sink),
          `{"type":"text_delta","text":${JSON.stringify(event.text)}}`,
          sink,
        );
        return;
      case 'reasoning': {
        this.#ensureStarted(sink, undefined);
        const block = this.#block('thinking', 0, sink);
        if (event.text !== '') {
          this.#delta(block, `{"type":"thinking_delta","thinking":${JSON.stringify(event.text)}}`, sink);
        }
        if (event.signature !== undefined) {
          // llama-server and vLLM write the signature as the block ends.
          if (this.#flavor === 'anthropic') this.#signature(block, event.signature, sink);
          else block.signature = event.signature;
        }
        return;
      }
      case 'tool-call-delta': {
        this.#ensureStarted(sink, undefined);
        if (this.#flavor !== 'llamacpp' && this.#holdDelta(event.index, event)) return;
        this.#streamedTools.add(event.index);
        const block = this.#toolBlock(event.index, event.id, event.name, sink);
        if (event.argumentsDelta !== '') this.#inputJson(block, event.argumentsDelta, sink);
        return;
      }
      case 'tool-call': {
        if (this.#flavor !== 'llamacpp' && this.#completeCall(event, sink)) return;
        if (this.#streamedTools.has(event.index)) return;
        this.#ensureStarted(sink, undefined);
        this.#streamedTools.add(event.index);
        const block = this.#toolBlock(event.index, event.id, event.name, sink);
        if (event.arguments !== '') this.#inputJson(block, event.arguments, sink);
        return;
      }
      case 'usage':
        this.#totals.keep(event);
        // The usage right after `start` (the upstream's own `message_start`) goes in ours.
        if (this.#pendingStart) this.#ensureStarted(sink, event.usage);
        return;
      case 'finish':
      case 'timings':
        this.#totals.keep(event);
        return;
      case 'error':
        this.error(event, sink);
        return;
    }
  }

  /** After an upstream read: `message_start` goes out even before the first token. */
  flush(sink: FrameSink): void {
    if (this.#pendingStart) this.#ensureStarted(sink, undefined);
  }

  end(sink: FrameSink): void {
    this.#ensureStarted(sink, undefined);
    this.#writeHeld(sink);
    if (this.#flavor === 'llamacpp') {
      const blocks = this.#open.splice(0).sort((a, b) => a.index - b.index);
      for (const block of blocks) this.#stop(block, sink);
    } else {
      this.#closeOpen(sink);
    }
    const finish = this.#totals.finish;
    if (this.#flavor === 'vllm') {
      const usage = this.#totals.usage;
      sink(
        `{"type":"message_delta","delta":{"stop_reason":${JSON.stringify(this.#stopReason(finish))}},"usage":{"input_tokens":${usage?.inputTokens ?? 0},"output_tokens":${this.#outputTokens()}}}`,
        MESSAGE_DELTA,
      );
      sink('{"type":"message_stop"}', MESSAGE_STOP);
      sink('[DONE]');
      return;
    }
    const stopSequence = finish?.stopSequence;
    sink(
      `{"type":"message_delta","delta":{"stop_reason":${JSON.stringify(this.#stopReason(finish))},"stop_sequence":${stopSequence === undefined ? 'null' : JSON.stringify(stopSequence)}},"usage":${JSON.stringify(this.#deltaUsage(this.#totals.usage))}}`,
      MESSAGE_DELTA,
    );
    sink('{"type":"message_stop"}', MESSAGE_STOP);
  }

  error(error: MidStreamError, sink: FrameSink): void {
    // What was held goes out before the failure: lost text is the failure's, not ours.
    if (this.#held.size > 0) this.#writeHeld(sink);
    if (this.#flavor === 'llamacpp') {
      const body = {
        code: error.status ?? 500,
        message: error.message,
        type: error.errorType ?? 'server_error',
      };
      sink(JSON.stringify(body), ERROR);
      return;
    }
    if (this.#flavor === 'vllm') {
      sink(
        JSON.stringify({ type: 'error', error: { type: 'internal_error', message: error.message } }),
        ERROR,
      );
      sink('[DONE]');
      return;
    }
    const body = { type: 'error', error: { type: anthropicErrorType(error), message: error.message } };
    sink(JSON.stringify(body), ERROR);
  }

  #ensureStarted(sink: FrameSink, usage: Usage | undefined): void {
    this.#pendingStart = false;
    if (this.#messageStarted) return;
    this.#messageStarted = true;
    const input = inputExcludingCache(usage);
    // What it writes: 0 when the count is not known yet (message_delta then carries it).
    this.#startInput = input ?? 0;
    this.#startCached = usage?.cachedInputTokens ?? 0;
    this.#startCreation = usage?.cacheCreationInputTokens;
    // The upstream's own start count, where it was this dialect's (a same-dialect relay), else 0.
    const raw = usage?.raw;
    const rawOutput = isRecord(raw) ? numberField(raw, 'output_tokens') : undefined;
    const output = usage?.outputTokens ?? rawOutput ?? 0;
    let message: JsonRecord;
    if (this.#flavor === 'llamacpp') {
      const id = this.#id ?? `chatcmpl-${randomAlphanumeric(32)}`;
      message = {
        id,
        type: 'message',
        role: 'assistant',
        content: [],
        model: this.#model ?? 'unknown',
        stop_reason: null,
        stop_sequence: null,
        usage: {
          cache_read_input_tokens: usage?.cachedInputTokens ?? 0,
          input_tokens: input ?? 0,
          output_tokens: output,
        },
      };
    } else if (this.#flavor === 'vllm') {
      // Pydantic's `exclude_unset` leaves out `type` and `role`: they are defaults nobody set.
      message = {
        id: this.#id ?? `chatcmpl-${randomHex(32)}`,
        content: [],
        model: this.#model ?? 'unknown',
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: usage?.inputTokens ?? 0, output_tokens: 0 },
      };
    } else {
      const id = this.#id ?? `msg_01${randomAlphanumeric(22)}`;
      const startUsage: JsonRecord = { input_tokens: input ?? 0 };
      if (usage?.cacheCreationInputTokens !== undefined)
        startUsage.cache_creation_input_tokens = usage.cacheCreationInputTokens;
      if (usage?.cachedInputTokens !== undefined)
        startUsage.cache_read_input_tokens = usage.cachedInputTokens;
      startUsage.output_tokens = output;
      message = {
        id,
        type: 'message',
        role: 'assistant',
        content: [],
        model: this.#model ?? 'unknown',
        stop_reason: null,
        stop_sequence: null,
        usage: startUsage,
      };
    }
    sink(JSON.stringify({ type: 'message_start', message }), MESSAGE_START);
  }

  /**
   * One block at a time: a fragment of a call other than the open one is held (true); a fragment that
   * opens a block makes its call the live one (false: the caller writes it).
   */
  #holdDelta(
    call: number,
    event: { id?: string | undefined; name?: string | undefined; argumentsDelta: string },
  ): boolean {
    if (this.#liveCall === call) return false;
    let held = this.#held.get(call);
    if (held === undefined) {
      if (this.#liveCall === undefined) {
        this.#liveCall = call;
        return false;
      }
      held = { id: undefined, name: undefined, fragments: [], arguments: undefined };
      this.#held.set(call, held);
    }
    if (event.id !== undefined && event.id !== '') held.id ??= event.id;
    if (event.name !== undefined && event.name !== '') held.name ??= event.name;
    if (event.argumentsDelta !== '') held.fragments.push(event.argumentsDelta);
    return true;
  }

  /**
   * A call known complete: the live one closes and the held ones follow; a held one is marked complete;
   * a whole call that never streamed waits behind a live one. True when nothing more is to be done.
   */
  #completeCall(
    event: { index: number; id: string; name: string; arguments: string },
    sink: FrameSink,
  ): boolean {
    const held = this.#held.get(event.index);
    if (held !== undefined) {
      held.id ??= event.id;
      held.name ??= event.name;
      held.arguments = event.arguments;
    } else if (this.#liveCall === event.index) {
      this.#liveCall = undefined;
    } else if (this.#liveCall !== undefined && !this.#streamedTools.has(event.index)) {
      this.#held.set(event.index, {
        id: event.id,
        name: event.name,
        fragments: [],
        arguments: event.arguments,
      });
      return true;
    } else {
      return false;
    }
    this.#drainHeld(false, sink);
    return true;
  }

  /** Held calls, in arrival order, each as one block, while no call is live (all of them at the end). */
  #drainHeld(all: boolean, sink: FrameSink): void {
    for (const [call, held] of this.#held) {
      if (this.#liveCall !== undefined) return;
      this.#held.delete(call);
      this.#streamedTools.add(call);
      const block = this.#toolBlock(call, held.id, held.name, sink);
      const args = held.arguments ?? held.fragments.join('');
      if (args !== '') this.#inputJson(block, args, sink);
      // A call not known complete stays open for its next fragments (unless the stream is ending).
      if (held.arguments === undefined && !all) this.#liveCall = call;
    }
  }

  #writeHeld(sink: FrameSink): void {
    this.#liveCall = undefined;
    this.#drainHeld(true, sink);
  }

  /** The open block of this kind (and tool call), or a new one (Anthropic stops the open one first). */
  #block(kind: BlockKind, call: number, sink: FrameSink): Block {
    for (const block of this.#open) if (block.kind === kind && block.call === call) return block;
    if (this.#flavor !== 'llamacpp') {
      this.#closeOpen(sink);
      // A text or thinking block ends the live call's block: its later fragments would need a new one.
      if (kind !== 'tool') this.#liveCall = undefined;
    }
    const block: Block = {
      index: this.#nextIndex,
      kind,
      call,
      signature:
        kind !== 'thinking'
          ? undefined
          : this.#flavor === 'llamacpp'
            ? ''
            : this.#flavor === 'vllm'
              ? randomHex(32)
              : undefined,
    };
    this.#nextIndex += 1;
    this.#open.push(block);
    if (kind !== 'tool') {
      const content = kind === 'text' ? '{"type":"text","text":""}' : '{"type":"thinking","thinking":""}';
      this.#blockStart(block, content, sink);
    }
    return block;
  }

  #toolBlock(call: number, id: string | undefined, name: string | undefined, sink: FrameSink): Block {
    for (const block of this.#open) if (block.kind === 'tool' && block.call === call) return block;
    const block = this.#block('tool', call, sink);
    const content: JsonRecord =
      this.#flavor === 'llamacpp'
        ? { type: 'tool_use', id: id ?? randomAlphanumeric(32), name: name ?? '' }
        : {
            type: 'tool_use',
            id:
              id ??
              (this.#flavor === 'vllm'
                ? `chatcmpl-tool-${randomHex(32)}`
                : `toolu_01${randomAlphanumeric(22)}`),
            name: name ?? '',
            input: {},
          };
    this.#blockStart(block, JSON.stringify(content), sink);
    return block;
  }

  #blockStart(block: Block, content: string, sink: FrameSink): void {
    sink(
      this.#flavor === 'vllm'
        ? `{"type":"content_block_start","content_block":${content},"index":${block.index}}`
        : `{"type":"content_block_start","index":${block.index},"content_block":${content}}`,
      BLOCK_START,
    );
    this.#ping(sink);
  }

  #delta(block: Block, delta: string, sink: FrameSink): void {
    sink(
      this.#flavor === 'vllm'
        ? `{"type":"content_block_delta","delta":${delta},"index":${block.index}}`
        : `{"type":"content_block_delta","index":${block.index},"delta":${delta}}`,
      BLOCK_DELTA,
    );
  }

  /** Anthropic's API pings once after the first block starts. */
  #ping(sink: FrameSink): void {
    if (this.#flavor !== 'anthropic' || this.#pinged) return;
    this.#pinged = true;
    sink('{"type":"ping"}', PING);
  }

  #inputJson(block: Block, fragment: string, sink: FrameSink): void {
    this.#delta(block, `{"type":"input_json_delta","partial_json":${JSON.stringify(fragment)}}`, sink);
  }

  #signature(block: Block, signature: string, sink: FrameSink): void {
    this.#delta(block, `{"type":"signature_delta","signature":${JSON.stringify(signature)}}`, sink);
  }

  #closeOpen(sink: FrameSink): void {
    for (const block of this.#open.splice(0)) this.#stop(block, sink);
  }

  #stop(block: Block, sink: FrameSink): void {
    if (block.signature !== undefined) this.#signature(block, block.signature, sink);
    sink(`{"type":"content_block_stop","index":${block.index}}`, BLOCK_STOP);
  }

  #stopReason(finish: FinishEvent | undefined): string {
    const reason = finish?.reason ?? 'stop';
    if (this.#flavor !== 'anthropic') {
      // llama-server and vLLM: `max_tokens` for the limit, else `end_turn` (or `tool_use` for tool calls).
      if (reason === 'length') return 'max_tokens';
      return reason === 'tool-calls' ? 'tool_use' : 'end_turn';
    }
    const raw = finish?.raw;
    if (raw !== undefined && raw !== null && ANTHROPIC_STOP_REASONS.has(raw)) {
      // llama-server says `end_turn` for a matched stop sequence; Anthropic says `stop_sequence`.
      return raw === 'end_turn' && finish?.stopSequence !== undefined ? 'stop_sequence' : raw;
    }
    switch (reason) {
      case 'length':
        return 'max_tokens';
      case 'tool-calls':
        return 'tool_use';
      case 'content-filter':
        return 'refusal';
      default:
        return finish?.stopSequence !== undefined ? 'stop_sequence' : 'end_turn';
    }
  }

  /**
   * `message_delta` usage: `output_tokens`, and the prompt counts only where they differ from what
   * `message_start` said (it could not know them when translating; Anthropic's documented stream and
   * llama-server's repeat nothing). The SDKs take a count given here over the start's.
   */
  #deltaUsage(usage: Usage | undefined): JsonRecord {
    const input = inputExcludingCache(usage);
    // Anthropic's stream always carries `output_tokens` here (the AI SDK providers require it).
    const output = this.#outputTokens();
    if (input === undefined || input === this.#startInput) return { output_tokens: output };
    const cached = usage?.cachedInputTokens ?? 0;
    const out: JsonRecord = {};
    if (this.#flavor === 'llamacpp') {
      // nlohmann::json objects: keys in alphabetical order.
      if (cached !== this.#startCached) out.cache_read_input_tokens = cached;
      out.input_tokens = input;
    } else {
      out.input_tokens = input;
      const creation = usage?.cacheCreationInputTokens;
      if (creation !== undefined && creation !== this.#startCreation)
        out.cache_creation_input_tokens = creation;
      if (cached !== this.#startCached) out.cache_read_input_tokens = cached;
    }
    out.output_tokens = output;
    return out;
  }

  /** The upstream's output count, else its timings' (llama-server), else the content events counted. */
  #outputTokens(): number {
    return this.#totals.usage?.outputTokens ?? this.#totals.timings?.evalTokens ?? this.#contentEvents;
  }
}

/** Anthropic's `input_tokens`: the prompt without its cached part (our `inputTokens` counts it all). */
function inputExcludingCache(usage: Usage | undefined): number | undefined {
  const input = usage?.inputTokens;
  if (input === undefined) return undefined;
  return Math.max(0, input - (usage?.cachedInputTokens ?? 0) - (usage?.cacheCreationInputTokens ?? 0));
}

/** The Anthropic error type for a failure: its own word when it is one, else by status. */
export function anthropicErrorType(error: {
  status?: number | undefined;
  errorType?: string | undefined;
}): string {
  if (error.errorType !== undefined && ANTHROPIC_ERROR_TYPES.has(error.errorType)) return error.errorType;
  switch (error.status) {
    case 400:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 529:
      return 'overloaded_error';
    default:
      return error.status !== undefined && error.status < 500 ? 'invalid_request_error' : 'api_error';
  }
}
