import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { streamText } from 'ai';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { Ollama } from 'ollama';
import OpenAI from 'openai';
import { complete, stream } from '../src/client/token-stream.ts';
import type { DialectId } from '../src/dialects/dialect.ts';
import { getDialect } from '../src/dialects/registry.ts';
import type { DecodeStream } from './decode-data.ts';

/** What one run of a subject produced: the text it assembled (checked), or a frame count (scan floor). */
export interface SubjectOutput {
  text?: string | undefined;
  frames?: number | undefined;
  /** Anything else the subject says went wrong (an incomplete Result…). */
  problem?: string | undefined;
}

export interface Subject {
  id: string;
  label: string;
  /** One run over the whole stream, through a fresh Response. */
  run(fetch: BenchFetch): Promise<SubjectOutput>;
}

/** Every SDK's injectable fetch: arguments are ignored, a fresh in-memory Response is returned. */
export type BenchFetch = (input?: unknown, init?: unknown) => Promise<Response>;

/**
 * A fetch that answers every call with the stream held in memory, as `readBytes`-sized reads (the
 * last one shorter): what a socket delivers, minus the socket. The reads are views of one buffer, so
 * no subject pays for copying that another does not.
 */
export function memoryFetch(data: DecodeStream, readBytes: number): BenchFetch {
  const bytes = data.bytes;
  const contentType =
    getDialect(data.dialect).framing === 'sse' ? 'text/event-stream' : 'application/x-ndjson';
  return async () => {
    let offset = 0;
    const body = new ReadableStream<Uint8Array>(
      {
        pull(controller) {
          if (offset >= bytes.length) {
            controller.close();
            return;
          }
          const end = Math.min(offset + readBytes, bytes.length);
          controller.enqueue(new Uint8Array(bytes.buffer, bytes.byteOffset + offset, end - offset));
          offset = end;
        },
      },
      { highWaterMark: 0 },
    );
    return new Response(body, { status: 200, headers: { 'content-type': contentType } });
  };
}

const BASE = 'http://bench.invalid';
const MODEL = 'meta-llama/Llama-3.1-8B-Instruct';
const MESSAGES = [{ role: 'user' as const, content: 'Tell me about rivers.' }];

/** The path each dialect is served on, so tokenwire picks the dialect from the URL as users do. */
function urlFor(dialect: DialectId): string {
  return `${BASE}${getDialect(dialect).paths[0]}`;
}

/** The frame delimiter of a framing, as our encoders write it (LF LF for SSE, LF for NDJSON). */
function delimiterOf(dialect: DialectId): Buffer {
  return Buffer.from(getDialect(dialect).framing === 'sse' ? '\n\n' : '\n');
}

/**
 * The text a payload carries in each dialect, read the shortest way (what a hand-rolled client that
 * knows its server would write). Used by the floors and the hand-rolled clients. Keyed by string, so the
 * dialects added to the registry later (anthropic-messages, openai-responses) have their entry here
 * already; a dialect with none gets no floor and no rivals (its row says so).
 */
type TextOf = (payload: Record<string, unknown>) => unknown;
interface Payload {
  type?: unknown;
  choices?: { delta?: { content?: unknown }; text?: unknown }[];
  message?: { content?: unknown };
  response?: unknown;
  content?: unknown;
  token?: { text?: unknown; special?: unknown };
  delta?: unknown;
}
const TEXT_OF: Partial<Record<string, TextOf>> = {
  'openai-chat': (p) => (p as Payload).choices?.[0]?.delta?.content,
  'openai-completions': (p) => (p as Payload).choices?.[0]?.text,
  'ollama-chat': (p) => (p as Payload).message?.content,
  'ollama-generate': (p) => (p as Payload).response,
  llamacpp: (p) => (p as Payload).content,
  tgi: (p) => {
    const token = (p as Payload).token;
    return token === undefined || token.special === true ? undefined : token.text;
  },
  'anthropic-messages': (p) => {
    const delta = (p as Payload).delta as { type?: unknown; text?: unknown } | undefined;
    return delta !== undefined && delta.type === 'text_delta' ? delta.text : undefined;
  },
  'openai-responses': (p) =>
    (p as Payload).type === 'response.output_text.delta' ? (p as Payload).delta : undefined,
};

const DATA_FIELD = Buffer.from('data: ');

/**
 * Floor 1: only find the frame delimiters, with `Buffer.indexOf` (memchr/memmem), carrying a partial
 * frame over to the next read. No decoding, no parsing: the least any client must do.
 */
export function scanFloor(dialect: DialectId): Subject {
  const delimiter = delimiterOf(dialect);
  return {
    id: 'floor-scan',
    label: 'floor: Buffer.indexOf scan',
    async run(fetch) {
      const response = await fetch();
      const reader = response.body!.getReader();
      let carry: Buffer | undefined;
      let frames = 0;
      for (;;) {
        const next = await reader.read();
        if (next.done) break;
        const value = next.value;
        let buf = Buffer.from(value.buffer, value.byteOffset, value.length);
        if (carry !== undefined) buf = Buffer.concat([carry, buf]);
        let pos = 0;
        for (;;) {
          const at = buf.indexOf(delimiter, pos);
          if (at === -1) break;
          frames += 1;
          pos = at + delimiter.length;
        }
        carry = pos < buf.length ? buf.subarray(pos) : undefined;
      }
      return { frames };
    },
  };
}

/**
 * Floor 2: the scan, plus decoding each payload to a string (UTF-8, as a client must) and `JSON.parse`,
 * plus appending the payload's text. Knows the exact bytes our encoders write (`data: ` then the JSON;
 * NDJSON lines), so it skips every check a real client makes: the fastest correct reading there is.
 */
export function parseFloor(dialect: DialectId): Subject {
  const delimiter = delimiterOf(dialect);
  const sse = getDialect(dialect).framing === 'sse';
  const textOf = TEXT_OF[dialect] ?? (() => undefined);
  const OPEN_BRACE = 0x7b;
  const D = 0x64;
  return {
    id: 'floor-parse',
    label: 'floor: scan + JSON.parse',
    async run(fetch) {
      const response = await fetch();
      const reader = response.body!.getReader();
      // Bytes of a frame cut by the end of a read; only that frame is ever copied.
      let carry: Buffer | undefined;
      let text = '';
      let frames = 0;
      const payload = (buf: Buffer, start: number, end: number): void => {
        frames += 1;
        if (sse) {
          // `data: ` first (the OpenAI-shaped dialects), or after an `event: name` line.
          if (buf[start] === D) start += DATA_FIELD.length;
          else start = buf.indexOf(DATA_FIELD, start) + DATA_FIELD.length;
        }
        // `data: [DONE]` is the only payload that is not a JSON object.
        if (buf[start] !== OPEN_BRACE) return;
        const piece = textOf(JSON.parse(buf.toString('utf8', start, end)) as Record<string, unknown>);
        if (typeof piece === 'string') text += piece;
      };
      for (;;) {
        const next = await reader.read();
        if (next.done) break;
        const value = next.value;
        const buf = Buffer.from(value.buffer, value.byteOffset, value.length);
        let pos = 0;
        if (carry !== undefined) {
          // Search the joint for a delimiter split across the two reads, then finish that frame.
          const head = Buffer.concat([carry, buf.subarray(0, Math.min(buf.length, delimiter.length - 1))]);
          const split = head.indexOf(delimiter, Math.max(0, carry.length - delimiter.length + 1));
          if (split !== -1) {
            payload(head, 0, split);
            pos = split + delimiter.length - carry.length;
          } else {
            const at = buf.indexOf(delimiter);
            if (at === -1) {
              carry = Buffer.concat([carry, buf]);
              continue;
            }
            const frame = Buffer.concat([carry, buf.subarray(0, at)]);
            payload(frame, 0, frame.length);
            pos = at + delimiter.length;
          }
          carry = undefined;
        }
        for (;;) {
          const at = buf.indexOf(delimiter, pos);
          if (at === -1) break;
          payload(buf, pos, at);
          pos = at + delimiter.length;
        }
        if (pos < buf.length) carry = Buffer.from(buf.subarray(pos));
      }
      return { text, frames };
    },
  };
}

/**
 * tokenwire's `complete()`: bytes -> frames -> normalized events -> Result, every check on. With
 * `frameTemplates: false` every frame goes through JSON.parse (the row that shows what templates save).
 */
export function tokenwireComplete(dialect: DialectId, frameTemplates = true): Subject {
  return {
    id: frameTemplates ? 'tokenwire' : 'tokenwire-parse',
    label: frameTemplates ? 'tokenwire complete()' : 'tokenwire complete(), every frame JSON.parse',
    async run(fetch) {
      const result = await complete(
        { url: urlFor(dialect), body: { model: MODEL, messages: MESSAGES, prompt: 'Tell me about rivers.' } },
        // TGI's last event repeats the whole answer (`generated_text`): longer than the 1 MiB default.
        { fetch, maxLineBytes: 16 * 1024 * 1024, frameTemplates },
      );
      return {
        text: result.text,
        problem: result.complete ? undefined : `incomplete: ${result.error?.message ?? result.incomplete}`,
      };
    },
  };
}

/** tokenwire's `stream()`: the same, plus every event handed to a `for await` loop. */
export function tokenwireStream(dialect: DialectId): Subject {
  return {
    id: 'tokenwire-stream',
    label: 'tokenwire stream() for-await',
    async run(fetch) {
      const events = stream(
        { url: urlFor(dialect), body: { model: MODEL, messages: MESSAGES, prompt: 'Tell me about rivers.' } },
        { fetch, maxLineBytes: 16 * 1024 * 1024 },
      );
      let text = '';
      for await (const event of events) if (event.type === 'text') text += event.text;
      const result = await events.result;
      return {
        text,
        problem: result.complete ? undefined : `incomplete: ${result.error?.message ?? result.incomplete}`,
      };
    },
  };
}

/** tokenwire's `stream().batches()`: the same events as `stream()`, one `await` per batch (per read). */
export function tokenwireBatches(dialect: DialectId): Subject {
  return {
    id: 'tokenwire-batches',
    label: 'tokenwire stream().batches() for-await',
    async run(fetch) {
      const events = stream(
        { url: urlFor(dialect), body: { model: MODEL, messages: MESSAGES, prompt: 'Tell me about rivers.' } },
        { fetch, maxLineBytes: 16 * 1024 * 1024 },
      );
      let text = '';
      for await (const batch of events.batches())
        for (const event of batch) if (event.type === 'text') text += event.text;
      const result = await events.result;
      return {
        text,
        problem: result.complete ? undefined : `incomplete: ${result.error?.message ?? result.incomplete}`,
      };
    },
  };
}

/** tokenwire's `complete({ onEvent })`: every event handed to a callback as it is decoded, no promise per event. */
export function tokenwireOnEvent(dialect: DialectId): Subject {
  return {
    id: 'tokenwire-onevent',
    label: 'tokenwire complete({ onEvent })',
    async run(fetch) {
      let text = '';
      const result = await complete(
        { url: urlFor(dialect), body: { model: MODEL, messages: MESSAGES, prompt: 'Tell me about rivers.' } },
        {
          fetch,
          maxLineBytes: 16 * 1024 * 1024,
          onEvent: (event) => {
            if (event.type === 'text') text += event.text;
          },
        },
      );
      return {
        text,
        problem: result.complete ? undefined : `incomplete: ${result.error?.message ?? result.incomplete}`,
      };
    },
  };
}

/**
 * A careful hand-rolled client on `eventsource-parser` (what the AI SDK and many apps build on): one
 * streaming TextDecoder, the parser, JSON.parse per event, the text appended. Any SSE dialect.
 */
export function eventsourceParser(dialect: DialectId): Subject {
  const textOf = TEXT_OF[dialect] ?? (() => undefined);
  return {
    id: 'eventsource-parser',
    label: 'eventsource-parser + JSON.parse',
    async run(fetch) {
      const response = await fetch();
      const reader = response.body!.getReader();
      const decoder = new TextDecoder();
      let text = '';
      const parser = createParser({
        onEvent(event: EventSourceMessage) {
          if (event.data === '[DONE]') return;
          const piece = textOf(JSON.parse(event.data) as Record<string, unknown>);
          if (typeof piece === 'string') text += piece;
        },
      });
      for (;;) {
        const next = await reader.read();
        if (next.done) break;
        parser.feed(decoder.decode(next.value, { stream: true }));
      }
      parser.feed(decoder.decode());
      return { text };
    },
  };
}

/**
 * The hand-rolled NDJSON client a user writes in 30 lines (the "line splitter" client): one
 * streaming TextDecoder, the string split at each LF with `indexOf`, JSON.parse per line, the text
 * appended. Any NDJSON dialect.
 */
export function lineSplitterClient(dialect: DialectId): Subject {
  const textOf = TEXT_OF[dialect] ?? (() => undefined);
  return {
    id: 'line-splitter',
    label: 'hand-rolled line splitter + JSON.parse',
    async run(fetch) {
      const response = await fetch();
      const reader = response.body!.getReader();
      const decoder = new TextDecoder();
      let text = '';
      let buffered = '';
      const line = (value: string): void => {
        if (value.trim() === '') return;
        const piece = textOf(JSON.parse(value) as Record<string, unknown>);
        if (typeof piece === 'string') text += piece;
      };
      for (;;) {
        const next = await reader.read();
        if (next.done) break;
        buffered += decoder.decode(next.value, { stream: true });
        let start = 0;
        for (let at = buffered.indexOf('\n'); at !== -1; at = buffered.indexOf('\n', start)) {
          line(buffered.slice(start, at));
          start = at + 1;
        }
        buffered = buffered.slice(start);
      }
      line(buffered + decoder.decode());
      return { text };
    },
  };
}

/** The official `openai` SDK: `chat.completions.create({ stream: true })`, iterated. */
export function openaiSdk(): Subject {
  return {
    id: 'openai-sdk',
    label: `openai SDK chat.completions.create`,
    async run(fetch) {
      const client = new OpenAI({
        apiKey: 'bench',
        baseURL: `${BASE}/v1`,
        fetch: fetch as unknown as typeof globalThis.fetch,
        maxRetries: 0,
      });
      const chunks = await client.chat.completions.create({ model: MODEL, messages: MESSAGES, stream: true });
      let text = '';
      for await (const chunk of chunks) {
        const piece = chunk.choices[0]?.delta?.content;
        if (typeof piece === 'string') text += piece;
      }
      return { text };
    },
  };
}

/** The AI SDK: `streamText` on `@ai-sdk/openai-compatible`, reading `textStream`. */
export function aiSdk(): Subject {
  return {
    id: 'ai-sdk',
    label: 'AI SDK streamText (openai-compatible)',
    async run(fetch) {
      const provider = createOpenAICompatible({
        name: 'bench',
        baseURL: `${BASE}/v1`,
        fetch: fetch as unknown as typeof globalThis.fetch,
      });
      let failure: unknown;
      const result = streamText({
        model: provider.chatModel(MODEL),
        prompt: 'Tell me about rivers.',
        maxRetries: 0,
        onError: ({ error }) => {
          failure = error;
        },
      });
      let text = '';
      for await (const piece of result.textStream) text += piece;
      return { text, problem: failure === undefined ? undefined : `error: ${String(failure)}` };
    },
  };
}

/** ollama-js: `chat({ stream: true })` (or `generate` on /api/generate), iterated. */
export function ollamaJs(dialect: DialectId): Subject {
  const generate = dialect === 'ollama-generate';
  return {
    id: 'ollama-js',
    label: generate ? 'ollama-js generate' : 'ollama-js chat',
    async run(fetch) {
      const client = new Ollama({
        host: 'http://bench.invalid:11434',
        fetch: fetch as unknown as typeof globalThis.fetch,
      });
      let text = '';
      if (generate) {
        const parts = await client.generate({ model: MODEL, prompt: 'Tell me about rivers.', stream: true });
        for await (const part of parts) text += part.response;
      } else {
        const parts = await client.chat({ model: MODEL, messages: MESSAGES, stream: true });
        for await (const part of parts) text += part.message.content;
      }
      return { text };
    },
  };
}

/**
 * The subjects compared on one dialect's stream, in two groups run in separate processes: `fast` (the
 * floors, tokenwire's complete(), stream() and stream().batches(), the hand-rolled clients, ollama-js)
 * and `sdk` (the floor, tokenwire, and the two SDKs that take 5-30x longer). Splitting keeps the slow
 * runs and their heap from disturbing the close comparisons, and each ratio is still taken against the
 * floor of its own round.
 */
export type SubjectGroup = 'fast' | 'sdk';

export function subjectsFor(dialect: DialectId, group: SubjectGroup = 'fast'): Subject[] {
  if (group === 'sdk') {
    return dialect === 'openai-chat'
      ? [parseFloor(dialect), tokenwireComplete(dialect), openaiSdk(), aiSdk()]
      : [];
  }
  const subjects = [
    scanFloor(dialect),
    parseFloor(dialect),
    tokenwireComplete(dialect),
    tokenwireComplete(dialect, false),
    tokenwireStream(dialect),
    tokenwireBatches(dialect),
    tokenwireOnEvent(dialect),
  ];
  // The rivals users would write or pick instead: for every dialect whose payload text we know, the
  // hand-rolled client of its framing; ollama-js on Ollama's two endpoints.
  if (TEXT_OF[dialect] === undefined) return subjects;
  const sse = getDialect(dialect).framing === 'sse';
  subjects.push(sse ? eventsourceParser(dialect) : lineSplitterClient(dialect));
  if (dialect === 'ollama-chat' || dialect === 'ollama-generate') subjects.push(ollamaJs(dialect));
  return subjects;
}
