import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Dialect } from '../../src/dialects/dialect.ts';
import { getDialect } from '../../src/dialects/registry.ts';
import { createSim, SimCutError, type SimOptions } from '../../src/sim/index.ts';
import { WireError } from '../../src/wire/wire-error.ts';
import { ask, concat, decode, dialects, FakeClock, ofType, post, readChunks, run } from './sim-helpers.ts';

const openAiChat = getDialect('openai-chat');
const fault = (spec: string, extra: Record<string, string> = {}) => ({
  headers: { 'x-tokenwire-fault': spec, ...extra },
});
const simWith = (options: SimOptions = {}) => {
  const clock = new FakeClock();
  return { clock, sim: createSim({ now: clock.now, sleep: clock.sleep, timing: { jitter: 0 }, ...options }) };
};
const ndjsonDialects = () => dialects().filter((d) => d.framing === 'ndjson');

describe('sim faults: how bytes are written', () => {
  it('split=<n,...> cuts every write at those offsets', async () => {
    const { sim } = simWith();
    const base = await run(sim, openAiChat, ask('split'));
    const split = await run(sim, openAiChat, ask('split'), fault('split=3,7'));
    assert.equal(split.text, base.text);
    assert.deepEqual(
      split.chunks.slice(0, 3).map((c) => c.length),
      [3, 4, (base.chunks[0]?.length ?? 0) - 7],
    );
  });

  it('bytewise writes one byte at a time; the text is the same', async () => {
    const { sim } = simWith();
    const base = await run(sim, openAiChat, ask('bytes'));
    const bytewise = await run(sim, openAiChat, ask('bytes'), fault('bytewise'));
    assert.ok(bytewise.chunks.every((chunk) => chunk.length === 1));
    assert.equal(bytewise.text, base.text);
  });

  it('split-utf8 ends writes in the middle of multi-byte characters', async () => {
    const { sim } = simWith();
    let inside = 0;
    for (let p = 0; p < 4; p++) {
      const base = await run(sim, openAiChat, ask(`prompt ${p}`), fault('multilingual'));
      const split = await run(sim, openAiChat, ask(`prompt ${p}`), fault('multilingual,split-utf8'));
      assert.equal(split.text, base.text);
      inside += split.chunks.filter((chunk) => ((chunk.at(-1) as number) & 0xc0) === 0xc0).length;
    }
    assert.ok(inside > 10, `${inside} writes end on a lead byte`);
  });

  it('buffer=<ms> releases writes in bursts, like a buffering proxy', async () => {
    const { sim } = simWith({ timing: { tokensPerSecond: 100, jitter: 0 } });
    const base = await run(sim, openAiChat, ask('buffer'));
    const buffered = await run(sim, openAiChat, ask('buffer'), fault('buffer=100'));
    assert.equal(buffered.text, base.text);
    assert.ok(
      buffered.chunks.length * 5 < base.chunks.length,
      `${buffered.chunks.length} vs ${base.chunks.length}`,
    );
    // Each burst holds several whole events.
    const middle = new TextDecoder().decode(buffered.chunks[1]);
    assert.ok(middle.split('\n\n').length > 5);
  });

  it('framing=ndjson serves NDJSON lines on an SSE route, headers unchanged', async () => {
    const { sim } = simWith();
    const result = await run(sim, openAiChat, ask('framing'), fault('framing=ndjson'));
    assert.match(result.response.headers.get('content-type') ?? '', /text\/event-stream/);
    const lines = result.raw.split('\n').filter((line) => line !== '');
    assert.ok(lines.length > 3);
    for (const line of lines) assert.ok(line === '[DONE]' || JSON.parse(line) !== undefined);
    assert.doesNotMatch(result.raw, /^data:/m);
    assert.equal(result.events.length, 0, 'an SSE decoder sees no events in NDJSON');
  });

  for (const dialect of ndjsonDialects()) {
    it(`framing=sse serves SSE on an NDJSON route (${dialect.id})`, async () => {
      const { sim } = simWith();
      const response = await post(sim, dialect, ask('framing'), fault('framing=sse'));
      assert.equal(response.headers.get('content-type'), dialect.responseHeaders()['content-type']);
      const raw = new TextDecoder().decode(concat((await readChunks(response)).chunks));
      const events = raw.split('\n\n').filter((event) => event !== '');
      assert.ok(events.length > 3);
      for (const event of events) assert.ok(JSON.parse(event.replace(/^data: /, '')) !== undefined);
    });
  }

  it('invalid-utf8 puts an invalid byte inside a text value mid-answer', async () => {
    const { sim } = simWith();
    const response = await post(sim, openAiChat, ask('invalid'), fault('invalid-utf8'));
    const bytes = concat((await readChunks(response)).chunks);
    const at = bytes.indexOf(0xff);
    assert.ok(at > bytes.length / 4, 'mid-answer');
    assert.equal(bytes.indexOf(0xff, at + 1), -1, 'once');
    assert.equal(bytes[at - 1], 0x22, 'right after the opening quote of a string');
    assert.throws(
      () => decode(openAiChat, [bytes]),
      (error) => error instanceof WireError && error.code === 'invalid-utf8',
    );
  });

  it('content-type=<value> sends a wrong header, content-type= none at all', async () => {
    const { sim } = simWith();
    const wrong = await post(sim, openAiChat, ask('ct'), fault('content-type=text/plain'));
    assert.equal(wrong.headers.get('content-type'), 'text/plain');
    await wrong.body?.cancel();
    const none = await post(sim, openAiChat, ask('ct'), fault('content-type='));
    assert.equal(none.headers.get('content-type'), null);
    await none.body?.cancel();
  });
});

describe('sim faults: the stream itself', () => {
  for (const dialect of dialects()) {
    it(`cut-after=<n> breaks the connection after n tokens with no terminal event (${dialect.id})`, async () => {
      const { sim } = simWith();
      const result = await run(sim, dialect, ask('cut'), fault('cut-after=5'));
      assert.ok(result.error instanceof SimCutError);
      assert.equal(result.complete, false);
      assert.equal(ofType(result.events, 'finish').length, 0);
      assert.equal(sim.stats.log.at(-1)?.outcome, 'cut');
      assert.equal(sim.stats.log.at(-1)?.outputTokens, 5);
      const full = await run(sim, dialect, ask('cut'));
      assert.ok(full.text.startsWith(result.text));
    });

    it(`error-after=<n> sends the dialect's own mid-stream error after n tokens (${dialect.id})`, async () => {
      const { sim } = simWith();
      const result = await run(sim, dialect, ask('error'), fault('error-after=4'));
      assert.equal(result.error, undefined, 'the body ends normally');
      assert.equal(result.complete, false);
      assert.equal(ofType(result.events, 'finish').length, 0);
      assert.equal(sim.stats.log.at(-1)?.outcome, 'failed');
      assert.equal(sim.stats.log.at(-1)?.outputTokens, 4);
      assert.match(result.raw, /error-after/);
    });

    it(`no-done leaves out the terminator (or the terminal event) (${dialect.id})`, async () => {
      const { sim } = simWith();
      const base = await run(sim, dialect, ask('done'));
      const result = await run(sim, dialect, ask('done'), fault('no-done'));
      assert.doesNotMatch(result.raw, /\[DONE\]/);
      assert.equal(result.sawTerminator, false);
      // Where [DONE] follows the finish, the answer is still whole; elsewhere the terminal event is gone.
      assert.equal(result.complete, base.raw.includes('[DONE]'));
      assert.ok(base.text.startsWith(result.text));
      assert.equal(sim.stats.log.at(-1)?.outcome, 'completed');
    });

    it(`status=<code> fails before the stream in the dialect's error shape (${dialect.id})`, async () => {
      const { sim } = simWith();
      const limited = await post(sim, dialect, ask('status'), fault('status=429'));
      assert.equal(limited.headers.get('retry-after'), '1');
      const body = await limited.text();
      const expected = dialect.errorResponse({ status: 429, message: 'x' });
      assert.equal(limited.status, expected.status);
      assert.match(body, /simulated HTTP 429/);
      assert.equal(Object.keys(JSON.parse(body)).join(), Object.keys(JSON.parse(expected.body)).join());
      const down = await post(sim, dialect, ask('status'), fault('status=500'));
      assert.equal(down.status, dialect.errorResponse({ status: 500, message: 'x' }).status);
      assert.equal(down.headers.get('retry-after'), null);
      assert.equal(sim.stats.failed, 2);
    });
  }

  it('error-after in openai-chat writes each flavor its own way', async () => {
    const { sim } = simWith();
    const vllm = await run(sim, openAiChat, ask('error'), fault('error-after=2'));
    assert.match(
      vllm.raw,
      /data: \{"error": \{"message": "tokenwire sim: .*", "type": "InternalServerError", "param": null, "code": 500\}\}\n\ndata: \[DONE\]\n\n$/,
    );
    assert.equal(ofType(vllm.events, 'error')[0]?.status, 500);
    const llama = await run(
      sim,
      openAiChat,
      ask('error'),
      fault('error-after=2', { 'x-tokenwire-flavor': 'llamacpp' }),
    );
    assert.match(llama.raw, /data: \{"error":\{"code":500,.*"type":"server_error"\}\}\n\n$/);
  });

  it('cut-after=0 cuts before the first token; error-after past the end fails instead of finishing', async () => {
    const { sim } = simWith();
    const cut = await run(sim, openAiChat, ask('cut'), fault('cut-after=0'));
    assert.ok(cut.error instanceof SimCutError);
    assert.equal(cut.chunks.length, 0);
    const late = await run(sim, openAiChat, ask('cut'), fault('error-after=100000'));
    assert.equal(ofType(late.events, 'finish').length, 0);
    assert.equal(ofType(late.events, 'error').length, 1);
    const full = await run(sim, openAiChat, ask('cut'));
    assert.equal(late.text, full.text);
  });

  it('batch=<k> sends k tokens per event, with the same text and token count', async () => {
    const { sim } = simWith();
    const base = await run(sim, openAiChat, ask('batch'));
    const batched = await run(sim, openAiChat, ask('batch'), fault('batch=4'));
    assert.equal(batched.text, base.text);
    const tokens = sim.stats.log.at(-1)?.outputTokens ?? 0;
    assert.equal(tokens, sim.stats.log.at(-2)?.outputTokens);
    const textEvents = ofType(batched.events, 'text').length;
    assert.ok(
      textEvents <= Math.ceil(tokens / 4) && textEvents >= Math.floor(tokens / 4) - 1,
      `${textEvents} events`,
    );
  });

  it('cumulative repeats the whole text so far in each text event', async () => {
    const { sim } = simWith();
    const base = await run(sim, openAiChat, ask('cumulative'));
    const result = await run(sim, openAiChat, ask('cumulative'), fault('cumulative'));
    const texts = ofType(result.events, 'text').map((event) => event.text);
    for (let i = 1; i < texts.length; i++) assert.ok(texts[i]?.startsWith(texts[i - 1] as string));
    assert.equal(texts.at(-1), base.text);
  });

  it('control-tokens leaks a control token where the answer ends', async () => {
    const { sim } = simWith();
    const result = await run(sim, openAiChat, ask('leak'), fault('control-tokens'));
    assert.ok(result.text.endsWith('<|eot_id|>'));
    const custom = await run(sim, openAiChat, { ...ask('leak'), model: 'sim@control-tokens=<|im_end|>' });
    assert.ok(custom.text.endsWith('<|im_end|>'));
  });

  it('ignore-stop lets a stop string through into the text', async () => {
    const { sim } = simWith();
    const full = await run(sim, openAiChat, ask('stop'));
    const stop = full.text.slice(10, 14);
    const ignored = await run(sim, openAiChat, ask('stop', { stop: [stop] }), fault('ignore-stop'));
    assert.equal(ignored.text, full.text);
    assert.equal(ofType(ignored.events, 'finish').at(-1)?.stopSequence, undefined);
    const absent = await run(sim, openAiChat, ask('stop', { stop: ['</answer>'] }), fault('ignore-stop'));
    assert.ok(absent.text.includes('</answer>'));
  });

  it('no-usage sends neither usage nor timings', async () => {
    const { sim } = simWith();
    const headers = { 'x-tokenwire-flavor': 'llamacpp' };
    const base = await run(sim, openAiChat, ask('usage'), { headers });
    assert.equal(ofType(base.events, 'usage').length, 1);
    assert.equal(ofType(base.events, 'timings').length, 1);
    const result = await run(sim, openAiChat, ask('usage'), fault('no-usage', headers));
    assert.equal(ofType(result.events, 'usage').length, 0);
    assert.equal(ofType(result.events, 'timings').length, 0);
  });

  for (const dialect of ndjsonDialects()) {
    it(`no-usage drops the counts from the done line (${dialect.id})`, async () => {
      const { sim } = simWith();
      const result = await run(sim, dialect, ask('usage'), fault('no-usage'));
      assert.doesNotMatch(result.raw, /eval_count/);
      assert.equal(result.complete, true);
    });
  }

  it('faults combine from the server, the header and the model name; later ones win', async () => {
    const { sim } = simWith({ faults: 'batch=3,no-done' });
    const result = await run(
      sim,
      openAiChat,
      { ...ask('combine'), model: 'sim@batch=2' },
      fault('cumulative,batch=5'),
    );
    assert.equal(sim.stats.log.at(-1)?.faults, 'batch=2,cumulative,no-done');
    assert.equal(sim.stats.log.at(-1)?.model, 'sim');
    assert.doesNotMatch(result.raw, /\[DONE\]/);
  });

  it('a bad fault spec is a 400 naming the fault, in the dialect shape', async () => {
    const { sim } = simWith();
    for (const [init, name] of [
      [fault('bytewise,explode'), 'explode'],
      [{}, 'boom'],
    ] as const) {
      const request = name === 'boom' ? { ...ask('bad'), model: 'sim@boom' } : ask('bad');
      const response = await post(sim, openAiChat, request, init);
      assert.equal(response.status, 400);
      const body = JSON.parse(await response.text()) as { error: { message: string } };
      assert.match(body.error.message, new RegExp(`unknown fault "${name}"`));
    }
  });
});

/** Keeps `Dialect` in use for readers of the generic loops above. */
export type { Dialect };
