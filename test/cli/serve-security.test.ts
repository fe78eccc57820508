import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startRedis, type TestRedis } from '../helpers/redis-server.ts';
import { readSse } from '../helpers/sse-read.ts';
import { startServe } from './cli-helpers.ts';

const chat = JSON.stringify({
  model: 'sim',
  stream: true,
  messages: [{ role: 'user', content: 'hi' }],
  max_tokens: 5,
});

let redis: TestRedis;
before(async () => {
  redis = await startRedis();
});
after(() => redis?.stop());

describe('tokenwire serve: security flags', () => {
  it('binds 127.0.0.1 unless --host says otherwise, and says so at start-up', async () => {
    const json = startServe(['--json']);
    const info = await json.started;
    assert.equal(info.host, '127.0.0.1');
    assert.equal(info.loopbackOnly, true);
    assert.match(String(info.url), /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(info.apiKeyRequired, false);
    assert.equal(await json.stop(), 0);

    const text = startServe([]);
    await text.started;
    await new Promise((r) => setTimeout(r, 10));
    assert.match(text.out(), /bound to 127\.0\.0\.1 only: not reachable from other machines/);
    assert.match(text.out(), /no API key required; no stream limit; CORS off; resume store: memory/);
    assert.equal(await text.stop(), 0);

    const wide = startServe(['--host', '0.0.0.0', '--json']);
    const wideInfo = await wide.started;
    assert.equal(wideInfo.host, '0.0.0.0');
    assert.equal(wideInfo.loopbackOnly, false);
    assert.equal(await wide.stop(), 0);
  });

  it('--api-key (repeatable) and TOKENWIRE_API_KEYS add up; --max-streams, --cors-origin and --max-body-bytes apply', async () => {
    const run = startServe(
      [
        '--json',
        '--api-key',
        'flag-key-1234567',
        '--max-streams',
        '5',
        '--cors-origin',
        'https://play.example',
        '--max-body-bytes',
        '1000',
      ],
      { TOKENWIRE_API_KEYS: 'env-key-aaaaaaa, env-key-bbbbbbb' },
    );
    const info = await run.started;
    assert.equal(info.apiKeyRequired, true);
    assert.equal(info.maxStreams, 5);
    assert.deepEqual(info.corsOrigins, ['https://play.example']);
    const url = `${String(info.url)}/v1/chat/completions`;
    const post = (headers: Record<string, string>, body = chat) =>
      fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    assert.equal((await post({})).status, 401);
    for (const key of ['flag-key-1234567', 'env-key-aaaaaaa', 'env-key-bbbbbbb']) {
      const response = await post({ authorization: `Bearer ${key}` });
      assert.equal(response.status, 200, key);
      assert.equal((await readSse(response)).frames.at(-1)?.data, '[DONE]');
    }
    const cors = await post({ authorization: 'Bearer flag-key-1234567', origin: 'https://play.example' });
    assert.equal(cors.headers.get('access-control-allow-origin'), 'https://play.example');
    await cors.text();
    const big = await post(
      { 'x-api-key': 'flag-key-1234567' },
      JSON.stringify({ messages: [{ role: 'user', content: 'x'.repeat(2000) }] }),
    );
    assert.equal(big.status, 413);
    assert.equal(await run.stop(), 0);
  });

  it('--resume-store redis://HOST:PORT resumes from Redis; a bad store or limit is a usage error', async () => {
    const run = startServe([
      '--json',
      '--resume-store',
      redis.url,
      '--keep-stream-on-disconnect',
      '--sim-tps',
      '200',
    ]);
    const info = await run.started;
    assert.equal(info.resumeStore, redis.url);
    const url = `${String(info.url)}/v1/chat/completions`;
    const body = JSON.stringify({
      model: 'sim',
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 30,
    });
    const post = (headers: Record<string, string> = {}) =>
      fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    try {
      // One read may carry several frames: resume after the last one actually received.
      const first = await readSse(await post(), (frames) => frames.length >= 3);
      const lastSeq = Number(first.frames.at(-1)!.id!.split('.')[1]);
      const resumed = await readSse(await post({ 'last-event-id': first.frames.at(-1)!.id! }));
      assert.equal(resumed.frames.at(-1)?.data, '[DONE]');
      assert.equal(Number(resumed.frames[0]!.id!.split('.')[1]), lastSeq + 1);
    } finally {
      assert.equal(await run.stop(), 0);
    }

    for (const args of [
      ['--resume-store', 'memcached://x'],
      ['--resume-store', 'redis://127.0.0.1:1'],
      ['--max-streams', '0'],
      ['--cors-origin', 'https://play.example/path'],
    ]) {
      const bad = startServe(args);
      await assert.rejects(bad.started, /exited with 2/, args.join(' '));
      assert.match(bad.err(), /error:/);
    }
  });
});
