import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { textGenerationStream } from '@huggingface/inference';
import { streamText } from 'ai';
import { Ollama } from 'ollama';
import OpenAI from 'openai';
import { startGateway, type TestGateway } from '../helpers/gateway.ts';

/**
 * The official clients, unchanged, against the gateway: each against the simulator in its own dialect
 * (no translation) and through a translated path (the upstream speaks only another dialect).
 */
describe('official SDKs against the gateway', () => {
  let direct: TestGateway;
  let translated: TestGateway;
  before(async () => {
    direct = await startGateway();
    // Upstream speaks only Ollama's native chat: every OpenAI/TGI request is translated.
    translated = await startGateway({
      upstreamDialects: ['ollama-chat', 'ollama-generate'],
      simOverHttp: true,
    });
  });
  after(async () => {
    await direct?.close();
    await translated?.close();
  });

  for (const [label, pick] of [
    ['same dialect', () => direct],
    ['translated', () => translated],
  ] as const) {
    it(`openai: chat stream with include_usage (${label})`, async () => {
      const client = new OpenAI({ baseURL: `${pick().url}/v1`, apiKey: 'unused' });
      const stream = await client.chat.completions.create({
        model: 'sim',
        messages: [{ role: 'user', content: 'Tell me about Reykjavík' }],
        max_tokens: 24,
        stream: true,
        stream_options: { include_usage: true },
      });
      let text = '';
      let finish: string | null | undefined;
      let usage: OpenAI.CompletionUsage | undefined | null;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? '';
        finish = chunk.choices[0]?.finish_reason ?? finish;
        if (chunk.usage) usage = chunk.usage;
      }
      assert.ok(text.length > 0);
      assert.equal(finish, 'length');
      assert.equal(usage?.completion_tokens, 24);
      assert.ok((usage?.prompt_tokens ?? 0) > 0);
    });

    it(`openai: completions stream (${label})`, async () => {
      const client = new OpenAI({ baseURL: `${pick().url}/v1`, apiKey: 'unused' });
      const stream = await client.completions.create({
        model: 'sim',
        prompt: 'Once upon a time',
        max_tokens: 10,
        stream: true,
      });
      let text = '';
      let finish: string | null | undefined;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.text ?? '';
        finish = chunk.choices[0]?.finish_reason ?? finish;
      }
      assert.ok(text.length > 0);
      assert.equal(finish, 'length');
    });

    it(`openai: streamed tool calls (${label})`, async () => {
      const client = new OpenAI({ baseURL: `${pick().url}/v1`, apiKey: 'unused' });
      const runner = client.chat.completions.stream({
        model: 'sim',
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
        tools: [
          {
            type: 'function',
            function: {
              name: 'get_weather',
              parameters: {
                type: 'object',
                properties: { city: { type: 'string' }, days: { type: 'integer' } },
                required: ['city'],
              },
            },
          },
        ],
      });
      const final = await runner.finalChatCompletion();
      const call = final.choices[0]?.message.tool_calls?.[0];
      assert.equal(call?.type, 'function');
      assert.equal(call?.type === 'function' ? call.function.name : '', 'get_weather');
      const args = JSON.parse(call?.type === 'function' ? call.function.arguments : '{}');
      assert.equal(typeof args.city, 'string');
      assert.equal(final.choices[0]?.finish_reason, 'tool_calls');
    });

    it(`openai: a non-streaming request gets one JSON answer (${label})`, async () => {
      const client = new OpenAI({ baseURL: `${pick().url}/v1`, apiKey: 'unused' });
      const answer = await client.chat.completions.create({
        model: 'sim',
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 8,
      });
      assert.ok((answer.choices[0]?.message.content ?? '').length > 0);
      assert.equal(answer.usage?.completion_tokens, 8);
    });
  }

  for (const [label, pick] of [
    ['same dialect', () => direct],
    ['translated from openai-chat', () => openAiOnly],
  ] as const) {
    it(`ollama: chat and generate streams (${label})`, async () => {
      const ollama = new Ollama({ host: pick().url });
      let text = '';
      let last: { done_reason?: string; eval_count?: number; prompt_eval_count?: number } | undefined;
      for await (const part of await ollama.chat({
        model: 'sim',
        messages: [{ role: 'user', content: 'hello' }],
        stream: true,
        options: { num_predict: 12 },
      })) {
        text += part.message.content;
        if (part.done) last = part;
      }
      assert.ok(text.length > 0);
      assert.equal(last?.done_reason, 'length');
      assert.equal(last?.eval_count, 12);
      let generated = '';
      for await (const part of await ollama.generate({
        model: 'sim',
        prompt: 'hello',
        stream: true,
        options: { num_predict: 6 },
      })) {
        generated += part.response;
      }
      assert.ok(generated.length > 0);
      const whole = await ollama.chat({
        model: 'sim',
        messages: [{ role: 'user', content: 'hi' }],
        options: { num_predict: 5 },
      });
      assert.ok(whole.message.content.length > 0);
      assert.equal(whole.done, true);
    });
  }

  let openAiOnly: TestGateway;
  before(async () => {
    openAiOnly = await startGateway({
      upstreamDialects: ['openai-chat', 'openai-completions'],
      simOverHttp: true,
    });
  });
  after(async () => {
    await openAiOnly?.close();
  });

  let tgiOnly: TestGateway;
  before(async () => {
    tgiOnly = await startGateway({ upstreamDialects: ['tgi'], simOverHttp: true });
  });
  after(async () => {
    await tgiOnly?.close();
  });

  // @huggingface/inference 4 sends textGenerationStream to `<endpoint>/v1/completions` and yields the
  // completion chunks as they come (its typings still say TGI token events), so that is what is checked.
  for (const [label, pick] of [
    ['same dialect', () => direct],
    ['translated to a TGI-only upstream', () => tgiOnly],
  ] as const) {
    it(`@huggingface/inference: textGenerationStream with an endpoint URL (${label})`, async () => {
      let text = '';
      let finish: string | null | undefined;
      for await (const output of textGenerationStream({
        endpointUrl: pick().url,
        inputs: 'hello',
        parameters: { max_new_tokens: 10 },
      })) {
        const chunk = output as unknown as { choices?: { text?: string; finish_reason?: string | null }[] };
        text += chunk.choices?.[0]?.text ?? '';
        finish = chunk.choices?.[0]?.finish_reason ?? finish;
      }
      assert.ok(text.length > 0);
      assert.equal(finish, 'length');
    });
  }

  for (const [label, pick] of [
    ['same dialect', () => direct],
    ['translated', () => translated],
  ] as const) {
    it(`ai SDK: streamText with @ai-sdk/openai-compatible (${label})`, async () => {
      const provider = createOpenAICompatible({
        name: 'tokenwire',
        baseURL: `${pick().url}/v1`,
        includeUsage: true,
      });
      const result = streamText({ model: provider.chatModel('sim'), prompt: 'hello', maxOutputTokens: 16 });
      let text = '';
      for await (const part of result.textStream) text += part;
      assert.ok(text.length > 0);
      assert.equal(await result.finishReason, 'length');
      const usage = await result.usage;
      assert.equal(usage.outputTokens, 16);
    });
  }
});
