import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { streamText } from 'ai';
import { startGateway, type TestGateway } from '../helpers/gateway.ts';

/**
 * The AI SDK's own Anthropic provider (`@ai-sdk/anthropic` 3, on `/v1/messages`) and OpenAI Responses
 * provider (`@ai-sdk/openai` 3, `openai.responses()`, on `/v1/responses`) — the newest majors that install
 * on Node 20 (4.x needs Node 22) — unchanged against the gateway, on the simulator in their own dialect
 * and translated from an upstream that speaks only Ollama's native chat.
 */
describe('AI SDK providers (Anthropic Messages, OpenAI Responses) against the gateway', () => {
  let direct: TestGateway;
  let translated: TestGateway;
  before(async () => {
    direct = await startGateway();
    translated = await startGateway({ upstreamDialects: ['ollama-chat'], simOverHttp: true });
  });
  after(async () => {
    await direct?.close();
    await translated?.close();
  });

  for (const [label, pick] of [
    ['same dialect', () => direct],
    ['translated from ollama-chat', () => translated],
  ] as const) {
    it(`@ai-sdk/anthropic: streamText, finish reason and usage (${label})`, async () => {
      const anthropic = createAnthropic({ baseURL: `${pick().url}/v1`, apiKey: 'unused' });
      const result = streamText({ model: anthropic('sim'), prompt: 'hello', maxOutputTokens: 16 });
      let text = '';
      for await (const part of result.textStream) text += part;
      assert.ok(text.length > 0);
      assert.equal(await result.finishReason, 'length');
      const usage = await result.usage;
      assert.equal(usage.outputTokens, 16);
      assert.ok((usage.inputTokens ?? 0) > 0);
    });

    it(`@ai-sdk/openai responses(): streamText, finish reason and usage (${label})`, async () => {
      const openai = createOpenAI({ baseURL: `${pick().url}/v1`, apiKey: 'unused' });
      const result = streamText({ model: openai.responses('sim'), prompt: 'hello', maxOutputTokens: 16 });
      let text = '';
      for await (const part of result.textStream) text += part;
      assert.ok(text.length > 0);
      assert.equal(await result.finishReason, 'length');
      const usage = await result.usage;
      assert.equal(usage.outputTokens, 16);
    });
  }
});
