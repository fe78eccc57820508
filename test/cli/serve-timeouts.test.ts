import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runCli } from '../../src/cli/run-cli.ts';
import { readSse } from '../helpers/sse-read.ts';
import { FakeIo, startServe } from './cli-helpers.ts';

const chat = JSON.stringify({
  model: 'sim',
  stream: true,
  messages: [{ role: 'user', content: 'hi' }],
  max_tokens: 8,
});

async function post(url: string, fault: string) {
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-tokenwire-fault': fault },
    body: chat,
  });
  assert.equal(response.status, 200);
  return readSse(response);
}

describe('tokenwire serve --upstream-timeout-ms', () => {
  it("cuts an upstream that stalls mid-answer: the client gets the dialect's error after the tokens so far", async () => {
    // 1 s, not less: on this shared 2-core machine, with the whole suite running, the process has been
    // seen to wait over 300 ms for the CPU, and a timeout that short then fired before the first token.
    const run = startServe(['--json', '--upstream-timeout-ms', '1000', '--sim-tps', '200']);
    try {
      const info = await run.started;
      const began = performance.now();
      // The simulator pauses 20 s before its 4th token: far longer than the timeout.
      const sse = await post(String(info.url), 'stall=20000,stall-after=3');
      assert.ok(performance.now() - began < 10_000, 'the stream ended long before the stall would have');
      const data = sse.frames.map((frame) => frame.data);
      // vLLM's shape for a mid-stream failure: an error payload, then [DONE] (wire-formats.md).
      assert.equal(data.at(-1), '[DONE]');
      const error = JSON.parse(data.at(-2)!) as { error?: { message?: string; code?: number } };
      assert.match(error.error?.message ?? '', /idle timeout/);
      assert.equal(error.error?.code, 502);
      const text = data
        .slice(0, -2)
        .map(
          (d) =>
            (JSON.parse(d) as { choices?: { delta?: { content?: string | null } }[] }).choices?.[0]?.delta
              ?.content ?? '',
        )
        .join('');
      assert.ok(text.length > 0, 'the tokens before the stall were relayed');
      assert.ok(!data.slice(0, -2).some((d) => d.includes('"finish_reason":"')), 'no finish reason');
    } finally {
      await run.stop();
    }
  });

  it('waits out a stall shorter than the timeout, and 0 turns the timeout off', async () => {
    for (const args of [
      ['--upstream-timeout-ms', '5000'],
      ['--upstream-timeout-ms', '0'],
    ]) {
      const run = startServe(['--json', '--sim-tps', '200', ...args]);
      try {
        const info = await run.started;
        const sse = await post(String(info.url), 'stall=600,stall-after=3');
        assert.equal(sse.frames.at(-1)?.data, '[DONE]', args.join(' '));
        assert.ok(!sse.frames.some((frame) => frame.data.includes('"error"')), args.join(' '));
        assert.ok(sse.frames.some((frame) => frame.data.includes('"finish_reason":"length"')));
      } finally {
        assert.equal(await run.stop(), 0);
      }
    }
  });

  it('rejects a value that is not a whole number, before starting', async () => {
    const io = new FakeIo();
    assert.equal(await runCli(['serve', '--port', '0', '--upstream-timeout-ms', 'soon'], io), 2);
    assert.match(io.err, /--upstream-timeout-ms needs a whole number/);
  });
});
