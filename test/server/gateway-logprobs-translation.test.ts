import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openAiResponses } from '../../src/dialects/openai-responses/index.ts';
import { serve } from '../../src/node/serve.ts';
import { createGateway } from '../../src/server/create-gateway.ts';
import { encodeEvents } from '../helpers/decode.ts';
import { type ScriptedResponse, type ScriptServer, scriptServer } from '../helpers/script-server.ts';

/**
 * Through the gateway: log probabilities asked in the Ollama and Responses dialects
 * reach an upstream of another dialect as its own fields, and the upstream's come back in the client's
 * shape (and an OpenAI chat client in front of an Ollama upstream gets `logprobs.content`).
 */

const BYTES_HI = [72, 105];
const BYTES_HEY = [72, 101, 121];
const BYTES_THERE = [32, 116, 104, 101, 114, 101];
const BYTES_YOU = [32, 121, 111, 117];

/** OpenAI chat's token list entries for "Hi" and " there", two alternatives each. */
const HI = {
  token: 'Hi',
  logprob: -0.5,
  bytes: BYTES_HI,
  top_logprobs: [
    { token: 'Hi', logprob: -0.5, bytes: BYTES_HI },
    { token: 'Hey', logprob: -1.5, bytes: BYTES_HEY },
  ],
};
const THERE = {
  token: ' there',
  logprob: -1.25,
  bytes: BYTES_THERE,
  top_logprobs: [
    { token: ' there', logprob: -1.25, bytes: BYTES_THERE },
    { token: ' you', logprob: -2.25, bytes: BYTES_YOU },
  ],
};

/** A vLLM-like chat upstream that streams "Hi there" with logprobs on each content chunk. */
function openAiChatWithLogprobs(): ScriptedResponse {
  const chunk = (choice: Record<string, unknown>, usage: unknown = undefined) =>
    `data: ${JSON.stringify({
      id: 'chatcmpl-1',
      object: 'chat.completion.chunk',
      created: 1767225600,
      model: 'm',
      choices: [choice],
      ...(usage !== undefined && { usage }),
    })}\n\n`;
  return {
    headers: { 'content-type': 'text/event-stream' },
    steps: [
      {
        write:
          chunk({
            index: 0,
            delta: { role: 'assistant', content: '' },
            logprobs: null,
            finish_reason: null,
          }) +
          chunk({ index: 0, delta: { content: 'Hi' }, logprobs: { content: [HI] }, finish_reason: null }) +
          chunk({
            index: 0,
            delta: { content: ' there' },
            logprobs: { content: [THERE] },
            finish_reason: null,
          }) +
          chunk({ index: 0, delta: { content: '' }, logprobs: null, finish_reason: 'stop' }) +
          `data: ${JSON.stringify({
            id: 'chatcmpl-1',
            object: 'chat.completion.chunk',
            created: 1767225600,
            model: 'm',
            choices: [],
            usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
          })}\n\n` +
          'data: [DONE]\n\n',
      },
    ],
  };
}

/** An Ollama /api/chat upstream whose lines carry `logprobs` beside `message`. */
function ollamaChatWithLogprobs(): ScriptedResponse {
  const line = (content: string, logprobs: unknown) =>
    `${JSON.stringify({
      model: 'm',
      created_at: '2026-01-01T00:00:00.1Z',
      message: { role: 'assistant', content },
      done: false,
      logprobs,
    })}\n`;
  return {
    headers: { 'content-type': 'application/x-ndjson' },
    steps: [
      {
        write:
          line('Hi', [HI]) +
          line(' there', [THERE]) +
          `${JSON.stringify({
            model: 'm',
            created_at: '2026-01-01T00:00:00.2Z',
            message: { role: 'assistant', content: '' },
            done: true,
            done_reason: 'stop',
            prompt_eval_count: 3,
            eval_count: 2,
          })}\n`,
      },
    ],
  };
}

/** A Responses upstream (OpenAI's shape) whose deltas carry logprobs. */
function responsesWithLogprobs(): ScriptedResponse {
  const entry = (e: typeof HI) => ({
    token: e.token,
    logprob: e.logprob,
    bytes: e.bytes,
    top: e.top_logprobs.map((t) => ({ token: t.token, logprob: t.logprob, bytes: t.bytes })),
  });
  const wire = encodeEvents(
    openAiResponses,
    [
      { type: 'start', id: 'resp_1', model: 'm', created: 1767225600 },
      { type: 'text', text: 'Hi', itemId: 'msg_1', logprobs: [entry(HI)] },
      { type: 'text', text: ' there', logprobs: [entry(THERE)] },
      { type: 'finish', reason: 'stop', raw: 'completed' },
      { type: 'usage', usage: { inputTokens: 3, outputTokens: 2 } },
    ],
    { flavor: 'openai' },
  );
  return { headers: { 'content-type': 'text/event-stream' }, steps: [{ write: wire }] };
}

/** The Ollama shape of an OpenAI token entry: `api.Logprob`, key order token, logprob, bytes, top_logprobs. */
const OLLAMA_HI = JSON.stringify([HI]);
const OLLAMA_THERE = JSON.stringify([THERE]);

interface Gateway {
  url: string;
  upstream: ScriptServer;
  close(): Promise<void>;
}

async function gatewayBefore(
  dialect: 'openai-chat' | 'ollama-chat' | 'openai-responses',
  script: () => ScriptedResponse,
): Promise<Gateway> {
  const upstream = await scriptServer(script);
  const gateway = createGateway({ upstreams: [{ name: 'up', url: upstream.url, dialects: [dialect] }] });
  const served = await serve(gateway.fetch);
  return {
    url: served.url,
    upstream,
    close: async () => {
      await gateway.close();
      await served.close();
      await upstream.close();
    },
  };
}

const post = (base: string, path: string, body: unknown) =>
  fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

function lastSent(gateway: Gateway): { path: string; body: Record<string, unknown> } {
  const request = gateway.upstream.requests.at(-1)!;
  return { path: request.path, body: JSON.parse(request.body) as Record<string, unknown> };
}

/** An OpenAI chat stream's choices that carry logprobs, as [delta text, logprobs] pairs. */
function chatChoicesWithLogprobs(text: string): unknown[][] {
  return text
    .split('\n')
    .filter((line) => line.startsWith('data: {'))
    .map(
      (line) =>
        JSON.parse(line.slice(6)) as { choices: { delta: { content?: string }; logprobs: unknown }[] },
    )
    .flatMap((chunk) => chunk.choices)
    .filter((choice) => choice.logprobs !== null && choice.logprobs !== undefined)
    .map((choice) => [choice.delta.content, choice.logprobs]);
}

describe('logprobs translated through the gateway', () => {
  let openAiUp: Gateway;
  let ollamaUp: Gateway;
  let responsesUp: Gateway;

  before(async () => {
    openAiUp = await gatewayBefore('openai-chat', openAiChatWithLogprobs);
    ollamaUp = await gatewayBefore('ollama-chat', ollamaChatWithLogprobs);
    responsesUp = await gatewayBefore('openai-responses', responsesWithLogprobs);
  });

  after(async () => {
    await openAiUp?.close();
    await ollamaUp?.close();
    await responsesUp?.close();
  });

  it('ollama client (/api/chat, logprobs + top_logprobs) in front of an openai-chat upstream gets Ollama-shaped logprobs per line', async () => {
    const response = await post(openAiUp.url, '/api/chat', {
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      logprobs: true,
      top_logprobs: 2,
    });
    assert.equal(response.status, 200);
    const text = await response.text();
    const sent = lastSent(openAiUp);
    assert.equal(sent.path, '/v1/chat/completions');
    assert.equal(sent.body.logprobs, true);
    assert.equal(sent.body.top_logprobs, 2);
    const lines = text.trim().split('\n');
    // Byte order as Go writes `api.ChatResponse`: message, done, logprobs.
    assert.match(
      lines[0]!,
      new RegExp(`"content":"Hi"\\},"done":false,"logprobs":${literal(OLLAMA_HI)}\\}$`),
    );
    assert.match(
      lines[1]!,
      new RegExp(`"content":" there"\\},"done":false,"logprobs":${literal(OLLAMA_THERE)}\\}$`),
    );
    const done = JSON.parse(lines.at(-1)!) as Record<string, unknown>;
    assert.equal(done.done, true);
    assert.equal('logprobs' in done, false);
  });

  it('ollama client (/api/generate, stream: false) gets every token’s logprobs in the one answer', async () => {
    const response = await post(openAiUp.url, '/api/generate', {
      model: 'm',
      prompt: 'hi',
      stream: false,
      logprobs: true,
      top_logprobs: 2,
    });
    assert.equal(response.status, 200);
    const body = (await response.json()) as Record<string, unknown>;
    assert.equal(body.response, 'Hi there');
    assert.deepEqual(body.logprobs, [HI, THERE]);
    assert.equal(lastSent(openAiUp).body.top_logprobs, 2);
  });

  it('openai-chat client in front of an Ollama upstream gets logprobs.content', async () => {
    const response = await post(ollamaUp.url, '/v1/chat/completions', {
      model: 'm',
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
      logprobs: true,
      top_logprobs: 2,
    });
    assert.equal(response.status, 200);
    const text = await response.text();
    const sent = lastSent(ollamaUp);
    assert.equal(sent.path, '/api/chat');
    assert.equal(sent.body.logprobs, true);
    assert.equal(sent.body.top_logprobs, 2);
    const withLogprobs = chatChoicesWithLogprobs(text);
    assert.deepEqual(withLogprobs, [
      ['Hi', { content: [HI] }],
      [' there', { content: [THERE] }],
    ]);
  });

  it('responses client (include + top_logprobs) in front of an openai-chat upstream gets the deltas’ and the output text’s logprobs', async () => {
    const response = await post(openAiUp.url, '/v1/responses', {
      model: 'm',
      input: 'hi',
      stream: true,
      include: ['message.output_text.logprobs'],
      top_logprobs: 2,
    });
    assert.equal(response.status, 200);
    const text = await response.text();
    const sent = lastSent(openAiUp);
    assert.equal(sent.path, '/v1/chat/completions');
    assert.equal(sent.body.logprobs, true);
    assert.equal(sent.body.top_logprobs, 2);
    assert.equal('include' in sent.body, false);
    const events = text
      .split('\n')
      .filter((line) => line.startsWith('data: {'))
      .map((line) => JSON.parse(line.slice(6)) as Record<string, unknown>);
    const deltas = events.filter((event) => event.type === 'response.output_text.delta');
    assert.deepEqual(
      deltas.map((event) => [event.delta, event.logprobs]),
      [
        ['Hi', [HI]],
        [' there', [THERE]],
      ],
    );
    const part = {
      token: 'Hi',
      bytes: BYTES_HI,
      logprob: -0.5,
      top_logprobs: [
        { token: 'Hi', bytes: BYTES_HI, logprob: -0.5 },
        { token: 'Hey', bytes: BYTES_HEY, logprob: -1.5 },
      ],
    };
    const completed = events.find((event) => event.type === 'response.completed')!.response as {
      output: { content: { logprobs: { token: string }[] }[] }[];
    };
    const logprobs = completed.output[0]!.content[0]!.logprobs;
    assert.deepEqual(logprobs[0], part);
    assert.deepEqual(
      logprobs.map((entry) => entry.token),
      ['Hi', ' there'],
    );
  });

  it('openai-chat client in front of a Responses upstream asks with include + top_logprobs and gets logprobs.content', async () => {
    const response = await post(responsesUp.url, '/v1/chat/completions', {
      model: 'm',
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
      logprobs: true,
      top_logprobs: 2,
    });
    assert.equal(response.status, 200);
    const text = await response.text();
    const sent = lastSent(responsesUp);
    assert.equal(sent.path, '/v1/responses');
    assert.deepEqual(sent.body.include, ['message.output_text.logprobs']);
    assert.equal(sent.body.top_logprobs, 2);
    const withLogprobs = chatChoicesWithLogprobs(text);
    assert.deepEqual(withLogprobs, [
      ['Hi', { content: [HI] }],
      [' there', { content: [THERE] }],
    ]);
  });

  it('responses client without the include asks the upstream for no logprobs', async () => {
    const response = await post(openAiUp.url, '/v1/responses', { model: 'm', input: 'hi', stream: true });
    assert.equal(response.status, 200);
    await response.text();
    const sent = lastSent(openAiUp).body;
    assert.equal('logprobs' in sent, false);
    assert.equal('top_logprobs' in sent, false);
  });
});

function literal(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
