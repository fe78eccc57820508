import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import type { DialectId } from '../../src/dialects/dialect.ts';
import { serve } from '../../src/node/serve.ts';
import { createGateway } from '../../src/server/create-gateway.ts';
import type { FetchLike, Upstream } from '../../src/server/upstream/upstream.ts';
import { createSim } from '../../src/sim/create-sim.ts';
import { startGateway } from '../helpers/gateway.ts';

const closers: (() => Promise<void>)[] = [];
after(() => Promise.all(closers.map((close) => close())));

async function served(upstreams: Upstream[]): Promise<string> {
  const gateway = createGateway({ upstreams, keepaliveMs: 0 });
  const server = await serve(gateway.fetch);
  closers.push(async () => {
    await gateway.close();
    await server.close();
  });
  return server.url;
}

interface Seen {
  path: string;
  body: string;
  authorization: string | null;
}

/** A scripted upstream: `answers[path]` for each call (gin's plain 404 otherwise), every call recorded. */
function scripted(
  dialects: readonly DialectId[],
  answers: Record<string, { status?: number; body: string }>,
): { upstream: Upstream; seen: Seen[] } {
  const seen: Seen[] = [];
  const fetch: FetchLike = async (request) => {
    const path = new URL(request.url).pathname;
    seen.push({ path, body: await request.text(), authorization: request.headers.get('authorization') });
    const answer = answers[path];
    if (answer === undefined)
      return new Response('404 page not found', { status: 404, headers: { 'content-type': 'text/plain' } });
    return new Response(answer.body, {
      status: answer.status ?? 200,
      headers: { 'content-type': 'application/json; charset=utf-8', server: 'upstream' },
    });
  };
  return {
    upstream: {
      name: 'real',
      url: 'http://10.0.0.5:8080',
      dialects,
      models: ['m'],
      headers: { authorization: 'Bearer upstream-secret' },
      fetch,
    },
    seen,
  };
}

const post = async (url: string, body: unknown) => {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, type: response.headers.get('content-type'), text: await response.text() };
};

const HELLO_MESSAGES = { model: 'sim', messages: [{ role: 'user', content: 'hello' }] };
const HELLO_RESPONSES = { model: 'sim', input: 'hello' };

describe('token counting on the simulator', () => {
  it("answers both routes in llama-server's shapes, with the count a generation's usage reports", async () => {
    const sim = createSim({ timing: { tokensPerSecond: 4000, loadMs: 0 } });
    const call = (path: string, body: unknown) =>
      sim.fetch(new Request(`http://sim${path}`, { method: 'POST', body: JSON.stringify(body) }));
    const messages = await call('/v1/messages/count_tokens', HELLO_MESSAGES);
    assert.equal(messages.status, 200);
    // "hello" as a chat turn is 11 tokens, what llama-server b10108 answers (capture r18).
    assert.deepEqual(await messages.json(), { input_tokens: 11 });
    const responses = await call('/v1/responses/input_tokens', HELLO_RESPONSES);
    assert.deepEqual(await responses.json(), { object: 'response.input_tokens', input_tokens: 11 });
    // The same prompt generated: the stream's usage says the same count.
    const generated = await call(
      '/v1/messages',
      Object.assign({ max_tokens: 3, stream: true }, HELLO_MESSAGES),
    );
    const text = await generated.text();
    assert.match(text, /"input_tokens":11\b/);
    const longer = await call('/v1/messages/count_tokens', {
      model: 'sim',
      system: 'be brief',
      messages: [{ role: 'user', content: 'hello there, how are you today?' }],
    });
    assert.ok(((await longer.json()) as { input_tokens: number }).input_tokens > 11);
  });

  it('refuses a bad body in the dialect shape, and a model it does not serve', async () => {
    const sim = createSim({ models: ['only'] });
    const bad = await sim.fetch(
      new Request('http://sim/v1/messages/count_tokens', { method: 'POST', body: '{"messages":"x"}' }),
    );
    assert.equal(bad.status, 400);
    assert.equal(((await bad.json()) as { type: string }).type, 'error');
    const unknown = await sim.fetch(
      new Request('http://sim/v1/responses/input_tokens', {
        method: 'POST',
        body: JSON.stringify({ model: 'other', input: 'hi' }),
      }),
    );
    assert.equal(unknown.status, 404);
  });
});

describe('token counting through the gateway', () => {
  it('on the simulator: the official SDKs count through the gateway', async () => {
    const gw = await startGateway({ gateway: { keepaliveMs: 0 } });
    closers.push(() => gw.close());
    const anthropic = new Anthropic({ baseURL: gw.url, apiKey: 'x', maxRetries: 0 });
    const counted = await anthropic.messages.countTokens({
      model: 'sim',
      messages: [{ role: 'user', content: 'hello' }],
    });
    assert.equal(counted.input_tokens, 11);
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'x', maxRetries: 0 });
    const input = await openai.responses.inputTokens.count({ model: 'sim', input: 'hello' });
    assert.deepEqual(input, { object: 'response.input_tokens', input_tokens: 11 });
  });

  it("passes the body to an upstream of the route's dialect and its answer back as it is", async () => {
    const { upstream, seen } = scripted(['anthropic-messages'], {
      '/v1/messages/count_tokens': { body: '{"input_tokens":7,"extra":"kept"}' },
    });
    const url = await served([upstream]);
    const body = { model: 'm', messages: [{ role: 'user', content: 'hi' }], system: 'x' };
    const answer = await post(`${url}/v1/messages/count_tokens`, body);
    assert.equal(answer.status, 200);
    assert.equal(answer.text, '{"input_tokens":7,"extra":"kept"}');
    assert.equal(answer.type, 'application/json; charset=utf-8');
    assert.equal(seen.length, 1);
    assert.deepEqual(JSON.parse(seen[0]!.body), body);
    assert.equal(seen[0]!.authorization, 'Bearer upstream-secret');
    // The upstream's own refusal comes back as it is too.
    const { upstream: refusing } = scripted(['openai-responses'], {
      '/v1/responses/input_tokens': { status: 400, body: '{"error":{"message":"no"}}' },
    });
    const refusingUrl = await served([refusing]);
    const refused = await post(`${refusingUrl}/v1/responses/input_tokens`, { model: 'm', input: 'hi' });
    assert.equal(refused.status, 400);
    assert.equal(refused.text, '{"error":{"message":"no"}}');
  });

  it("asks a llama-server upstream's other counting route, translated, and answers in the route's shape", async () => {
    const { upstream, seen } = scripted(['openai-chat', 'llamacpp'], {
      '/v1/responses/input_tokens': { body: '{"input_tokens":23,"object":"response.input_tokens"}' },
      '/v1/messages/count_tokens': { body: '{"input_tokens":29}' },
    });
    const url = await served([upstream]);
    const messages = await post(`${url}/v1/messages/count_tokens`, {
      model: 'm',
      system: 'be brief',
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.equal(messages.status, 200);
    assert.deepEqual(JSON.parse(messages.text), { input_tokens: 23 });
    assert.equal(seen[0]!.path, '/v1/responses/input_tokens');
    const sent = JSON.parse(seen[0]!.body) as Record<string, unknown>;
    assert.equal(sent.instructions, 'be brief');
    assert.equal(sent.stream, undefined, 'a count is not a generation');
    const responses = await post(`${url}/v1/responses/input_tokens`, { model: 'm', input: 'hi' });
    assert.deepEqual(JSON.parse(responses.text), { object: 'response.input_tokens', input_tokens: 29 });
    assert.equal(seen[1]!.path, '/v1/messages/count_tokens');
    const asMessages = JSON.parse(seen[1]!.body) as Record<string, unknown>;
    assert.deepEqual(asMessages.messages, [{ role: 'user', content: 'hi' }]);
    assert.equal(asMessages.max_tokens, undefined);
  });

  it('a simulator upstream of another dialect counts through the translated route: the same count', async () => {
    const gw = await startGateway({ gateway: { keepaliveMs: 0 }, upstreamDialects: ['openai-chat'] });
    closers.push(() => gw.close());
    const answer = await post(`${gw.url}/v1/messages/count_tokens`, HELLO_MESSAGES);
    assert.deepEqual(JSON.parse(answer.text), { input_tokens: 11 });
  });

  it('an upstream that cannot count: 501 in each dialect’s error shape; GET is a 405', async () => {
    const { upstream } = scripted(['ollama-chat'], {});
    const url = await served([upstream]);
    const messages = await post(`${url}/v1/messages/count_tokens`, HELLO_MESSAGES);
    assert.equal(messages.status, 501);
    const anthropicError = JSON.parse(messages.text) as {
      type: string;
      error: { type: string; message: string };
    };
    assert.equal(anthropicError.type, 'error');
    assert.match(anthropicError.error.message, /cannot count tokens/);
    const responses = await post(`${url}/v1/responses/input_tokens`, HELLO_RESPONSES);
    assert.equal(responses.status, 501);
    const openaiError = JSON.parse(responses.text) as { error: { message: string; type: string } };
    assert.match(openaiError.error.message, /cannot count tokens/);
    // An upstream that speaks the dialect but has no such route (404) is the same.
    const { upstream: bare } = scripted(['anthropic-messages'], {});
    const bareUrl = await served([bare]);
    assert.equal((await post(`${bareUrl}/v1/messages/count_tokens`, HELLO_MESSAGES)).status, 501);
    const get = await fetch(`${url}/v1/responses/input_tokens`);
    assert.equal(get.status, 405);
    assert.equal(get.headers.get('allow'), 'POST');
    await get.body?.cancel();
  });
});
