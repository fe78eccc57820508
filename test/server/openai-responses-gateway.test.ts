import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { complete } from '../../src/client/token-stream.ts';
import { serve } from '../../src/node/serve.ts';
import { createGateway } from '../../src/server/create-gateway.ts';
import { startGateway, type TestGateway } from '../helpers/gateway.ts';
import { readFixture } from '../helpers/paths.ts';
import { scriptServer } from '../helpers/script-server.ts';

const WEATHER_TOOL = {
  type: 'function' as const,
  name: 'get_weather',
  description: 'weather of a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  strict: false,
};

/**
 * `POST /v1/responses` end to end: the `openai` SDK, unchanged, against the gateway on the simulator,
 * in the same dialect and translated from other upstream dialects.
 */
describe('gateway: OpenAI Responses clients', () => {
  let direct: TestGateway;
  let fromOllama: TestGateway;
  let fromChat: TestGateway;
  before(async () => {
    direct = await startGateway();
    fromOllama = await startGateway({ upstreamDialects: ['ollama-chat'], simOverHttp: true });
    fromChat = await startGateway({ upstreamDialects: ['openai-chat'], simOverHttp: true });
  });
  after(async () => {
    await direct?.close();
    await fromOllama?.close();
    await fromChat?.close();
  });

  for (const [label, pick] of [
    ['same dialect', () => direct],
    ['from ollama-chat', () => fromOllama],
    ['from openai-chat', () => fromChat],
  ] as const) {
    it(`responses.stream(): text ending in response.incomplete at max_output_tokens (${label})`, async () => {
      const client = new OpenAI({ baseURL: `${pick().url}/v1`, apiKey: 'unused' });
      const stream = client.responses.stream({
        model: 'sim',
        input: 'Tell me about Reykjavík',
        max_output_tokens: 12,
      });
      let deltas = '';
      const types: string[] = [];
      for await (const event of stream) {
        types.push(event.type);
        if (event.type === 'response.output_text.delta') deltas += event.delta;
      }
      const final = await stream.finalResponse();
      assert.equal(types[0], 'response.created');
      assert.equal(types.at(-1), 'response.incomplete');
      assert.equal(final.status, 'incomplete');
      assert.equal(final.incomplete_details?.reason, 'max_output_tokens');
      assert.ok(deltas.length > 0);
      assert.equal(final.output_text, deltas);
      assert.equal(final.usage?.output_tokens, 12);
    });

    it(`responses.stream(): an answer that ends by itself is response.completed (${label})`, async () => {
      const client = new OpenAI({ baseURL: `${pick().url}/v1`, apiKey: 'unused' });
      const stream = client.responses.stream({ model: 'sim', input: 'Hi', max_output_tokens: 1000 });
      const final = await stream.finalResponse();
      assert.equal(final.status, 'completed');
      assert.equal(final.incomplete_details, null);
      assert.ok(final.output_text.length > 0);
      assert.ok((final.usage?.output_tokens ?? 0) < 1000);
    });

    it(`responses.create({stream: true}): a function call (${label})`, async () => {
      const client = new OpenAI({ baseURL: `${pick().url}/v1`, apiKey: 'unused' });
      const stream = await client.responses.create({
        model: 'sim',
        input: 'What is the weather in Paris?',
        tools: [WEATHER_TOOL],
        stream: true,
      });
      let argumentDeltas = '';
      let final: OpenAI.Responses.Response | undefined;
      const numbers: number[] = [];
      for await (const event of stream) {
        numbers.push(event.sequence_number);
        if (event.type === 'response.function_call_arguments.delta') argumentDeltas += event.delta;
        if (event.type === 'response.completed') final = event.response;
      }
      assert.deepEqual(
        numbers,
        numbers.map((_, i) => i),
        'sequence_number from 0 without gaps',
      );
      const call = final?.output.find((item) => item.type === 'function_call');
      assert.equal(call?.type, 'function_call');
      if (call?.type !== 'function_call') return;
      assert.equal(call.name, 'get_weather');
      assert.equal(call.arguments, argumentDeltas);
      assert.equal(typeof JSON.parse(call.arguments).city, 'string');
      assert.ok(call.call_id.length > 0);
    });
  }

  it('responses.stream() reads the function call too (finalResponse output and the done event)', async () => {
    const client = new OpenAI({ baseURL: `${direct.url}/v1`, apiKey: 'unused' });
    const stream = client.responses.stream({
      model: 'sim',
      input: 'Weather in Oslo?',
      tools: [WEATHER_TOOL],
    });
    let doneArguments: string | undefined;
    stream.on('response.function_call_arguments.done', (event) => {
      doneArguments = event.arguments;
    });
    const final = await stream.finalResponse();
    const call = final.output.find((item) => item.type === 'function_call');
    assert.equal(call?.type === 'function_call' ? call.arguments : undefined, doneArguments);
    assert.equal(final.status, 'completed');
  });

  it('answers stream: false with one Response object: incomplete at the cap, a function call item', async () => {
    const client = new OpenAI({ baseURL: `${direct.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const capped = await client.responses.create({ model: 'sim', input: 'Hi', max_output_tokens: 10 });
    assert.equal(capped.object, 'response');
    assert.equal(capped.status, 'incomplete');
    assert.equal(capped.incomplete_details?.reason, 'max_output_tokens');
    assert.ok(capped.output_text.length > 0);
    assert.equal(capped.usage?.output_tokens, 10);
    const called = await client.responses.create({ model: 'sim', input: 'Weather?', tools: [WEATHER_TOOL] });
    assert.equal(called.status, 'completed');
    const call = called.output.find((item) => item.type === 'function_call');
    assert.equal(call?.type === 'function_call' ? call.name : undefined, 'get_weather');
  });

  it('refuses previous_response_id with a 400 naming the field, in the OpenAI error shape', async () => {
    const client = new OpenAI({ baseURL: `${direct.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    await assert.rejects(
      client.responses.create({
        model: 'sim',
        input: 'more',
        previous_response_id: 'resp_123',
        stream: true,
      }),
      (error: unknown) =>
        error instanceof OpenAI.BadRequestError && /previous_response_id/.test(error.message),
    );
  });

  it("stream()/complete() read the gateway's Responses stream; a cut before the terminal event is incomplete", async () => {
    const url = `${direct.url}/v1/responses`;
    const whole = await complete({ url, body: { model: 'sim', input: 'Hello', max_output_tokens: 8 } });
    assert.equal(whole.dialect, 'openai-responses');
    assert.equal(whole.complete, true);
    assert.equal(whole.truncated, true);
    assert.equal(whole.usage?.outputTokens, 8);
    // Cut before the terminal event, through the gateway: said so in the client's dialect.
    const relayed = await complete({
      url,
      body: { model: 'sim@cut-after=3', input: 'Hello', max_output_tokens: 8 },
    });
    assert.equal(relayed.complete, false);
    assert.equal(relayed.truncated, false);
  });

  it('a Responses stream cut before its terminal event is incomplete, with its partial text kept', async () => {
    const capture = new TextDecoder().decode(
      readFixture('real-captures/llamacpp-b10108/p01-responses-stream.sse'),
    );
    const head = capture.slice(0, capture.indexOf('event: response.output_text.done'));
    const upstream = await scriptServer({
      headers: { 'content-type': 'text/event-stream' },
      // The connection breaks after the last delta: no done events, no response.completed.
      steps: [{ write: head }, { wait: 50 }, { destroy: true }],
    });
    try {
      const cut = await complete({
        url: `${upstream.url}/v1/responses`,
        body: { model: 'x', input: 'hello' },
      });
      assert.equal(cut.dialect, 'openai-responses');
      assert.equal(cut.complete, false);
      assert.equal(cut.incomplete, 'connection-closed');
      assert.equal(cut.finishReason, undefined);
      assert.equal(cut.text, 'Effectéb Ludwig},nake награogen debuggingále basicallyEladлькоić mois("#');
    } finally {
      await upstream.close();
    }
  });
});

describe('gateway: a llama-server Responses upstream, for the SDK', () => {
  it("rewrites llama-server's bytes (p07: no sequence_number, items closed late) in the shape the SDK reads", async () => {
    const capture = readFixture('real-captures/llamacpp-b10108/p07-responses-stream-tools.sse');
    const upstream = await scriptServer({
      headers: { 'content-type': 'text/event-stream', server: 'llama.cpp' },
      steps: [{ write: capture }],
    });
    const gateway = createGateway({
      upstreams: [{ name: 'llama', url: upstream.url, dialects: ['openai-responses'], models: ['x'] }],
    });
    const served = await serve(gateway.fetch);
    try {
      const client = new OpenAI({ baseURL: `${served.url}/v1`, apiKey: 'unused' });
      const stream = client.responses.stream({
        model: 'x',
        input: 'What is the weather in Paris?',
        tools: [WEATHER_TOOL],
      });
      const final = await stream.finalResponse();
      assert.equal(final.status, 'completed');
      assert.match(final.output_text, /^wirk afteruttlibs/);
      const call = final.output.find((item) => item.type === 'function_call');
      assert.deepEqual(
        call?.type === 'function_call' ? [call.call_id, call.name, JSON.parse(call.arguments)] : [],
        ['call_kALABackP4OSeMxrK2K9dutM0lSO9GUz', 'get_weather', { city: 'Paris' }],
      );
      assert.equal(final.usage?.output_tokens, 84);
      assert.equal(JSON.parse(upstream.requests[0]!.body).input, 'What is the weather in Paris?');
    } finally {
      await gateway.close();
      await served.close();
      await upstream.close();
    }
  });
});
