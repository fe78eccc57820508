import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import Anthropic from '@anthropic-ai/sdk';
import { streamText } from 'ai';
import OpenAI from 'openai';
import { complete } from '../../src/client/token-stream.ts';
import { serve } from '../../src/node/serve.ts';
import { createGateway } from '../../src/server/create-gateway.ts';
import { startGateway } from '../helpers/gateway.ts';
import { readFixture } from '../helpers/paths.ts';
import { type ScriptServer, scriptServer } from '../helpers/script-server.ts';
import { readSse } from '../helpers/sse-read.ts';

/** An OpenAI chat stream's bytes: one `data:` line per chunk, then `[DONE]`. */
function chatStream(deltas: unknown[], finish: string, usage?: unknown): string {
  const chunk = (choice: unknown, extra?: unknown) =>
    `data: ${JSON.stringify(Object.assign({ id: 'chatcmpl-x', object: 'chat.completion.chunk', created: 1, model: 'x', choices: [choice] }, extra))}\n\n`;
  let out = chunk({ index: 0, delta: { role: 'assistant', content: null }, finish_reason: null });
  for (const delta of deltas) out += chunk({ index: 0, delta, finish_reason: null });
  out += chunk({ index: 0, delta: {}, finish_reason: finish });
  if (usage !== undefined)
    out += `data: ${JSON.stringify({ id: 'chatcmpl-x', object: 'chat.completion.chunk', created: 1, model: 'x', choices: [], usage })}\n\n`;
  return `${out}data: [DONE]\n\n`;
}

const tool = (index: number, fields: Record<string, unknown>) => ({
  tool_calls: [Object.assign({ index }, fields)],
});

/**
 * Two parallel calls whose headers come first and whose argument fragments interleave
 * by index (as vLLM and OpenAI write parallel calls).
 */
export const INTERLEAVED_CALLS = chatStream(
  [
    tool(0, { id: 'call_a1', type: 'function', function: { name: 'get_weather', arguments: '' } }),
    tool(1, { id: 'call_b2', type: 'function', function: { name: 'get_time', arguments: '' } }),
    tool(0, { function: { arguments: '{"ci' } }),
    tool(1, { function: { arguments: '{"tz":' } }),
    tool(0, { function: { arguments: 'ty": "東京' } }),
    tool(1, { function: { arguments: ' "Asia/Tokyo"}' } }),
    tool(0, { function: { arguments: ' 🗼"}' } }),
  ],
  'tool_calls',
);

export interface ScriptedGateway {
  url: string;
  upstream: ScriptServer;
  close(): Promise<void>;
}

/** The gateway over real sockets in front of a scripted OpenAI-chat upstream that writes `body`. */
export async function gatewayOver(body: string, dialects = ['openai-chat']): Promise<ScriptedGateway> {
  const upstream = await scriptServer({
    headers: { 'content-type': 'text/event-stream' },
    steps: [{ write: body }],
  });
  const gateway = createGateway({
    upstreams: [{ name: 'scripted', url: upstream.url, dialects: dialects as never, models: ['x'] }],
  });
  const served = await serve(gateway.fetch);
  return {
    url: served.url,
    upstream,
    async close() {
      await gateway.close();
      await served.close();
      await upstream.close();
    },
  };
}

const WEATHER_ARGS = { city: '東京 🗼' };
const TIME_ARGS = { tz: 'Asia/Tokyo' };

describe('Messages client, OpenAI-chat upstream', () => {
  it('33.1: interleaved parallel tool calls come out as two whole tool_use blocks', async () => {
    const g = await gatewayOver(INTERLEAVED_CALLS);
    try {
      const client = new Anthropic({ baseURL: g.url, apiKey: 'unused', maxRetries: 0 });
      const stream = client.messages.stream({
        model: 'x',
        max_tokens: 100,
        messages: [{ role: 'user', content: 'weather and time in Tokyo' }],
      });
      const message = await stream.finalMessage();
      assert.equal(message.stop_reason, 'tool_use');
      assert.deepEqual(
        message.content.map((block) =>
          block.type === 'tool_use' ? [block.id, block.name, block.input] : [block.type],
        ),
        [
          ['call_a1', 'get_weather', WEATHER_ARGS],
          ['call_b2', 'get_time', TIME_ARGS],
        ],
      );
      // On the wire: one block open at a time, each started, fed and stopped once.
      const response = await fetch(`${g.url}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'x',
          max_tokens: 100,
          stream: true,
          messages: [{ role: 'user', content: 'hi' }],
        }),
      });
      const frames = (await readSse(response)).frames.map(
        (frame) => JSON.parse(frame.data) as Record<string, unknown>,
      );
      const blockEvents = frames
        .filter((frame) => String(frame.type).startsWith('content_block_'))
        .map((frame) => `${frame.type}:${frame.index}`);
      const starts = blockEvents.filter((e) => e.startsWith('content_block_start'));
      assert.deepEqual(starts, ['content_block_start:0', 'content_block_start:1']);
      assert.ok(blockEvents.indexOf('content_block_stop:0') < blockEvents.indexOf('content_block_start:1'));
      assert.equal(blockEvents.filter((e) => e.startsWith('content_block_stop')).length, 2);
    } finally {
      await g.close();
    }
  });
});

describe('Messages client, an upstream that reports no usage', () => {
  const NO_USAGE = chatStream([{ content: 'Hel' }, { content: 'lo' }, { content: ' there' }], 'stop');

  it('message_delta always carries output_tokens (the count of content chunks); message_start says 0 input', async () => {
    const g = await gatewayOver(NO_USAGE);
    try {
      const response = await fetch(`${g.url}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'x',
          max_tokens: 10,
          stream: true,
          messages: [{ role: 'user', content: 'hi' }],
        }),
      });
      const frames = (await readSse(response)).frames;
      const start = JSON.parse(frames[0]!.data) as { message: { usage: Record<string, number> } };
      assert.deepEqual(start.message.usage, { input_tokens: 0, output_tokens: 0 });
      const delta = frames.find((frame) => frame.event === 'message_delta');
      assert.deepEqual((JSON.parse(delta!.data) as { usage: unknown }).usage, { output_tokens: 3 });

      const anthropic = createAnthropic({ baseURL: `${g.url}/v1`, apiKey: 'unused' });
      const result = streamText({ model: anthropic('x'), prompt: 'hello', maxOutputTokens: 10 });
      let text = '';
      for await (const part of result.textStream) text += part;
      assert.equal(text, 'Hello there');
      assert.equal(await result.finishReason, 'stop');
      assert.equal((await result.usage).outputTokens, 3);
    } finally {
      await g.close();
    }
  });
});

describe('Responses client, OpenAI-chat upstream with parallel tool calls', () => {
  it('writes each function_call item once: deltas by item, one done each, none after it', async () => {
    const g = await gatewayOver(INTERLEAVED_CALLS);
    try {
      const response = await fetch(`${g.url}/v1/responses`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'x', input: 'hi', stream: true }),
      });
      const events = (await readSse(response)).frames.map(
        (frame) => JSON.parse(frame.data) as Record<string, unknown> & { type: string; item_id?: string },
      );
      const added = events.filter((e) => e.type === 'response.output_item.added');
      assert.equal(added.length, 2);
      const ids = added.map((e) => (e.item as { id: string }).id);
      for (const id of ids) {
        const mine = events
          .map((e, i) => [e, i] as const)
          .filter(([e]) => e.item_id === id || (e.item as { id?: string } | undefined)?.id === id);
        const done = mine.filter(([e]) => e.type === 'response.output_item.done');
        assert.equal(done.length, 1, `${id}: one output_item.done`);
        assert.equal(mine.filter(([e]) => e.type === 'response.function_call_arguments.done').length, 1);
        const doneAt = done[0]![1];
        assert.ok(
          mine.every(([e, i]) => e.type !== 'response.function_call_arguments.delta' || i < doneAt),
          `${id}: no delta after done`,
        );
      }
      const sequence = events.map((e) => e.sequence_number);
      assert.deepEqual(
        sequence,
        events.map((_, i) => i),
      );

      const openai = new OpenAI({ baseURL: `${g.url}/v1`, apiKey: 'unused', maxRetries: 0 });
      const final = await openai.responses
        .stream({ model: 'x', input: 'weather and time in Tokyo' })
        .finalResponse();
      assert.deepEqual(
        final.output.map((item) =>
          item.type === 'function_call' ? [item.call_id, item.name, JSON.parse(item.arguments)] : [item.type],
        ),
        [
          ['call_a1', 'get_weather', WEATHER_ARGS],
          ['call_b2', 'get_time', TIME_ARGS],
        ],
      );

      const provider = createOpenAI({ baseURL: `${g.url}/v1`, apiKey: 'unused' });
      const result = streamText({ model: provider.responses('x'), prompt: 'weather and time in Tokyo' });
      for await (const _ of result.fullStream);
      assert.deepEqual(
        (await result.toolCalls).map((call) => [call.toolCallId, call.toolName, call.input]),
        [
          ['call_a1', 'get_weather', WEATHER_ARGS],
          ['call_b2', 'get_time', TIME_ARGS],
        ],
      );

      const own = await complete({ url: `${g.url}/v1/responses`, body: { model: 'x', input: 'hi' } });
      assert.equal(own.complete, true);
      assert.deepEqual(
        own.toolCalls.map((call) => [call.id, call.name, call.input]),
        [
          ['call_a1', 'get_weather', WEATHER_ARGS],
          ['call_b2', 'get_time', TIME_ARGS],
        ],
      );
    } finally {
      await g.close();
    }
  });
});

describe('Responses client, a reasoning answer', () => {
  // llama-server with `--reasoning-format deepseek`: reasoning_content deltas, then the answer.
  const REASONING = chatStream(
    [
      { reasoning_content: 'The user' },
      { reasoning_content: ' greets me.' },
      { content: 'Hello' },
      { content: '!' },
    ],
    'stop',
  );

  it('opens the reasoning part before its deltas, so responses.stream() reads it', async () => {
    const g = await gatewayOver(REASONING);
    try {
      const openai = new OpenAI({ baseURL: `${g.url}/v1`, apiKey: 'unused', maxRetries: 0 });
      const stream = openai.responses.stream({ model: 'x', input: 'hi' });
      const seen: string[] = [];
      stream.on('event', (event) => seen.push(event.type));
      const final = await stream.finalResponse();
      assert.equal(final.status, 'completed');
      assert.equal(final.output_text, 'Hello!');
      const reasoning = final.output[0];
      assert.equal(reasoning?.type, 'reasoning');
      assert.deepEqual(reasoning?.type === 'reasoning' ? reasoning.content : undefined, [
        { type: 'reasoning_text', text: 'The user greets me.' },
      ]);
      assert.deepEqual(seen.slice(2, 5), [
        'response.output_item.added',
        'response.content_part.added',
        'response.reasoning_text.delta',
      ]);
      assert.deepEqual(seen.slice(6, 9), [
        'response.reasoning_text.done',
        'response.content_part.done',
        'response.output_item.done',
      ]);
    } finally {
      await g.close();
    }
  });
});

describe('Responses whole answers', () => {
  it('a capped whole answer says incomplete as the stream does, has a resp_ id, and GET finds it', async () => {
    const g = await startGateway({ upstreamDialects: ['openai-chat'], simOverHttp: true });
    try {
      const url = `${g.url}/v1/responses`;
      const post = (body: Record<string, unknown>) =>
        fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      const whole = (await (await post({ model: 'sim', input: 'hi', max_output_tokens: 4 })).json()) as {
        id: string;
        status: string;
        incomplete_details: unknown;
        output: { type: string; status: string }[];
      };
      assert.equal(whole.status, 'incomplete');
      assert.deepEqual(whole.incomplete_details, { reason: 'max_output_tokens' });
      assert.deepEqual(
        whole.output.map((item) => [item.type, item.status]),
        [['message', 'incomplete']],
      );
      assert.match(whole.id, /^resp_/);
      const retrieved = await fetch(`${url}/${whole.id}`);
      assert.equal(retrieved.status, 200);
      assert.deepEqual(await retrieved.json(), whole);

      // The same request streamed: response.incomplete, and the cut message's item done as incomplete.
      const streamed = (
        await readSse(await post({ model: 'sim', input: 'hi', max_output_tokens: 4, stream: true }))
      ).frames;
      const terminal = JSON.parse(streamed.at(-1)!.data) as {
        type: string;
        response: { status: string; output: { status: string }[] };
      };
      assert.equal(terminal.type, 'response.incomplete');
      assert.deepEqual(
        terminal.response.output.map((item) => item.status),
        ['incomplete'],
      );
      const itemDone = streamed.filter((frame) => frame.event === 'response.output_item.done');
      assert.deepEqual(
        itemDone.map((frame) => (JSON.parse(frame.data) as { item: { status: string } }).item.status),
        ['incomplete'],
      );

      // A complete whole answer is completed; store: false is not retrievable.
      const done = (await (await post({ model: 'sim', input: 'hi', max_output_tokens: 400 })).json()) as {
        id: string;
        status: string;
      };
      assert.equal(done.status, 'completed');
      assert.equal((await fetch(`${url}/${done.id}`)).status, 200);
      const unstored = (await (
        await post({ model: 'sim', input: 'hi', max_output_tokens: 4, store: false })
      ).json()) as {
        id: string;
      };
      assert.match(unstored.id, /^resp_/);
      const missing = await fetch(`${url}/${unstored.id}`);
      assert.equal(missing.status, 404);
    } finally {
      await g.close();
    }
  });
});

describe('Responses whole answers from a llama-server Responses upstream', () => {
  it('a capped answer (p01: "completed" at 16 of 16 tokens) is incomplete whole as it is streamed, and retrievable', async () => {
    const g = await gatewayOver(
      new TextDecoder().decode(readFixture('real-captures/llamacpp-b10108/p01-responses-stream.sse')),
      ['openai-responses'],
    );
    try {
      const body = { model: 'x', input: 'hello', max_output_tokens: 16 };
      const whole = (await (
        await fetch(`${g.url}/v1/responses`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        })
      ).json()) as { id: string; status: string; incomplete_details: unknown; output_text?: string };
      assert.equal(whole.status, 'incomplete');
      assert.deepEqual(whole.incomplete_details, { reason: 'max_output_tokens' });
      assert.match(whole.id, /^resp_/);
      assert.equal((await fetch(`${g.url}/v1/responses/${whole.id}`)).status, 200);
      // The upstream was asked to stream (the gateway folds its answer).
      assert.equal(JSON.parse(g.upstream.requests[0]!.body).stream, true);
      const streamed = (
        await readSse(
          await fetch(`${g.url}/v1/responses`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(Object.assign({ stream: true }, body)),
          }),
        )
      ).frames;
      assert.equal(streamed.at(-1)?.event, 'response.incomplete');
    } finally {
      await g.close();
    }
  });
});
