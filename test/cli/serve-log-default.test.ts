import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { describe, it } from 'node:test';
import { DIALECT_IDS } from '../../src/dialects/dialect.ts';
import { startServe } from './cli-helpers.ts';

/** A port nothing listens on: bound, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function post(url: string, model = 'sim'): Promise<Response> {
  return fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    // Fast, and no max_tokens: an answer cut by its cap is a warning (request-log.ts levelOf).
    headers: { 'content-type': 'application/json', 'x-tokenwire-fault': 'tps=100000' },
    body: JSON.stringify({ model, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
  });
}

/** The JSON lines on stderr (start-up warnings are plain text and skipped). */
function logLines(err: string): Record<string, unknown>[] {
  return err
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

// A 502's request id must lead somewhere without --log.
describe('tokenwire serve: failed requests are logged by default', () => {
  it('a 502 writes one warn-or-above line naming its request id; a success writes none', async () => {
    const port = await closedPort();
    const run = startServe([
      '--json',
      '--upstream',
      `http://127.0.0.1:${port}`,
      '--upstream-dialect',
      'openai-chat',
    ]);
    try {
      const started = (await run.started) as { url: string; logLevel: string };
      assert.equal(started.logLevel, 'warn');
      const response = await post(started.url, 'm');
      await response.text();
      assert.equal(response.status, 502);
      const id = response.headers.get('x-request-id');
      assert.ok(id !== null && id !== '');
      const lines = logLines(run.err());
      assert.equal(lines.length, 1, run.err());
      assert.equal(lines[0]!.requestId, id);
      assert.ok(lines[0]!.level === 'error' || lines[0]!.level === 'warn');
      assert.equal(lines[0]!.status, 502);
    } finally {
      await run.stop();
    }
  });

  it('a successful request writes nothing; --log writes it; the banner says how to see more', async () => {
    const quiet = startServe([]);
    try {
      const { line } = (await quiet.started) as { line: string };
      const url = /listening on (\S+)/.exec(line)?.[1];
      assert.ok(url !== undefined, line);
      const response = await post(url);
      assert.equal(response.status, 200);
      await response.text();
      // The stream's record is written when it ends; a refused request after it comes out in order.
      const refused = await post(url, 'no-such-model');
      await refused.text();
      assert.equal(refused.status, 404);
      const lines = logLines(quiet.err());
      assert.equal(lines.length, 1, quiet.err());
      assert.equal(lines[0]!.status, 404);
      assert.equal(lines[0]!.requestId, refused.headers.get('x-request-id'));
      assert.match(
        quiet.out(),
        /log: failed, refused and truncated requests \(warn and above\)[^\n]*--log for every request/,
      );
      // The dialect count is the real one.
      assert.match(
        quiet.out(),
        new RegExp(`the built-in simulated model \\(all ${DIALECT_IDS.length} dialects\\)`),
      );
      assert.equal(DIALECT_IDS.length, 8);
    } finally {
      await quiet.stop();
    }
    const loud = startServe(['--log']);
    try {
      const { line } = (await loud.started) as { line: string };
      const url = /listening on (\S+)/.exec(line)?.[1] ?? assert.fail(line);
      const response = await post(url);
      await response.text();
      const refused = await post(url, 'no-such-model');
      await refused.text();
      const lines = logLines(loud.err());
      assert.deepEqual(
        lines.map((entry) => entry.status),
        [200, 404],
      );
      assert.match(loud.out(), /log: every request as a JSON line/);
    } finally {
      await loud.stop();
    }
  });
});
