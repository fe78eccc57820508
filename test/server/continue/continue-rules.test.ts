import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { Ollama } from 'ollama';
import OpenAI from 'openai';
import type { DialectId } from '../../../src/dialects/dialect.ts';
import type { GatewayOptions } from '../../../src/server/create-gateway.ts';
import type { Upstream } from '../../../src/server/upstream/upstream.ts';
import type { SimOptions } from '../../../src/sim/sim-options.ts';
import { ContinuePool, openAiStreamText } from '../../helpers/continue-pool.ts';

const pool = new ContinuePool();
after(() => pool.close());
const replica = (name: string, options: SimOptions = {}, dialects?: readonly DialectId[]) =>
  pool.replica(name, options, dialects);
const gateway = (upstreams: Upstream[], options: Partial<GatewayOptions> = {}) =>
  pool.gateway(upstreams, options);

const chatBody = (extra: Record<string, unknown> = {}) =>
  Object.assign(
    {
      model: 'sim',
      stream: true,
      max_tokens: 40,
      temperature: 0,
      messages: [{ role: 'user', content: 'Tell me about the rivers of Europe.' }],
    },
    extra,
  );

async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: Object.assign({ 'content-type': 'application/json' }, headers),
    body: JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

const chatText = openAiStreamText;

async function wholeAnswerRaw(body: unknown = chatBody()): Promise<string> {
  const sibling = await replica('reference');
  const alone = await gateway([sibling.upstream]);
  return (await post(alone.url, body)).text;
}

async function wholeAnswer(body: unknown = chatBody()): Promise<string> {
  const sibling = await replica('reference');
  const alone = await gateway([sibling.upstream]);
  return chatText((await post(alone.url, body)).text).text;
}

describe('continuation: on, off and asked per request', () => {
  it('is off by default: a stream cut mid-answer ends with the error, never finished', async () => {
    const dying = await replica('dying', { faults: 'die-after=6' });
    const sibling = await replica('sibling');
    const g = await gateway([dying.upstream, sibling.upstream]);
    const answer = chatText((await post(g.url, chatBody())).text);
    assert.equal(answer.finish, undefined);
    assert.match(answer.error ?? '', /upstream failed/);
    assert.equal(sibling.sim.stats.log.length, 0);
    assert.equal(g.logs.at(-1)?.continuations, undefined);
  });

  it('x-tokenwire-continue: on turns it on for one request; off turns it off when the gateway has it on', async () => {
    const whole = await wholeAnswer();
    const dying = await replica('dying', { faults: 'die-after=6' });
    const sibling = await replica('sibling');
    const off = await gateway([dying.upstream, sibling.upstream]);
    const asked = chatText((await post(off.url, chatBody(), { 'x-tokenwire-continue': 'on' })).text);
    assert.equal(asked.text, whole);
    assert.equal(asked.finish, 'length');
    const dying2 = await replica('dying2', { faults: 'die-after=6' });
    const sibling2 = await replica('sibling2');
    const on = await gateway([dying2.upstream, sibling2.upstream], { continueOnFailure: true });
    const refused = chatText((await post(on.url, chatBody(), { 'x-tokenwire-continue': 'off' })).text);
    assert.equal(refused.finish, undefined);
    assert.ok(refused.error !== undefined);
  });

  it('x-tokenwire-continue with another value is a 400 in the dialect’s shape, before any upstream call', async () => {
    const a = await replica('a');
    const b = await replica('b');
    const g = await gateway([a.upstream, b.upstream]);
    const answer = await post(g.url, chatBody(), { 'x-tokenwire-continue': 'maybe' });
    assert.equal(answer.status, 400);
    assert.match(JSON.parse(answer.text).error.message, /x-tokenwire-continue must be on or off/);
    assert.equal(a.sim.stats.log.length + b.sim.stats.log.length, 0);
  });
});

describe('continuation: when no replica can go on, the stream ends as before (error, incomplete)', () => {
  it('the continuation dies too: one attempt by default, named in the log and the metric', async () => {
    const a = await replica('a', { faults: 'die-after=5' });
    const b = await replica('b', { faults: 'die-after=5' });
    const g = await gateway([a.upstream, b.upstream], { continueOnFailure: true });
    const answer = chatText((await post(g.url, chatBody())).text);
    assert.equal(answer.finish, undefined);
    assert.match(answer.error ?? '', /not continued: its 1 continuation was used/);
    const log = g.logs.at(-1)!;
    assert.deepEqual(
      log.continuations?.map((c) => [c.from, c.to, c.result]),
      [
        ['a', 'b', 'failed'],
        ['b', undefined, 'refused'],
      ],
    );
    assert.equal(log.endState, 'incomplete');
    const metrics = await (await fetch(`${g.url}/metrics`)).text();
    assert.match(
      metrics,
      /tokenwire_continuations_total\{result="failed",route="openai-chat",upstream="a"\} 1/,
    );
    assert.match(
      metrics,
      /tokenwire_continuations_total\{result="refused",route="openai-chat",upstream="b"\} 1/,
    );
  });

  it('--continue-max 2 with three replicas: continued twice, one whole answer', async () => {
    const whole = await wholeAnswer();
    const a = await replica('a', { faults: 'die-after=5' });
    const b = await replica('b', { faults: 'die-after=5' });
    const c = await replica('c');
    const g = await gateway([a.upstream, b.upstream, c.upstream], {
      continueOnFailure: true,
      continueMax: 2,
    });
    const raw = (await post(g.url, chatBody({ stream_options: { include_usage: true } }))).text;
    const answer = chatText(raw);
    assert.equal(answer.text, whole);
    assert.equal(answer.finish, 'length');
    assert.equal(raw.match(/^: continued on/gm)?.length, 2);
    assert.deepEqual(
      g.logs.at(-1)?.continuations?.map((c) => [c.from, c.to, c.result]),
      [
        ['a', 'b', 'failed'],
        ['b', 'c', 'continued'],
      ],
    );
    const usage = raw
      .split('\n')
      .filter((line) => line.includes('"usage":{'))
      .map((line) => JSON.parse(line.slice(6)).usage)
      .at(-1);
    assert.equal(usage.completion_tokens, 40, 'every output token once');
  });

  it('inside a tool call: not continued (its arguments cannot be taken back); the reason is named', async () => {
    const a = await replica('a', { faults: 'die-after=4' });
    const b = await replica('b');
    const g = await gateway([a.upstream, b.upstream], { continueOnFailure: true });
    const body = chatBody({
      max_tokens: 200,
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }],
      tool_choice: 'required',
    });
    const answer = await post(g.url, body);
    assert.match(answer.text, /"tool_calls"/);
    assert.match(chatText(answer.text).error ?? '', /not continued: the answer was in a tool call/);
    assert.equal(b.sim.stats.log.length, 0);
    assert.equal(g.logs.at(-1)?.continuations?.[0]?.result, 'refused');
  });

  it('inside the reasoning, with no token ids: not continued, the reason named', async () => {
    const a = await replica('a', { faults: 'die-after=4' }, ['openai-chat']);
    const b = await replica('b', {}, ['openai-chat']);
    const g = await gateway([a.upstream, b.upstream], { continueOnFailure: true });
    const answer = await post(g.url, chatBody({ reasoning_effort: 'low', max_tokens: 200 }));
    assert.match(answer.text, /"reasoning/);
    assert.match(chatText(answer.text).error ?? '', /not continued: the answer was in its reasoning/);
    assert.equal(b.sim.stats.log.length, 0);
  });

  it('a model with one replica: nothing to continue on, the stream ends as before', async () => {
    const a = await replica('a', { faults: 'die-after=5' });
    const g = await gateway([a.upstream], { continueOnFailure: true });
    const answer = chatText((await post(g.url, chatBody())).text);
    assert.equal(answer.finish, undefined);
    assert.ok(answer.error !== undefined);
    assert.equal(g.logs.at(-1)?.continuations, undefined);
  });
});

describe('continuation: resume reads the stitched stream', () => {
  it('Last-Event-ID after a continuation replays the events after it, across the seam', async () => {
    const dying = await replica('dying', { faults: 'die-after=6' });
    const sibling = await replica('sibling');
    const g = await gateway([dying.upstream, sibling.upstream], { continueOnFailure: true });
    const first = await post(g.url, chatBody());
    const events = first.text.split('\n\n').filter((block) => block.startsWith('id: '));
    const third = events[2]!.split('\n')[0]!.slice(4);
    const resumed = await fetch(`${g.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'last-event-id': third },
      body: JSON.stringify(chatBody()),
    });
    assert.equal(resumed.status, 200);
    const again = (await resumed.text()).split('\n\n').filter((block) => block.startsWith('id: '));
    assert.deepEqual(again, events.slice(3));
    assert.ok(events.length > 10, 'the replay crosses the seam');
  });
});

describe('continuation of a stream its client left (keepStreamOnDisconnect): the resume reads it all', () => {
  it('the client leaves, the server dies, a sibling goes on into the store; Last-Event-ID gets the rest', async () => {
    const dying = await replica('dying', {
      faults: 'die-after=12',
      timing: { tokensPerSecond: 200, loadMs: 0, jitter: 0 },
    });
    const sibling = await replica('sibling', { timing: { tokensPerSecond: 200, loadMs: 0, jitter: 0 } });
    const g = await gateway([dying.upstream, sibling.upstream], {
      continueOnFailure: true,
      keepStreamOnDisconnect: true,
    });
    const whole = chatText(await wholeAnswerRaw());
    const abort = new AbortController();
    const response = await fetch(`${g.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(chatBody()),
      signal: abort.signal,
    });
    const reader = response.body!.getReader();
    let read = '';
    while ((read.match(/^id: /gm)?.length ?? 0) < 3)
      read += new TextDecoder().decode((await reader.read()).value);
    abort.abort();
    const blocks = read.split('\n\n').filter((block) => block.startsWith('id: '));
    const lastId = blocks.at(-1)!.split('\n')[0]!.slice(4);
    // Wait for the stream to end in the store (the sibling's log line), then resume after the last id read.
    for (let i = 0; i < 200 && g.logs.length === 0; i++)
      await new Promise((resolve) => setTimeout(resolve, 25));
    assert.equal(g.logs[0]?.continuations?.[0]?.result, 'continued');
    const resumed = await fetch(`${g.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'last-event-id': lastId },
      body: JSON.stringify(chatBody()),
    });
    const rest = await resumed.text();
    assert.equal(chatText(`${blocks.join('\n\n')}\n\n${rest}`).text, whole.text);
    assert.equal(chatText(rest).finish, 'length');
  });
});

describe('continuation: the Responses cursor reads the stitched stream', () => {
  it('GET /v1/responses/{id}?stream=true&starting_after=N replays across the seam, sequence numbers going on', async () => {
    const dying = await replica('dying', { faults: 'die-after=6' });
    const sibling = await replica('sibling');
    const g = await gateway([dying.upstream, sibling.upstream], { continueOnFailure: true });
    const response = await fetch(`${g.url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'sim',
        stream: true,
        max_output_tokens: 40,
        temperature: 0,
        input: 'Tell me about the rivers of Europe.',
      }),
    });
    const raw = await response.text();
    assert.match(raw, /^: continued on sibling after \d+ tokens$/m);
    const original = raw
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map(
        (line) =>
          JSON.parse(line.slice(6)) as { type: string; sequence_number: number; response?: { id: string } },
      );
    assert.deepEqual(
      original.map((event) => event.sequence_number),
      original.map((_, i) => i),
      'one sequence, numbered from 0 across the seam',
    );
    assert.equal(original.filter((event) => event.type === 'response.created').length, 1);
    assert.equal(original.at(-1)?.type, 'response.incomplete', 'ended at max_output_tokens');
    const id = original[0]!.response!.id;
    const replayed = (await (await fetch(`${g.url}/v1/responses/${id}?stream=true&starting_after=3`)).text())
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => JSON.parse(line.slice(6)));
    assert.deepEqual(replayed, original.slice(4));
  });
});

describe('continuation: the official SDKs get one complete answer', () => {
  async function pool() {
    const dying = await replica('dying', { faults: 'die-after=6' });
    const sibling = await replica('sibling');
    return gateway([dying.upstream, sibling.upstream], { continueOnFailure: true });
  }
  async function reference() {
    return gateway([(await replica('reference')).upstream]);
  }

  it('openai chat.completions stream', async () => {
    const run = async (url: string) => {
      const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0 });
      const stream = await client.chat.completions.create({
        model: 'sim',
        stream: true,
        max_tokens: 40,
        temperature: 0,
        messages: [{ role: 'user', content: 'Tell me about the rivers of Europe.' }],
      });
      let text = '';
      let finish: string | null | undefined;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? '';
        finish = chunk.choices[0]?.finish_reason ?? finish;
      }
      return { text, finish };
    };
    const continued = await run((await pool()).url);
    assert.deepEqual(continued, await run((await reference()).url));
    assert.equal(continued.finish, 'length');
  });

  it('openai responses.stream()', async () => {
    const run = async (url: string) => {
      const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0 });
      const stream = client.responses.stream({
        model: 'sim',
        input: 'Tell me about the rivers of Europe.',
        max_output_tokens: 40,
        temperature: 0,
      });
      const types: string[] = [];
      for await (const event of stream) types.push(event.type);
      const final = await stream.finalResponse();
      return { text: final.output_text, status: final.status, usage: final.usage?.output_tokens, types };
    };
    const continued = await run((await pool()).url);
    const whole = await run((await reference()).url);
    assert.deepEqual(continued, whole);
    assert.equal(continued.types.filter((type) => type === 'response.created').length, 1);
  });

  it('@anthropic-ai/sdk messages.stream() and finalMessage()', async () => {
    const run = async (url: string) => {
      const client = new Anthropic({ baseURL: url, apiKey: 'unused', maxRetries: 0 });
      const stream = client.messages.stream({
        model: 'sim',
        max_tokens: 40,
        temperature: 0,
        messages: [{ role: 'user', content: 'Tell me about the rivers of Europe.' }],
      });
      const message = await stream.finalMessage();
      return { content: message.content, stop: message.stop_reason, usage: message.usage.output_tokens };
    };
    const continued = await run((await pool()).url);
    assert.deepEqual(continued, await run((await reference()).url));
    assert.equal(continued.content.length, 1);
  });

  it('ollama chat stream', async () => {
    const run = async (url: string) => {
      const ollama = new Ollama({ host: url });
      const stream = await ollama.chat({
        model: 'sim',
        stream: true,
        options: { num_predict: 40, temperature: 0 },
        messages: [{ role: 'user', content: 'Tell me about the rivers of Europe.' }],
      });
      let text = '';
      let last: { done_reason?: string; eval_count?: number } = {};
      for await (const part of stream) {
        text += part.message.content;
        if (part.done) last = part;
      }
      return { text, reason: last.done_reason, evalCount: last.eval_count };
    };
    const continued = await run((await pool()).url);
    assert.deepEqual(continued, await run((await reference()).url));
    assert.equal(continued.reason, 'length');
  });
});
