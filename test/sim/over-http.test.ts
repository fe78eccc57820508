import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { getDialect } from '../../src/dialects/registry.ts';
import { type ServedHandler, serve } from '../../src/node/serve.ts';
import { createSim, type Sim } from '../../src/sim/index.ts';
import { ask, decode, readChunks, run } from './sim-helpers.ts';

const openAiChat = getDialect('openai-chat');
const body = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({ ...openAiChat.toRequestBody({ model: 'sim', ...ask('over http') }), ...extra });

describe('sim over real HTTP (node adapter)', () => {
  let sim: Sim;
  let served: ServedHandler;
  before(async () => {
    sim = createSim({ timing: { tokensPerSecond: 400, jitter: 0 } });
    served = await serve(sim.fetch);
  });
  after(() => served.close());

  it('streams the same answer as in-process', async () => {
    const response = await fetch(`${served.url}/v1/chat/completions`, { method: 'POST', body: body() });
    const read = await readChunks(response);
    const overHttp = decode(openAiChat, read.chunks);
    assert.equal(overHttp.complete, true);
    const inProcess = await run(createSim({ sleep: async () => {} }), openAiChat, ask('over http'));
    assert.equal(overHttp.text, inProcess.text);
  });

  it('cut-after breaks the HTTP connection: the body read fails and no terminal event came', async () => {
    const response = await fetch(`${served.url}/v1/chat/completions`, {
      method: 'POST',
      body: body(),
      headers: { 'x-tokenwire-fault': 'cut-after=5' },
    });
    assert.equal(response.status, 200);
    const read = await readChunks(response);
    assert.ok(
      read.error !== undefined,
      'the read fails: the connection ended without the chunked terminator',
    );
    assert.equal(decode(openAiChat, read.chunks).complete, false);
    await sim.idle();
    assert.equal(sim.stats.log.at(-1)?.outcome, 'cut');
  });

  it('a client that goes away stops the generation, and its tokens are counted', async () => {
    const slow = createSim({ timing: { tokensPerSecond: 20, jitter: 0 } });
    const slowServed = await serve(slow.fetch);
    try {
      const abort = new AbortController();
      const response = await fetch(`${slowServed.url}/v1/chat/completions`, {
        method: 'POST',
        body: body(),
        signal: abort.signal,
      });
      const reader = response.body!.getReader();
      await reader.read();
      abort.abort();
      await slow.idle();
      const record = slow.stats.log.at(-1)!;
      assert.equal(record.outcome, 'cancelled');
      const reference = createSim({ sleep: async () => {} });
      await run(reference, openAiChat, ask('over http'));
      const fullTokens = reference.stats.log.at(-1)?.outputTokens ?? 0;
      assert.ok(
        record.outputTokens < fullTokens,
        `${record.outputTokens} of ${fullTokens} tokens before the abort`,
      );
    } finally {
      await slowServed.close();
    }
  });
});
