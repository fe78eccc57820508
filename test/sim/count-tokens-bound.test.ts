import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { serve } from '../../src/node/serve.ts';
import { createGateway } from '../../src/server/create-gateway.ts';
import { createSim } from '../../src/sim/create-sim.ts';
import { loadTokenizer } from '../../src/sim/tokenizer.ts';
import { postRaw } from './sim-helpers.ts';

const closers: (() => Promise<void>)[] = [];
after(() => Promise.all(closers.map((close) => close())));

/** Words of varied letters (BPE does real work on them), about `bytes` long. */
function words(bytes: number): string {
  const out: string[] = [];
  let length = 0;
  let seed = 7;
  while (length < bytes) {
    seed = (Math.imul(seed, 1103515245) + 12345) & 0x7fffffff;
    const word = seed.toString(36);
    out.push(word);
    length += word.length + 1;
  }
  return out.join(' ');
}

const ROUTES = [
  {
    path: '/v1/messages/count_tokens',
    body: (text: string) => ({ model: 'sim', messages: [{ role: 'user', content: text }] }),
  },
  { path: '/v1/responses/input_tokens', body: (text: string) => ({ model: 'sim', input: text }) },
] as const;

describe('token counting on the simulator: bounded by the context', () => {
  it("refuses a prompt longer than the context in the route's dialect error shape", async () => {
    const sim = createSim({ contextTokens: 512 });
    const long = 'the quick brown fox jumps over the lazy dog '.repeat(200);
    const messages = await postRaw(sim, ROUTES[0].path, ROUTES[0].body(long));
    assert.equal(messages.status, 400);
    const anthropic = JSON.parse(await messages.text()) as {
      type: string;
      error: { type: string; message: string };
    };
    assert.equal(anthropic.type, 'error');
    assert.equal(anthropic.error.type, 'invalid_request_error');
    assert.match(anthropic.error.message, /context length of 512 tokens/);

    const responses = await postRaw(sim, ROUTES[1].path, ROUTES[1].body(long));
    assert.equal(responses.status, 400);
    const openai = JSON.parse(await responses.text()) as { error: { type: string; message: string } };
    assert.equal(openai.error.type, 'invalid_request_error');
    assert.match(openai.error.message, /context length of 512 tokens/);

    // Under the context, the count is still the generation's (prompt text + template tokens).
    const short = await postRaw(sim, ROUTES[0].path, ROUTES[0].body('hello'));
    assert.equal(short.status, 200);
    assert.deepEqual(JSON.parse(await short.text()), { input_tokens: 11 });
  });

  it('stops counting at the context: a 3.9 MiB prompt is refused, not counted to the end', async () => {
    const sim = createSim({ contextTokens: 1000 });
    const text = words(3.9 * 1024 * 1024);
    for (const route of ROUTES) {
      const answer = await postRaw(sim, route.path, route.body(text));
      assert.equal(answer.status, 400, route.path);
      const message = (JSON.parse(await answer.text()) as { error: { message: string } }).error.message;
      // The count it names is where counting stopped: just past the context, far below the whole prompt.
      const counted = Number(/counting stopped at (\d+) tokens/.exec(message)?.[1]);
      assert.ok(counted >= 1000 && counted < 2000, `${route.path}: ${message}`);
    }
  });

  it('a large count never holds the event loop: /healthz sent while it runs is answered first', async () => {
    // A context larger than the prompt, so the whole MiB is counted: common words (cheap for BPE, so
    // the test is quick) in about 70 slices of tokenizer work.
    const sim = createSim({ contextTokens: 100_000_000 });
    const text = 'the quick brown fox jumps over the lazy dog '.repeat(24_000);
    await loadTokenizer();
    let started!: () => void;
    const counting = new Promise<void>((resolve) => {
      started = resolve;
    });
    const gateway = createGateway({
      maxBodyBytes: 8 * 1024 * 1024,
      keepaliveMs: 0,
      upstreams: [
        {
          name: 'sim',
          url: 'http://sim.internal',
          dialects: ['anthropic-messages', 'openai-responses'],
          models: ['sim'],
          anyModelName: true,
          fetch: (request) => {
            if (new URL(request.url).pathname.endsWith('/count_tokens')) started();
            return sim.fetch(request);
          },
        },
      ],
    });
    const served = await serve(gateway.fetch);
    closers.push(async () => {
      await gateway.close();
      await served.close();
    });
    const order: string[] = [];
    const count = fetch(`${served.url}${ROUTES[0].path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(ROUTES[0].body(text)),
    }).then(async (response) => {
      const body = (await response.json()) as { input_tokens?: number };
      order.push('count');
      return { status: response.status, body };
    });
    await counting;
    const health = await fetch(`${served.url}/healthz`);
    await health.text();
    order.push('healthz');
    const counted = await count;
    assert.equal(health.status, 200);
    assert.equal(counted.status, 200);
    assert.ok((counted.body.input_tokens ?? 0) > 200_000, JSON.stringify(counted.body));
    assert.deepEqual(order, ['healthz', 'count']);
  });
});
