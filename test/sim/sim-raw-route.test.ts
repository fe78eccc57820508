import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createSim, SIM_RAW_PREFIX, simRawRoute } from '../../src/sim/index.ts';
import { FakeClock, readChunks } from './sim-helpers.ts';

describe('simRawRoute: the simulator under /sim/', () => {
  const chat = JSON.stringify({
    model: 'sim',
    stream: true,
    max_tokens: 6,
    messages: [{ role: 'user', content: 'hi' }],
  });

  it("passes the simulator's own bytes, faults and all, on its own paths", async () => {
    const clock = new FakeClock();
    const sim = createSim({ now: clock.now, sleep: clock.sleep });
    const route = simRawRoute(sim.fetch);
    assert.equal(SIM_RAW_PREFIX, '/sim');
    const response = await route(
      new Request('http://gw.test/sim/v1/chat/completions', {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-tokenwire-fault': 'keepalive=10,stall=50,no-done,bytewise',
        },
        body: chat,
      }),
    );
    assert.ok(response !== undefined);
    assert.equal(response.status, 200);
    const { chunks } = await readChunks(response);
    const text = new TextDecoder().decode(Buffer.concat(chunks));
    assert.ok(
      chunks.every((chunk) => chunk.length === 1),
      'bytewise: one byte per write',
    );
    assert.match(text, /^:/m, 'keepalive comments');
    assert.doesNotMatch(text, /\[DONE\]/, 'no-done');
    const models = await route(new Request('http://gw.test/sim/v1/models'));
    assert.equal(models?.status, 200);
  });

  it('leaves every other path to the next handler', () => {
    const route = simRawRoute(async () => new Response('sim'));
    for (const path of ['/', '/v1/chat/completions', '/simulator', '/sim']) {
      assert.equal(route(new Request(`http://gw.test${path}`)), undefined, path);
    }
  });
});
