import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { DialectId } from '../../../src/dialects/dialect.ts';
import { serve } from '../../../src/node/serve.ts';
import type { GatewayOptions } from '../../../src/server/create-gateway.ts';
import type { Upstream } from '../../../src/server/upstream/upstream.ts';
import { createSim } from '../../../src/sim/index.ts';
import type { SimOptions } from '../../../src/sim/sim-options.ts';
import { ContinuePool, openAiStreamText } from '../../helpers/continue-pool.ts';
import { type RecordedRequest, scriptServer } from '../../helpers/script-server.ts';

const pool = new ContinuePool();
after(() => pool.close());
const open = {
  push: (...servers: { close(): Promise<void> }[]) => {
    for (const server of servers) pool.hold(server);
  },
};

async function simUpstream(
  name: string,
  options: SimOptions = {},
  extra: Partial<Upstream> = {},
  dialects?: readonly DialectId[],
): Promise<Upstream> {
  return (await pool.replica(name, options, dialects, extra)).upstream;
}

const gateway = (upstreams: Upstream[], options: Partial<GatewayOptions> = {}) =>
  pool.gateway(upstreams, Object.assign({ continueOnFailure: true }, options));

const body = {
  model: 'sim',
  stream: true,
  max_tokens: 40,
  temperature: 0,
  messages: [{ role: 'user', content: 'Tell me about the rivers of Europe.' }],
};

async function post(url: string, path = '/v1/chat/completions', payload: unknown = body) {
  const response = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(payload),
  });
  return { status: response.status, text: await response.text() };
}

const chatText = (raw: string) => {
  const { text, finish } = openAiStreamText(raw);
  return { text, finish };
};

async function reference(path = '/v1/chat/completions', payload: unknown = body): Promise<string> {
  const alone = await gateway([await simUpstream('reference')], { continueOnFailure: false });
  return (await post(alone.url, path, payload)).text;
}

describe('continuation: each kind of failure mid-answer', () => {
  it('a stall past the upstream’s idle timeout: cut there, continued on the sibling', async () => {
    const whole = chatText(await reference());
    const stalling = await simUpstream(
      'stalling',
      { faults: 'stall=20000,stall-after=6' },
      { timeouts: { idleMs: 300 } },
    );
    const g = await gateway([stalling, await simUpstream('sibling')]);
    const answer = chatText((await post(g.url)).text);
    assert.deepEqual(answer, whole);
    assert.equal(g.logs.at(-1)?.continuations?.[0]?.result, 'continued');
  });

  it('an error event mid-stream (a 5xx-class error): not written, continued on the sibling', async () => {
    const whole = chatText(await reference());
    const g = await gateway([
      await simUpstream('failing', { faults: 'error-after=6' }),
      await simUpstream('b'),
    ]);
    const raw = (await post(g.url)).text;
    assert.doesNotMatch(raw, /"error"/);
    assert.deepEqual(chatText(raw), whole);
    assert.equal(g.logs.at(-1)?.continuations?.[0]?.from, 'failing');
    assert.equal(g.logs.at(-1)?.continuations?.[0]?.result, 'continued');
  });

  it('plain-text output (?format=text): the text goes on, nothing marks the seam', async () => {
    const wholeRaw = await (async () => {
      const alone = await gateway([await simUpstream('reference')], { continueOnFailure: false });
      return (await post(alone.url, '/v1/chat/completions?format=text')).text;
    })();
    const g = await gateway([await simUpstream('dying', { faults: 'die-after=6' }), await simUpstream('b')]);
    const continued = (await post(g.url, '/v1/chat/completions?format=text')).text;
    assert.equal(continued, wholeRaw);
    assert.equal(g.logs.at(-1)?.continuations?.[0]?.result, 'continued');
    assert.doesNotMatch(continued, /continued on/);
  });

  it('a coalescing flush policy: the held text and the continuation join without loss', async () => {
    const payload = Object.assign({}, body, { stream_options: { flush: { maxChars: 16 } } });
    const whole = chatText(await reference('/v1/chat/completions', payload));
    const g = await gateway([await simUpstream('dying', { faults: 'die-after=6' }), await simUpstream('b')]);
    assert.deepEqual(chatText((await post(g.url, '/v1/chat/completions', payload)).text), whole);
    assert.equal(g.logs.at(-1)?.continuations?.[0]?.result, 'continued');
  });
});

describe('continuation when nothing of the answer went out yet', () => {
  it('a cut after the stream’s start and before any token: the request goes again as it was (restart)', async () => {
    const whole = chatText(await reference());
    const role = {
      id: 'chatcmpl-1',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'sim',
      choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }],
    };
    const first = await scriptServer({
      headers: { 'content-type': 'text/event-stream' },
      steps: [{ write: `data: ${JSON.stringify(role)}\n\n` }, { wait: 20 }, { destroy: true }],
    });
    const sim = createSim({ timing: { tokensPerSecond: 4000, loadMs: 0, jitter: 0 } });
    const bodies: string[] = [];
    const second = await serve(async (request: Request) => {
      bodies.push(await request.clone().text());
      return sim.fetch(request);
    });
    open.push(first, second);
    const g = await gateway([
      { name: 'first', url: first.url, dialects: ['openai-chat'], models: ['sim'] },
      { name: 'second', url: second.url, dialects: ['openai-chat'], models: ['sim'] },
    ]);
    const answer = chatText((await post(g.url)).text);
    assert.deepEqual(answer, whole);
    const record = g.logs.at(-1)?.continuations?.[0];
    assert.equal(record?.path, 'restart');
    assert.equal(record?.afterTokens, 0);
    assert.equal(record?.result, 'continued');
    const sent = JSON.parse(bodies[0]!) as { messages: unknown[]; max_tokens: number };
    assert.equal(sent.messages.length, 1, 'no assistant turn was added');
    assert.equal(sent.max_tokens, 40);
  });
});

describe('continuation of a bare text prompt (a completions upstream): the prompt, then the text so far', () => {
  it('sends the prompt followed by the text so far, the cap less the tokens written, and relays the rest', async () => {
    const chunk = (text: string, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: 'cmpl-1', object: 'text_completion', created: 1, model: 'm', choices: [{ index: 0, text, logprobs: null, finish_reason: finish }] })}\n\n`;
    const first = await scriptServer({
      headers: { 'content-type': 'text/event-stream' },
      steps: [{ write: chunk('Once') }, { write: chunk(' upon') }, { wait: 20 }, { destroy: true }],
    });
    const seen: RecordedRequest[] = [];
    const second = await scriptServer((request) => {
      seen.push(request);
      return {
        headers: { 'content-type': 'text/event-stream' },
        steps: [{ write: chunk(' a') }, { write: chunk(' time', 'stop') }, { write: 'data: [DONE]\n\n' }],
      };
    });
    open.push(first, second);
    const upstream = (name: string, url: string): Upstream => ({
      name,
      url,
      dialects: ['openai-completions'],
      models: ['m'],
    });
    const g = await gateway([upstream('first', first.url), upstream('second', second.url)]);
    const answer = await post(g.url, '/v1/completions', {
      model: 'm',
      prompt: 'Tell a story:',
      max_tokens: 10,
      temperature: 0,
      stream: true,
    });
    assert.deepEqual(chatText(answer.text), { text: 'Once upon a time', finish: 'stop' });
    const sent = JSON.parse(seen[0]!.body) as { prompt: string; max_tokens: number; temperature: number };
    assert.equal(sent.prompt, 'Tell a story:Once upon');
    assert.equal(sent.max_tokens, 8);
    assert.equal(sent.temperature, 0);
    assert.equal(g.logs.at(-1)?.continuations?.[0]?.path, 'prefill');
  });
});
