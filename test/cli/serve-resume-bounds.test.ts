import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SERVE_HELP } from '../../src/cli/commands/serve.ts';
import { startServe } from './cli-helpers.ts';

const post = (url: string, key: string, headers: Record<string, string> = {}) =>
  fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
    body: JSON.stringify({
      model: 'sim',
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 1,
    }),
  });

describe('tokenwire serve: resume store bounds', () => {
  it('--resume-max-streams and --resume-max-streams-per-client are in --help with their defaults', () => {
    assert.match(
      SERVE_HELP,
      /--resume-max-streams N\s+Streams kept for resume at most, in all \(default 1000/,
    );
    assert.match(
      SERVE_HELP,
      /--resume-max-streams-per-client N\n\s+Streams kept for resume per API key[\s\S]*\(default: no bound of its own\)/,
    );
  });

  it('--resume-max-streams-per-client applies: a key past it loses its own oldest stream, never another key’s', async () => {
    const run = startServe([
      '--json',
      '--sim-tps',
      '2000',
      '--api-key',
      'key-aaaaaaaaaaaa',
      '--api-key',
      'key-bbbbbbbbbbbb',
      '--resume-max-streams',
      '10',
      '--resume-max-streams-per-client',
      '3',
    ]);
    const info = await run.started;
    const url = String(info.url);
    try {
      const open = async (key: string) => {
        const response = await post(url, key);
        assert.equal(response.status, 200);
        await response.text();
        return response.headers.get('x-tokenwire-stream-id')!;
      };
      const a = await open('key-aaaaaaaaaaaa');
      const bs: string[] = [];
      for (let i = 0; i < 12; i++) bs.push(await open('key-bbbbbbbbbbbb'));
      const resumeA = await post(url, 'key-aaaaaaaaaaaa', { 'last-event-id': `${a}.1` });
      assert.equal(resumeA.status, 200);
      await resumeA.text();
      const oldB = await post(url, 'key-bbbbbbbbbbbb', { 'last-event-id': `${bs[0]}.1` });
      assert.equal(oldB.status, 404, 'B’s oldest went (3 kept per key)');
      await oldB.text();
      const newB = await post(url, 'key-bbbbbbbbbbbb', { 'last-event-id': `${bs.at(-1)}.1` });
      assert.equal(newB.status, 200);
      await newB.text();
    } finally {
      assert.equal(await run.stop(), 0);
    }
    for (const args of [
      ['--resume-max-streams', '0'],
      ['--resume-max-streams-per-client', 'x'],
    ]) {
      const bad = startServe(args);
      await assert.rejects(bad.started, /exited with 2/, args.join(' '));
      assert.match(bad.err(), /error:/);
    }
  });
});
