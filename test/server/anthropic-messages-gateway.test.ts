import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { complete } from '../../src/client/token-stream.ts';
import { startGateway, type TestGateway } from '../helpers/gateway.ts';
import { readSse } from '../helpers/sse-read.ts';

const WEATHER_TOOL = {
  name: 'get_weather',
  description: 'The weather in a city',
  input_schema: {
    type: 'object' as const,
    properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] } },
    required: ['city'],
  },
};

/**
 * `@anthropic-ai/sdk`, unchanged, against the gateway's `/v1/messages`: on the simulator in its own
 * dialect, and translated from two other upstream dialects (OpenAI chat, Ollama chat).
 */
describe('@anthropic-ai/sdk against the gateway', () => {
  const gateways: Record<string, TestGateway> = {};
  before(async () => {
    gateways.direct = await startGateway();
    gateways['from openai-chat'] = await startGateway({
      upstreamDialects: ['openai-chat'],
      simOverHttp: true,
    });
    gateways['from ollama-chat'] = await startGateway({ upstreamDialects: ['ollama-chat'] });
  });
  after(async () => {
    for (const gateway of Object.values(gateways)) await gateway.close();
  });

  const client = (label: string) =>
    new Anthropic({ baseURL: gateways[label]!.url, apiKey: 'unused', maxRetries: 0 });

  for (const label of ['direct', 'from openai-chat', 'from ollama-chat']) {
    it(`messages.stream(): text, max_tokens, usage (${label})`, async () => {
      const stream = client(label).messages.stream({
        model: 'sim',
        max_tokens: 24,
        messages: [{ role: 'user', content: 'Tell me about Reykjavík' }],
      });
      let text = '';
      stream.on('text', (delta) => {
        text += delta;
      });
      const message = await stream.finalMessage();
      assert.ok(text.length > 0);
      assert.equal(message.stop_reason, 'max_tokens');
      assert.equal(message.usage.output_tokens, 24);
      assert.ok(message.usage.input_tokens > 0, `input_tokens ${message.usage.input_tokens}`);
      assert.equal(message.content.length, 1);
      const block = message.content[0]!;
      assert.equal(block.type === 'text' && block.text, text);
    });

    it(`messages.stream(): a tool call, inputJson fragments and the parsed input (${label})`, async () => {
      const params: Anthropic.MessageStreamParams = {
        model: 'sim',
        max_tokens: 400,
        tools: [WEATHER_TOOL],
        tool_choice: { type: 'any' },
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
      };
      // Ollama's chat has no tool_choice: the request allows dropping it (LiteLLM's `drop_params`).
      const stream = client(label).messages.stream(
        label === 'from ollama-chat'
          ? ({ ...params, drop_params: true } as Anthropic.MessageStreamParams)
          : params,
      );
      const fragments: string[] = [];
      stream.on('inputJson', (partial) => {
        fragments.push(partial);
      });
      const message = await stream.finalMessage();
      assert.equal(message.stop_reason, 'tool_use');
      const call = message.content.find((block) => block.type === 'tool_use');
      assert.ok(call !== undefined && call.type === 'tool_use');
      assert.equal(call.name, 'get_weather');
      assert.ok(call.id.length > 0);
      assert.equal(typeof (call.input as { city?: unknown }).city, 'string');
      if (label !== 'from ollama-chat') assert.ok(fragments.length > 1, `fragments: ${fragments.length}`);
      assert.deepEqual(JSON.parse(fragments.join('')), call.input);
    });
  }

  // OpenAI's chat takes only an effort word (`thinking` is a yes): Ollama's `think` carries it.
  for (const label of ['direct', 'from ollama-chat']) {
    it(`messages.stream(): thinking, then text (${label})`, async () => {
      // Ollama's chat has no thinking budget: dropped on request.
      const stream = client(label).messages.stream({
        model: 'sim',
        max_tokens: 200,
        thinking: { type: 'enabled', budget_tokens: 1024 },
        messages: [{ role: 'user', content: 'Think first' }],
        ...(label === 'direct' ? {} : { drop_params: true }),
      } as Anthropic.MessageStreamParams);
      let thinking = '';
      stream.on('thinking', (delta) => {
        thinking += delta;
      });
      const message = await stream.finalMessage();
      assert.ok(thinking.length > 0);
      assert.equal(message.content[0]?.type, 'thinking');
      assert.equal(message.content[0]?.type === 'thinking' && message.content[0].thinking, thinking);
      assert.ok(message.content.some((block) => block.type === 'text'));
    });
  }

  it('answers a request without max_tokens with a 400 in Anthropic’s shape, naming it', async () => {
    const response = await fetch(`${gateways.direct!.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(response.status, 400);
    const body = (await response.json()) as { type: string; error: { type: string; message: string } };
    assert.equal(body.type, 'error');
    assert.equal(body.error.type, 'invalid_request_error');
    assert.match(body.error.message, /max_tokens/);
    await assert.rejects(
      // The SDK's own types require max_tokens: sent as the SDK sends any body.
      client('direct').messages.create({
        model: 'sim',
        messages: [{ role: 'user', content: 'hi' }],
      } as never),
      (error: unknown) => error instanceof Anthropic.BadRequestError && error.status === 400,
    );
  });

  it('refuses, in Anthropic’s shape, a field the upstream’s dialect cannot carry', async () => {
    await assert.rejects(
      client('from openai-chat').messages.create({
        model: 'sim',
        max_tokens: 50,
        thinking: { type: 'enabled', budget_tokens: 1024 },
        messages: [{ role: 'user', content: 'hi' }],
      }),
      (error: unknown) =>
        error instanceof Anthropic.BadRequestError &&
        error.type === 'invalid_request_error' &&
        /thinking\.budget_tokens/.test(error.message),
    );
  });

  it('writes `event:` names, SSE ids and message_stop; a cut upstream ends with `event: error`', async () => {
    const url = `${gateways['from openai-chat']!.url}/v1/messages`;
    const body = { model: 'sim', max_tokens: 12, stream: true, messages: [{ role: 'user', content: 'hi' }] };
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const events = (await readSse(response)).frames;
    assert.equal(events[0]?.event, 'message_start');
    assert.equal(events.at(-1)?.event, 'message_stop');
    for (const event of events) {
      assert.equal(JSON.parse(event.data).type, event.event);
      assert.ok(event.id !== undefined && event.id !== '');
    }
    const cut = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-tokenwire-fault': 'cut-after=3' },
      body: JSON.stringify(body),
    });
    const cutEvents = (await readSse(cut)).frames;
    assert.equal(cutEvents.at(-1)?.event, 'error');
    assert.ok(!cutEvents.some((event) => event.event === 'message_stop'));
    const sdk = client('from openai-chat').messages.stream(
      { model: 'sim', max_tokens: 12, messages: [{ role: 'user', content: 'hi' }] },
      { headers: { 'x-tokenwire-fault': 'cut-after=3' } },
    );
    await assert.rejects(sdk.finalMessage());
  });

  it('puts the prompt count in message_start, as the real servers do (the simulator, relayed as it is)', async () => {
    for (const url of [`${gateways.direct!.url}/v1/messages`]) {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'sim',
          max_tokens: 5,
          stream: true,
          messages: [{ role: 'user', content: 'hi' }],
        }),
      });
      const frames = (await readSse(response)).frames;
      const start = JSON.parse(frames[0]!.data) as { message: { usage: { input_tokens: number } } };
      assert.ok(start.message.usage.input_tokens > 0);
      const delta = JSON.parse(frames.at(-2)!.data) as { usage: Record<string, number> };
      assert.deepEqual(Object.keys(delta.usage), ['output_tokens']);
    }
    const sim = await gateways.direct!.sim.fetch(
      new Request('http://sim.test/v1/messages', {
        method: 'POST',
        body: JSON.stringify({
          model: 'sim',
          max_tokens: 5,
          stream: true,
          messages: [{ role: 'user', content: 'hi' }],
        }),
      }),
    );
    const simFrames = (await readSse(sim)).frames;
    assert.equal(simFrames[0]!.event, 'message_start');
    assert.ok(JSON.parse(simFrames[0]!.data).message.usage.input_tokens > 0);
    assert.equal(simFrames.at(-1)!.event, 'message_stop');
  });

  it('answers stream: false with one Message object', async () => {
    for (const label of ['direct', 'from openai-chat']) {
      const message = await client(label).messages.create({
        model: 'sim',
        max_tokens: 8,
        messages: [{ role: 'user', content: 'hi' }],
      });
      assert.equal(message.type, 'message', label);
      assert.equal(message.stop_reason, 'max_tokens', label);
      assert.equal(message.usage.output_tokens, 8, label);
      assert.ok(message.usage.input_tokens > 0, label);
      assert.equal(message.content[0]?.type, 'text', label);
    }
  });

  it('resumes a cut Messages stream from Last-Event-ID with its event names: nothing lost, nothing repeated', async () => {
    const g = await startGateway({
      gateway: { keepStreamOnDisconnect: true },
      sim: { timing: { tokensPerSecond: 200, loadMs: 0 } },
    });
    try {
      const url = `${g.url}/v1/messages`;
      const body = JSON.stringify({
        model: 'sim',
        max_tokens: 20,
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
      });
      const init = (headers: Record<string, string> = {}) => ({
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body,
      });
      const first = await readSse(await fetch(url, init()), (frames) => frames.length >= 5);
      const lastId = first.frames.at(-1)!.id!;
      const resumed = await readSse(await fetch(url, init({ 'last-event-id': lastId })));
      const all = [...first.frames, ...resumed.frames];
      const seqs = all.map((f) => Number(f.id!.split('.')[1]));
      assert.deepEqual(
        seqs,
        seqs.map((_, i) => i + 1),
      );
      for (const frame of all) assert.equal(JSON.parse(frame.data).type, frame.event);
      const wire = all.map((f) => `event: ${f.event}\ndata: ${f.data}\n\n`).join('');
      const result = await complete(
        { url: 'http://replay.test/v1/messages', body: {} },
        { fetch: async () => new Response(wire, { headers: { 'content-type': 'text/event-stream' } }) },
      );
      assert.equal(result.complete, true);
      assert.equal(result.usage?.outputTokens, 20);
    } finally {
      await g.close();
    }
  });

  it('is read back by tokenwire’s own client as complete, truncated, with the token counts', async () => {
    const result = await complete({
      url: `${gateways['from ollama-chat']!.url}/v1/messages`,
      body: { model: 'sim', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] },
    });
    assert.equal(result.dialect, 'anthropic-messages');
    assert.equal(result.complete, true);
    assert.equal(result.truncated, true);
    assert.equal(result.usage?.outputTokens, 10);
    assert.ok((result.usage?.inputTokens ?? 0) > 0);
  });

  it('serves an OpenAI client in front of an Anthropic-only upstream', async () => {
    const gateway = await startGateway({ upstreamDialects: ['anthropic-messages'], simOverHttp: true });
    try {
      const result = await complete({
        url: `${gateway.url}/v1/chat/completions`,
        body: {
          model: 'sim',
          max_tokens: 9,
          messages: [{ role: 'user', content: 'hi' }],
          stream_options: { include_usage: true },
        },
      });
      assert.equal(result.complete, true);
      assert.equal(result.finishReason, 'length');
      assert.equal(result.usage?.outputTokens, 9);
      assert.ok(result.text.length > 0);
    } finally {
      await gateway.close();
    }
  });
});
