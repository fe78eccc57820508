import type { FinishEvent, StreamEvent, TokenLogprob } from '../../events/stream-event.ts';
import type { Timings, Usage } from '../../events/usage.ts';
import { goJsonStringify } from '../../wire/go-json.ts';
import type { JsonRecord } from '../common/json-fields.ts';
import { randomAlphanumeric } from '../common/random-id.ts';
import { tokenLogprobsList } from '../common/token-logprobs-json.ts';
import type { DialectEncoder, EncoderOptions, FrameSink, MidStreamError } from '../dialect.ts';
import { llamacppTimingsObject } from '../llamacpp-family/llamacpp-timings.ts';

/**
 * Which server's Responses stream to write (wire-formats.md §14.3, §14.5):
 * - `openai`: the shape OpenAI documents, which its SDK's `responses.stream()` reads: `sequence_number`
 *   from 0 on every event, `output_index`/`content_index`, each item closed before the next opens (but
 *   function calls, which stay open side by side until complete: their fragments may interleave), a
 *   reasoning item's `reasoning_text` part opened (`content_part.added`) before its deltas, a full
 *   `response` object on the lifecycle events, and `response.incomplete` when the cap cut the answer,
 *   the items it cut saying `status: "incomplete"`.
 * - `vllm`: the same events, each serialized in the field order of the `openai` package's pydantic
 *   models vLLM dumps (alphabetical at the event level), the reasoning part as vLLM's own
 *   `response.reasoning_part.added`/`.done`; the cap is `response.completed` with `status: "incomplete"`
 *   and `incomplete_details` (its items still `completed`, as vLLM writes them).
 * - `llamacpp`: llama-server b10108, byte for byte (captures p01–p10): no `sequence_number`, no
 *   indexes, a three-field `response` until the end, items closed only at the end (a message's done
 *   events after a later call's deltas), no `function_call_arguments.done`, `response.completed` with
 *   `status: "completed"` even when the cap cut it, llama.cpp `timings` beside the response, and a
 *   failure as a bare `data: {"error": …}` line.
 * - `ollama`: Ollama's converter (`openai/responses.go`): Go maps, so every object's keys sorted and
 *   Go's escaping; reasoning as `reasoning_summary_text`; whole tool calls, and no text after them;
 *   never `response.incomplete`.
 */
export type OpenAiResponsesFlavor = 'openai' | 'vllm' | 'llamacpp' | 'ollama';

export const OPENAI_RESPONSES_FLAVORS: readonly OpenAiResponsesFlavor[] = [
  'openai',
  'vllm',
  'llamacpp',
  'ollama',
];

interface MessageItem {
  kind: 'message';
  id: string;
  outputIndex: number;
  text: string;
  /** Every text piece's token log probabilities so far (the done events' and the part's `logprobs`). */
  logprobs: TokenLogprob[];
  closed: boolean;
}

interface ReasoningItem {
  kind: 'reasoning';
  id: string;
  outputIndex: number;
  text: string;
  closed: boolean;
}

interface CallItem {
  kind: 'function_call';
  id: string;
  outputIndex: number;
  callId: string;
  name: string;
  arguments: string;
  closed: boolean;
}

type Item = (MessageItem | ReasoningItem | CallItem) & {
  /** Cut by the cap (openai flavor): `status: "incomplete"` in its `output_item.done` and the output. */
  incomplete?: boolean;
};

export class OpenAiResponsesEncoder implements DialectEncoder {
  readonly framing = 'sse' as const;
  readonly sseSpace = true;
  readonly #flavor: OpenAiResponsesFlavor;
  readonly #now: () => number;
  #id: string | undefined;
  #model: string | undefined;
  #created: number | undefined;
  #started = false;
  #sequence = 0;
  /** EncoderOptions.continuesAfter: the number the first event after the opening takes. */
  readonly #continuesAt: number | undefined;
  /** Every output item, in output order (the terminal response's `output`). */
  readonly #items: Item[] = [];
  #message: MessageItem | undefined;
  #reasoning: ReasoningItem | undefined;
  readonly #calls = new Map<number, CallItem>();
  /** Ollama writes no text once it has written tool calls. */
  #callsWritten = false;
  #finish: FinishEvent | undefined;
  #usage: Usage | undefined;
  #timings: Timings | undefined;
  /** llamacpp: the last text delta's payload without its closing brace, not yet written. */
  #held: string | undefined;

  constructor(options: EncoderOptions = {}) {
    this.#flavor = (options.flavor ?? 'openai') as OpenAiResponsesFlavor;
    this.#now = options.now ?? Date.now;
    this.#id = options.id;
    this.#model = options.model;
    this.#created = options.created;
    this.#continuesAt = sequenceAfter(options.continuesAfter);
  }

  event(event: StreamEvent, sink: FrameSink): void {
    if (this.#held !== undefined) {
      // llama-server's last delta carries the timings when a stop word ended the answer (capture p09).
      if (event.type === 'timings' && this.#finish === undefined) {
        sink(
          `${this.#held},"timings":${JSON.stringify(llamacppTimingsObject(event.timings))}}`,
          'response.output_text.delta',
        );
        this.#held = undefined;
        this.#timings = event.timings;
        return;
      }
      this.flush(sink);
    }
    switch (event.type) {
      case 'start':
        this.#id ??= event.id;
        this.#model ??= event.model;
        this.#created ??= event.created;
        this.#begin(sink);
        return;
      case 'text':
        this.#begin(sink);
        if (this.#flavor === 'ollama' && this.#callsWritten) return;
        this.#text(event.text, event.itemId, event.logprobs, sink);
        return;
      case 'reasoning':
        if (event.text === '') return; // a signature only: this dialect has no place for it
        this.#begin(sink);
        this.#reasoningText(event.text, event.itemId, sink);
        return;
      case 'tool-call-delta':
        this.#begin(sink);
        if (this.#flavor === 'ollama') return; // Ollama writes whole calls only
        this.#callDelta(event.index, event.id, event.name, event.argumentsDelta, sink);
        return;
      case 'tool-call':
        this.#begin(sink);
        this.#callDone(event.index, event.id, event.name, event.arguments, sink);
        return;
      case 'finish':
        this.#finish = event;
        return;
      case 'usage':
        this.#usage = this.#usage === undefined ? event.usage : Object.assign({}, this.#usage, event.usage);
        return;
      case 'timings':
        this.#timings =
          this.#timings === undefined ? event.timings : Object.assign({}, this.#timings, event.timings);
        return;
      case 'error':
        this.error(event, sink);
        return;
    }
  }

  /** Writes the text delta held back (llamacpp flavor) to see whether timings belong on it. */
  flush(sink: FrameSink): void {
    const held = this.#held;
    if (held === undefined) return;
    this.#held = undefined;
    sink(`${held}}`, 'response.output_text.delta');
  }

  end(sink: FrameSink): void {
    this.flush(sink);
    this.#begin(sink);
    const finish = this.#finish;
    const reason = finish?.reason;
    const flavor = this.#flavor;
    // OpenAI says `incomplete` of the items the cap cut (vLLM says `completed`, which it calls a bug).
    if (flavor === 'openai' && (reason === 'length' || reason === 'content-filter'))
      for (const item of this.#items) if (!item.closed) item.incomplete = true;
    this.#closeAll(sink);
    let type = 'response.completed';
    let status = 'completed';
    let details: JsonRecord | null = null;
    if (flavor === 'openai' || flavor === 'vllm') {
      if (reason === 'length' || reason === 'content-filter') {
        status = 'incomplete';
        details = { reason: reason === 'length' ? 'max_output_tokens' : 'content_filter' };
        // vLLM ends every stream with `response.completed`, its status saying what happened.
        if (flavor === 'openai') type = 'response.incomplete';
      } else if (reason === 'error') {
        status = 'failed';
        if (flavor === 'openai') type = 'response.failed';
      }
    }
    if (flavor === 'llamacpp') {
      const usage = this.#usage;
      const response: JsonRecord = {
        id: this.#responseId(),
        object: 'response',
        created_at: this.#createdAt(),
        status,
        model: this.#model ?? 'default',
        output: this.#items.map((item) => this.#doneItem(item)),
      };
      if (usage !== undefined) {
        const input = usage.inputTokens ?? 0;
        const output = usage.outputTokens ?? 0;
        response.usage = {
          input_tokens: input,
          output_tokens: output,
          total_tokens: usage.totalTokens ?? input + output,
          input_tokens_details: { cached_tokens: usage.cachedInputTokens ?? 0 },
        };
      }
      const payload: JsonRecord = { type, response };
      if (this.#timings !== undefined) payload.timings = llamacppTimingsObject(this.#timings);
      sink(JSON.stringify(payload), type);
      return;
    }
    // Ollama's output leaves its message out once it wrote tool calls.
    const items =
      flavor === 'ollama' && this.#callsWritten
        ? this.#items.filter((item) => item.kind !== 'message')
        : this.#items;
    const response = this.#response(
      status,
      items.map((item) => this.#doneItem(item)),
    );
    response.incomplete_details = details;
    if (status === 'failed') {
      response.error = { code: 'server_error', message: finish?.raw ?? 'the generation failed' };
    }
    response.usage = this.#usageObject();
    if (flavor === 'ollama') response.completed_at = Math.floor(this.#now() / 1000);
    this.#write(type, { response }, sink);
  }

  error(error: MidStreamError, sink: FrameSink): void {
    this.flush(sink);
    if (this.#flavor === 'llamacpp') {
      // llama-server (capture p05): a bare data line, no `event:`, and nothing after it.
      const body = {
        error: { code: error.status ?? 500, message: error.message, type: error.errorType ?? 'server_error' },
      };
      sink(JSON.stringify(body));
      return;
    }
    this.#begin(sink);
    const code =
      error.errorType ??
      (error.status !== undefined && error.status < 500 ? 'invalid_request_error' : 'server_error');
    this.#write('error', { code, message: error.message, param: null }, sink);
  }

  // ---- the stream's parts ----

  #begin(sink: FrameSink): void {
    if (this.#started) return;
    this.#started = true;
    if (this.#flavor === 'llamacpp') {
      for (const type of ['response.created', 'response.in_progress']) {
        sink(
          JSON.stringify({
            type,
            response: { id: this.#responseId(), object: 'response', status: 'in_progress' },
          }),
          type,
        );
      }
      return;
    }
    this.#write('response.created', { response: this.#response('in_progress', []) }, sink);
    this.#write('response.in_progress', { response: this.#response('in_progress', []) }, sink);
    if (this.#continuesAt !== undefined) this.#sequence = this.#continuesAt;
  }

  #text(
    text: string,
    itemId: string | undefined,
    logprobs: TokenLogprob[] | undefined,
    sink: FrameSink,
  ): void {
    let message = this.#message;
    if (message === undefined || message.closed) {
      if (this.#flavor !== 'llamacpp' && this.#flavor !== 'ollama') this.#closeOpen(sink, false);
      else if (this.#flavor === 'ollama') this.#closeReasoning(sink);
      message = {
        kind: 'message',
        id: itemId ?? `msg_${randomAlphanumeric(32)}`,
        outputIndex: this.#nextIndex(),
        text: '',
        logprobs: [],
        closed: false,
      };
      this.#message = message;
      this.#items.push(message);
      this.#openMessage(message, sink);
    }
    message.text += text;
    if (logprobs !== undefined) message.logprobs.push(...logprobs);
    const id = JSON.stringify(message.id);
    // `[]` when the events carry none (not asked for), as the servers write it.
    const listed = logprobs === undefined ? undefined : tokenLogprobsList(logprobs, 'responses-delta');
    switch (this.#flavor) {
      case 'llamacpp':
        // Held (without its closing brace) until the next event: see `flush`. llama-server writes no
        // `logprobs` on its deltas; they are added only when the events have some.
        this.#held = `{"type":"response.output_text.delta","item_id":${id},"delta":${JSON.stringify(text)}${listed === undefined ? '' : `,"logprobs":${JSON.stringify(listed)}`}`;
        return;
      case 'openai':
        sink(
          `{"type":"response.output_text.delta","sequence_number":${this.#sequence++},"item_id":${id},"output_index":${message.outputIndex},"content_index":0,"delta":${JSON.stringify(text)},"logprobs":${listed === undefined ? '[]' : JSON.stringify(listed)}}`,
          'response.output_text.delta',
        );
        return;
      default:
        this.#write(
          'response.output_text.delta',
          {
            item_id: message.id,
            output_index: message.outputIndex,
            content_index: 0,
            delta: text,
            logprobs: listed ?? [],
          },
          sink,
        );
    }
  }

  #openMessage(message: MessageItem, sink: FrameSink): void {
    if (this.#flavor === 'llamacpp') {
      const id = JSON.stringify(message.id);
      sink(
        `{"type":"response.output_item.added","item":{"content":[],"id":${id},"role":"assistant","status":"in_progress","type":"message"}}`,
        'response.output_item.added',
      );
      sink(
        `{"type":"response.content_part.added","item_id":${id},"part":{"type":"output_text","text":""}}`,
        'response.content_part.added',
      );
      return;
    }
    this.#write(
      'response.output_item.added',
      {
        output_index: message.outputIndex,
        item: { id: message.id, type: 'message', status: 'in_progress', role: 'assistant', content: [] },
      },
      sink,
    );
    this.#write(
      'response.content_part.added',
      {
        item_id: message.id,
        output_index: message.outputIndex,
        content_index: 0,
        part: { type: 'output_text', annotations: [], logprobs: [], text: '' },
      },
      sink,
    );
  }

  #reasoningText(text: string, itemId: string | undefined, sink: FrameSink): void {
    let reasoning = this.#reasoning;
    if (reasoning === undefined || reasoning.closed) {
      if (this.#flavor === 'openai' || this.#flavor === 'vllm') this.#closeOpen(sink, false);
      reasoning = {
        kind: 'reasoning',
        id:
          itemId ??
          (this.#flavor === 'ollama'
            ? `rs_${Math.floor(Math.random() * 999999)}`
            : `rs_${randomAlphanumeric(32)}`),
        outputIndex: this.#nextIndex(),
        text: '',
        closed: false,
      };
      this.#reasoning = reasoning;
      this.#items.push(reasoning);
      if (this.#flavor === 'llamacpp') {
        sink(
          `{"type":"response.output_item.added","item":{"id":${JSON.stringify(reasoning.id)},"summary":[],"type":"reasoning","content":[],"encrypted_content":"","status":"in_progress"}}`,
          'response.output_item.added',
        );
      } else {
        const item: JsonRecord =
          this.#flavor === 'ollama'
            ? { id: reasoning.id, type: 'reasoning', summary: [] }
            : { id: reasoning.id, type: 'reasoning', summary: [], content: [], status: 'in_progress' };
        this.#write('response.output_item.added', { output_index: reasoning.outputIndex, item }, sink);
        // The reasoning text's part, which the `openai` SDK needs before the first delta (OpenAI's
        // `content_part.added`; vLLM names it `reasoning_part.added`, wire-formats.md §14.3).
        if (this.#flavor !== 'ollama') {
          this.#write(
            this.#flavor === 'vllm' ? 'response.reasoning_part.added' : 'response.content_part.added',
            {
              item_id: reasoning.id,
              output_index: reasoning.outputIndex,
              content_index: 0,
              part: { type: 'reasoning_text', text: '' },
            },
            sink,
          );
        }
      }
    }
    reasoning.text += text;
    switch (this.#flavor) {
      case 'llamacpp':
        sink(
          `{"type":"response.reasoning_text.delta","delta":${JSON.stringify(text)},"item_id":${JSON.stringify(reasoning.id)}}`,
          'response.reasoning_text.delta',
        );
        return;
      case 'ollama':
        this.#write(
          'response.reasoning_summary_text.delta',
          { item_id: reasoning.id, output_index: reasoning.outputIndex, summary_index: 0, delta: text },
          sink,
        );
        return;
      default:
        this.#write(
          'response.reasoning_text.delta',
          { item_id: reasoning.id, output_index: reasoning.outputIndex, content_index: 0, delta: text },
          sink,
        );
    }
  }

  #callDelta(
    index: number,
    id: string | undefined,
    name: string | undefined,
    delta: string,
    sink: FrameSink,
  ): void {
    let call = this.#calls.get(index);
    if (call === undefined) {
      call = this.#openCall(index, id, name, sink);
    }
    if (delta === '') return;
    call.arguments += delta;
    if (this.#flavor === 'llamacpp') {
      sink(
        `{"type":"response.function_call_arguments.delta","delta":${JSON.stringify(delta)},"item_id":${JSON.stringify(call.id)}}`,
        'response.function_call_arguments.delta',
      );
      return;
    }
    this.#write(
      'response.function_call_arguments.delta',
      { item_id: call.id, output_index: call.outputIndex, delta },
      sink,
    );
  }

  #openCall(index: number, id: string | undefined, name: string | undefined, sink: FrameSink): CallItem {
    // Parallel calls stay open side by side (their fragments may interleave; every event names its
    // item): each closes once, when it is complete or at the end.
    if (this.#flavor === 'openai' || this.#flavor === 'vllm') this.#closeOpen(sink, false);
    if (this.#flavor === 'ollama') this.#closeReasoning(sink);
    const suffix = randomAlphanumeric(32);
    const callId = id ?? `call_${suffix}`;
    const itemId =
      this.#flavor === 'llamacpp' && callId.startsWith('call_')
        ? `fc_${callId.slice(5)}` // llama-server: one random part for both ids
        : this.#flavor === 'ollama'
          ? `fc_${Math.floor(Math.random() * 999999)}_${index}`
          : `fc_${suffix}`;
    // Ollama numbers calls from the index of the item before them (`outputIndex + i`), a quirk kept.
    const outputIndex =
      this.#flavor === 'ollama' ? this.#ollamaIndex() + this.#calls.size : this.#nextIndex();
    const call: CallItem = {
      kind: 'function_call',
      id: itemId,
      outputIndex,
      callId,
      name: name ?? '',
      arguments: '',
      closed: false,
    };
    this.#calls.set(index, call);
    this.#items.push(call);
    if (this.#flavor === 'llamacpp') {
      sink(
        `{"type":"response.output_item.added","item":{"id":${JSON.stringify(call.id)},"arguments":"","call_id":${JSON.stringify(callId)},"name":${JSON.stringify(call.name)},"type":"function_call","status":"in_progress"}}`,
        'response.output_item.added',
      );
    } else {
      this.#write(
        'response.output_item.added',
        {
          output_index: call.outputIndex,
          item: {
            id: call.id,
            type: 'function_call',
            status: 'in_progress',
            arguments: '',
            call_id: callId,
            name: call.name,
          },
        },
        sink,
      );
    }
    return call;
  }

  #callDone(index: number, id: string, name: string, args: string, sink: FrameSink): void {
    let call = this.#calls.get(index);
    if (call === undefined) {
      // A whole call (an Ollama upstream, or a translation that had no fragments): opened and filled.
      call = this.#openCall(index, id, name, sink);
      if (this.#flavor === 'ollama') {
        call.arguments = args;
        if (args !== '') {
          this.#write(
            'response.function_call_arguments.delta',
            { item_id: call.id, output_index: call.outputIndex, delta: args },
            sink,
          );
        }
      } else {
        this.#callDelta(index, id, name, args, sink);
      }
    }
    if (this.#flavor === 'ollama') this.#callsWritten = true;
    // llama-server closes its items only at the end; an item is done exactly once.
    if (this.#flavor !== 'llamacpp' && !call.closed) this.#closeItem(call, sink);
  }

  // ---- closing items ----

  /** Every open item, or (calls: false) every open one but the calls still taking fragments. */
  #closeOpen(sink: FrameSink, calls = true): void {
    for (const item of this.#items)
      if (!item.closed && (calls || item.kind !== 'function_call')) this.#closeItem(item, sink);
  }

  #closeReasoning(sink: FrameSink): void {
    const reasoning = this.#reasoning;
    if (reasoning !== undefined && !reasoning.closed) this.#closeItem(reasoning, sink);
  }

  /** At the end: every item still open, in the server's order. */
  #closeAll(sink: FrameSink): void {
    if (this.#flavor === 'ollama') {
      this.#closeReasoning(sink);
      const message = this.#message;
      // Ollama closes its message only when it wrote no tool calls (and leaves it out of the output).
      if (message !== undefined && !message.closed && !this.#callsWritten) this.#closeItem(message, sink);
      return;
    }
    this.#closeOpen(sink);
  }

  #closeItem(item: Item, sink: FrameSink): void {
    item.closed = true;
    const flavor = this.#flavor;
    if (item.kind === 'message') {
      if (flavor === 'llamacpp') {
        const id = JSON.stringify(item.id);
        const text = JSON.stringify(item.text);
        sink(
          `{"type":"response.output_text.done","item_id":${id},"text":${text}}`,
          'response.output_text.done',
        );
        sink(
          `{"type":"response.content_part.done","item_id":${id},"part":{"type":"output_text","annotations":[],"logprobs":${JSON.stringify(tokenLogprobsList(item.logprobs, 'responses-part'))},"text":${text}}}`,
          'response.content_part.done',
        );
      } else {
        const at = { item_id: item.id, output_index: item.outputIndex, content_index: 0 };
        this.#write(
          'response.output_text.done',
          Object.assign({}, at, {
            text: item.text,
            logprobs: tokenLogprobsList(item.logprobs, 'responses-delta'),
          }),
          sink,
        );
        this.#write(
          'response.content_part.done',
          Object.assign({}, at, {
            part: {
              type: 'output_text',
              annotations: [],
              logprobs: tokenLogprobsList(item.logprobs, 'responses-part'),
              text: item.text,
            },
          }),
          sink,
        );
      }
    } else if (item.kind === 'reasoning') {
      if (flavor === 'ollama') {
        this.#write(
          'response.reasoning_summary_text.done',
          { item_id: item.id, output_index: item.outputIndex, summary_index: 0, text: item.text },
          sink,
        );
      } else if (flavor !== 'llamacpp') {
        const at = { item_id: item.id, output_index: item.outputIndex, content_index: 0 };
        this.#write('response.reasoning_text.done', Object.assign({}, at, { text: item.text }), sink);
        this.#write(
          flavor === 'vllm' ? 'response.reasoning_part.done' : 'response.content_part.done',
          Object.assign({}, at, { part: { type: 'reasoning_text', text: item.text } }),
          sink,
        );
      }
    } else if (flavor !== 'llamacpp') {
      this.#write(
        'response.function_call_arguments.done',
        { item_id: item.id, output_index: item.outputIndex, arguments: item.arguments },
        sink,
      );
    }
    if (flavor === 'llamacpp') {
      sink(
        JSON.stringify({ type: 'response.output_item.done', item: this.#doneItem(item) }),
        'response.output_item.done',
      );
      return;
    }
    this.#write(
      'response.output_item.done',
      { output_index: item.outputIndex, item: this.#doneItem(item) },
      sink,
    );
  }

  /** An item as `output_item.done` and the terminal response's `output` show it. */
  #doneItem(item: Item): JsonRecord {
    const flavor = this.#flavor;
    const status = item.incomplete === true ? 'incomplete' : 'completed';
    switch (item.kind) {
      case 'message': {
        const part = {
          type: 'output_text',
          annotations: [],
          logprobs: tokenLogprobsList(item.logprobs, 'responses-part'),
          text: item.text,
        };
        return flavor === 'llamacpp'
          ? { type: 'message', status, id: item.id, content: [part], role: 'assistant' }
          : { id: item.id, type: 'message', status, role: 'assistant', content: [part] };
      }
      case 'reasoning':
        if (flavor === 'llamacpp') {
          return {
            id: item.id,
            summary: [],
            type: 'reasoning',
            content: [{ text: item.text, type: 'reasoning_text' }],
            encrypted_content: '',
          };
        }
        if (flavor === 'ollama') {
          return {
            id: item.id,
            type: 'reasoning',
            summary: [{ type: 'summary_text', text: item.text }],
            encrypted_content: item.text,
          };
        }
        return {
          id: item.id,
          type: 'reasoning',
          summary: [],
          content: [{ type: 'reasoning_text', text: item.text }],
          status,
        };
      case 'function_call':
        return flavor === 'llamacpp'
          ? {
              id: item.id,
              type: 'function_call',
              status,
              arguments: item.arguments,
              call_id: item.callId,
              name: item.name,
            }
          : {
              id: item.id,
              type: 'function_call',
              status,
              arguments: item.arguments,
              call_id: item.callId,
              name: item.name,
            };
    }
  }

  // ---- serialization ----

  /** One event in the flavor's JSON: `type` and `sequence_number` placed where the server puts them. */
  #write(type: string, fields: JsonRecord, sink: FrameSink): void {
    const seq = this.#sequence++;
    switch (this.#flavor) {
      case 'openai':
        sink(JSON.stringify(Object.assign({ type, sequence_number: seq }, fields)), type);
        return;
      case 'vllm':
        // pydantic dumps the `openai` package's event models, whose fields are declared alphabetically.
        sink(
          JSON.stringify(sortedKeys(Object.assign({}, fields, { sequence_number: seq, type }), false)),
          type,
        );
        return;
      default:
        // Go marshals maps with their keys sorted, at every depth.
        sink(
          goJsonStringify(sortedKeys(Object.assign({}, fields, { sequence_number: seq, type }), true)),
          type,
        );
    }
  }

  /** The `response` object of the lifecycle events (not llama-server's, which is written inline). */
  #response(status: string, output: JsonRecord[]): JsonRecord {
    const response: JsonRecord = {
      id: this.#responseId(),
      object: 'response',
      created_at: this.#createdAt(),
      status,
      error: null,
      incomplete_details: null,
      model: this.#model ?? 'default',
      output,
      usage: null,
    };
    if (this.#flavor === 'ollama') {
      // Ollama's buildResponseObject: its defaults where the request's values are not known here.
      Object.assign(response, {
        completed_at: null,
        previous_response_id: null,
        instructions: null,
        tools: [],
        tool_choice: 'auto',
        truncation: 'disabled',
        parallel_tool_calls: true,
        text: { format: { type: 'text' } },
        top_p: 1,
        presence_penalty: 0,
        frequency_penalty: 0,
        top_logprobs: 0,
        temperature: 1,
        reasoning: null,
        max_output_tokens: null,
        max_tool_calls: null,
        store: false,
        background: false,
        service_tier: 'default',
        metadata: {},
        safety_identifier: null,
        prompt_cache_key: null,
      });
    }
    // Otherwise only what the stream knows: the request's settings (tools, temperature…) are not
    // invented; the SDK's stream helpers need `output` (llama-server's three-field object lacks it).
    return response;
  }

  #usageObject(): JsonRecord | null {
    const usage = this.#usage;
    if (usage === undefined) return null;
    const input = usage.inputTokens ?? 0;
    const output = usage.outputTokens ?? 0;
    return {
      input_tokens: input,
      input_tokens_details: { cached_tokens: usage.cachedInputTokens ?? 0 },
      output_tokens: output,
      output_tokens_details: { reasoning_tokens: usage.reasoningTokens ?? 0 },
      total_tokens: usage.totalTokens ?? input + output,
    };
  }

  #responseId(): string {
    this.#id ??= `resp_${randomAlphanumeric(32)}`;
    return this.#id;
  }

  #createdAt(): number {
    this.#created ??= Math.floor(this.#now() / 1000);
    return this.#created;
  }

  #nextIndex(): number {
    return this.#items.length;
  }

  /** Ollama's `outputIndex`: advanced only when its reasoning item closes. */
  #ollamaIndex(): number {
    return this.#reasoning === undefined ? 0 : this.#reasoning.outputIndex + 1;
  }
}

/** A copy with keys sorted (deep: every nested object and array element too). */
function sortedKeys(value: JsonRecord, deep: boolean): JsonRecord {
  const out: JsonRecord = {};
  for (const key of Object.keys(value).sort()) {
    const field = value[key];
    out[key] = deep ? sortDeep(field) : field;
  }
  return out;
}

function sortDeep(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortDeep);
  if (value !== null && typeof value === 'object') return sortedKeys(value as JsonRecord, true);
  return value;
}

/** One past the `sequence_number` of a payload (undefined when it has none). */
function sequenceAfter(payload: string | undefined): number | undefined {
  if (payload === undefined) return undefined;
  try {
    const value = (JSON.parse(payload) as { sequence_number?: unknown }).sequence_number;
    return typeof value === 'number' && Number.isInteger(value) ? value + 1 : undefined;
  } catch {
    return undefined;
  }
}
