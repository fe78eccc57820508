import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Ollama } from 'ollama';
import OpenAI from 'openai';
import { serve } from '../../src/node/serve.ts';
import { createGateway } from '../../src/server/create-gateway.ts';
import { startGateway, type TestGateway } from '../helpers/gateway.ts';
import { scriptServer } from '../helpers/script-server.ts';

/** A 1×1 PNG, base64. */
const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const SCHEMA = {
  type: 'object',
  properties: { colour: { type: 'string' } },
  required: ['colour'],
};

/** A vLLM-like completions upstream serving choices 0 and 1 interleaved, with legacy logprobs. */
function twoChoiceCompletionsStream() {
  const piece = (index: number, text: string, logprob: number, alternative: string) =>
    `data: ${JSON.stringify({
      id: 'cmpl-1',
      object: 'text_completion',
      created: 1767225600,
      model: 'm',
      choices: [
        {
          index,
          text,
          logprobs: {
            text_offset: [0],
            token_logprobs: [logprob],
            tokens: [text],
            top_logprobs: [{ [text]: logprob, [alternative]: logprob - 1 }],
          },
          finish_reason: null,
          stop_reason: null,
        },
      ],
      usage: null,
    })}\n\n`;
  const finish = (index: number) =>
    `data: ${JSON.stringify({
      id: 'cmpl-1',
      object: 'text_completion',
      created: 1767225600,
      model: 'm',
      choices: [{ index, text: '', logprobs: null, finish_reason: 'length', stop_reason: null }],
      usage: null,
    })}\n\n`;
  return {
    headers: { 'content-type': 'text/event-stream' },
    steps: [
      {
        write:
          piece(0, 'Hi', -0.5, 'Hey') +
          piece(1, 'Yo', -0.25, 'Oh') +
          piece(0, ' there', -1.5, ' you') +
          piece(1, ' man', -2, ' dude') +
          finish(0) +
          finish(1) +
          'data: [DONE]\n\n',
      },
    ],
  };
}

interface Seen {
  path: string;
  body: Record<string, unknown>;
}

/**
 * Request translation through the gateway: the official clients' structured output, images,
 * the developer role and the reasoning switch reach an upstream of another dialect as that dialect's
 * own fields (the simulator over HTTP, reached through a fetch that records what was sent), and what
 * has no counterpart is a 400 before anything is sent.
 */
describe('translated request fields through the gateway', () => {
  let openAiUp: TestGateway;
  let ollamaUp: TestGateway;
  const seen: Seen[] = [];

  const recording = async (request: Request): Promise<Response> => {
    seen.push({
      path: new URL(request.url).pathname,
      body: (await request.clone().json()) as Record<string, unknown>,
    });
    return fetch(request);
  };

  before(async () => {
    openAiUp = await startGateway({
      simOverHttp: true,
      upstreamDialects: ['openai-chat'],
      upstreamFetch: recording,
    });
    ollamaUp = await startGateway({
      simOverHttp: true,
      upstreamDialects: ['ollama-chat'],
      upstreamFetch: recording,
    });
  });

  after(async () => {
    await openAiUp?.close();
    await ollamaUp?.close();
  });

  /** The one upstream request a step made. */
  async function sentBy(step: () => Promise<unknown>): Promise<Seen> {
    const before = seen.length;
    await step();
    assert.equal(seen.length, before + 1, 'one upstream request');
    return seen[seen.length - 1]!;
  }

  it('ollama client: format (a JSON schema) and images reach an openai-chat upstream as response_format and image_url parts', async () => {
    const ollama = new Ollama({ host: openAiUp.url });
    let text = '';
    const sent = await sentBy(async () => {
      const parts = await ollama.chat({
        model: 'sim',
        messages: [{ role: 'user', content: 'What colour is this?', images: [PNG] }],
        format: SCHEMA,
        options: { num_predict: 4, repeat_penalty: 1.1, min_p: 0.05 },
        think: false,
        stream: true,
      });
      for await (const part of parts) text += part.message.content;
    });
    assert.ok(text.length > 0);
    assert.equal(sent.path, '/v1/chat/completions');
    assert.deepEqual(sent.body.response_format, {
      type: 'json_schema',
      json_schema: { name: 'response', schema: SCHEMA },
    });
    assert.deepEqual(sent.body.messages, [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What colour is this?' },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
        ],
      },
    ]);
    assert.equal(sent.body.repetition_penalty, 1.1);
    assert.equal(sent.body.min_p, 0.05);
    assert.deepEqual(sent.body.chat_template_kwargs, { enable_thinking: false });
    assert.equal(sent.body.max_tokens, 4);
  });

  it('ollama client: generate with format "json" and images reaches openai-chat as json_object and an image part', async () => {
    const ollama = new Ollama({ host: openAiUp.url });
    const sent = await sentBy(async () => {
      const parts = await ollama.generate({
        model: 'sim',
        prompt: 'Describe it',
        images: [PNG],
        format: 'json',
        options: { num_predict: 3 },
        stream: true,
      });
      for await (const _ of parts);
    });
    assert.deepEqual(sent.body.response_format, { type: 'json_object' });
    const messages = sent.body.messages as { content: { type: string }[] }[];
    assert.deepEqual(
      messages[0]?.content.map((part) => part.type),
      ['text', 'image_url'],
    );
  });

  it('openai client: developer turns are accepted and kept for an OpenAI upstream, and are system turns for Ollama', async () => {
    const request = {
      model: 'sim',
      messages: [
        { role: 'developer' as const, content: 'Answer briefly.' },
        { role: 'user' as const, content: 'hi' },
      ],
      max_tokens: 3,
      stream: true as const,
    };
    const same = await sentBy(async () => {
      const client = new OpenAI({ baseURL: `${openAiUp.url}/v1`, apiKey: 'unused' });
      for await (const _ of await client.chat.completions.create(request));
    });
    assert.equal((same.body.messages as { role: string }[])[0]?.role, 'developer');
    const translated = await sentBy(async () => {
      const client = new OpenAI({ baseURL: `${ollamaUp.url}/v1`, apiKey: 'unused' });
      for await (const _ of await client.chat.completions.create(request));
    });
    assert.equal(translated.path, '/api/chat');
    assert.deepEqual(
      (translated.body.messages as { role: string }[]).map((m) => m.role),
      ['system', 'user'],
    );
  });

  it('openai client: response_format and an image URL to an Ollama upstream: the schema goes as format, the URL is a 400', async () => {
    const client = new OpenAI({ baseURL: `${ollamaUp.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const sent = await sentBy(async () => {
      const stream = await client.chat.completions.create({
        model: 'sim',
        messages: [{ role: 'user', content: 'colour?' }],
        response_format: { type: 'json_schema', json_schema: { name: 'c', schema: SCHEMA } },
        max_tokens: 3,
        stream: true,
      });
      for await (const _ of stream);
    });
    assert.deepEqual(sent.body.format, SCHEMA);
    const before = seen.length;
    await assert.rejects(
      client.chat.completions.create({
        model: 'sim',
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'what is this?' },
              { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } },
            ],
          },
        ],
        max_tokens: 3,
      }),
      (error: unknown) =>
        error instanceof OpenAI.APIError &&
        error.status === 400 &&
        /image_url/.test(error.message) &&
        /ollama-chat/.test(error.message),
    );
    assert.equal(seen.length, before, 'nothing was sent upstream');
  });

  it('openai client: n: 2 with logprobs in front of a completions upstream gets both choices, each with its logprobs', async () => {
    const upstream = await scriptServer(twoChoiceCompletionsStream);
    const gateway = createGateway({
      upstreams: [{ name: 'vllm', url: upstream.url, dialects: ['openai-completions'] }],
    });
    const served = await serve(gateway.fetch);
    try {
      const client = new OpenAI({ baseURL: `${served.url}/v1`, apiKey: 'unused', maxRetries: 0 });
      const stream = await client.chat.completions.create({
        model: 'm',
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
        n: 2,
        logprobs: true,
        top_logprobs: 2,
      });
      const text = ['', ''];
      const finishes: (string | null)[] = [null, null];
      const tokens: string[][] = [[], []];
      const alternatives: string[][] = [[], []];
      for await (const chunk of stream) {
        for (const choice of chunk.choices) {
          const content = choice.delta.content ?? '';
          text[choice.index] += content;
          if (choice.finish_reason !== null) finishes[choice.index] = choice.finish_reason;
          if (content === '') continue;
          const entries = choice.logprobs?.content;
          assert.ok(
            entries !== null && entries !== undefined,
            `choice ${choice.index}: no logprobs on "${content}"`,
          );
          for (const entry of entries) {
            tokens[choice.index]!.push(entry.token);
            alternatives[choice.index]!.push(...entry.top_logprobs.map((top) => top.token));
          }
        }
      }
      assert.deepEqual(text, ['Hi there', 'Yo man']);
      assert.deepEqual(finishes, ['length', 'length']);
      assert.deepEqual(tokens, [
        ['Hi', ' there'],
        ['Yo', ' man'],
      ]);
      assert.deepEqual(alternatives, [
        ['Hi', 'Hey', ' there', ' you'],
        ['Yo', 'Oh', ' man', ' dude'],
      ]);
      const sent = JSON.parse(upstream.requests[0]!.body) as Record<string, unknown>;
      assert.equal(upstream.requests[0]!.path, '/v1/completions');
      assert.equal(sent.n, 2);
      assert.equal(sent.logprobs, 2);
    } finally {
      await gateway.close();
      await served.close();
      await upstream.close();
    }
  });

  it('openai client: a non-stream n: 2 with logprobs in front of a completions upstream gets both choices with logprobs', async () => {
    const upstream = await scriptServer(twoChoiceCompletionsStream);
    const gateway = createGateway({
      upstreams: [{ name: 'vllm', url: upstream.url, dialects: ['openai-completions'] }],
    });
    const served = await serve(gateway.fetch);
    try {
      const client = new OpenAI({ baseURL: `${served.url}/v1`, apiKey: 'unused', maxRetries: 0 });
      const answer = await client.chat.completions.create({
        model: 'm',
        messages: [{ role: 'user', content: 'hi' }],
        n: 2,
        logprobs: true,
        top_logprobs: 2,
      });
      assert.deepEqual(
        answer.choices.map((choice) => [
          choice.index,
          choice.message.content,
          choice.finish_reason,
          choice.logprobs?.content?.map((entry) => [entry.token, entry.top_logprobs.map((top) => top.token)]),
        ]),
        [
          [
            0,
            'Hi there',
            'length',
            [
              ['Hi', ['Hi', 'Hey']],
              [' there', [' there', ' you']],
            ],
          ],
          [
            1,
            'Yo man',
            'length',
            [
              ['Yo', ['Yo', 'Oh']],
              [' man', [' man', ' dude']],
            ],
          ],
        ],
      );
    } finally {
      await gateway.close();
      await served.close();
      await upstream.close();
    }
  });

  it('an Ollama load-only generate or chat is answered as Ollama answers it, without calling the upstream', async () => {
    // Ollama answers it `done_reason: "load"` without generating; an OpenAI server would generate from
    // an empty prompt, so the gateway answers it itself.
    const before = seen.length;
    const generate = await fetch(`${openAiUp.url}/api/generate`, {
      method: 'POST',
      body: JSON.stringify({ model: 'sim' }),
    });
    assert.equal(generate.status, 200);
    const loaded = (await generate.json()) as {
      model: string;
      done: boolean;
      done_reason: string;
      response: string;
    };
    assert.equal(loaded.model, 'sim');
    assert.equal(loaded.done, true);
    assert.equal(loaded.done_reason, 'load');
    assert.equal(loaded.response, '');
    const chat = await fetch(`${openAiUp.url}/api/chat`, {
      method: 'POST',
      body: JSON.stringify({ model: 'sim', messages: [] }),
    });
    assert.equal(chat.status, 200);
    const chatLoaded = (await chat.json()) as { done_reason: string; message: { content: string } };
    assert.equal(chatLoaded.done_reason, 'load');
    assert.equal(chatLoaded.message.content, '');
    assert.equal(seen.length, before, 'nothing was sent upstream');
  });

  it('Ollama raw: true is refused for a chat upstream, raw: false goes through', async () => {
    const post = (raw: boolean) =>
      fetch(`${openAiUp.url}/api/generate`, {
        method: 'POST',
        body: JSON.stringify({ model: 'sim', prompt: '[INST] hi [/INST]', raw, options: { num_predict: 2 } }),
      });
    const refused = await post(true);
    assert.equal(refused.status, 400);
    assert.match(((await refused.json()) as { error: string }).error, /raw/);
    const sent = await sentBy(async () => {
      const ok = await post(false);
      assert.equal(ok.status, 200);
      await ok.text();
    });
    assert.deepEqual(sent.body.messages, [{ role: 'user', content: '[INST] hi [/INST]' }]);
  });
});
