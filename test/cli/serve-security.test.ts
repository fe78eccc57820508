import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { SERVE_HELP } from '../../src/cli/commands/serve.ts';
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

/** GET with a Host of our choosing (fetch does not let a caller set Host). */
function getWithHost(url: string, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(url, { headers: { host, origin: `http://${host}` } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    outgoing.on('error', reject);
    outgoing.end();
  });
}

describe('tokenwire serve: hardening flags', () => {
  it('lists --body-timeout-ms, --max-connections and --allowed-host in --help', () => {
    for (const flag of ['--body-timeout-ms N', '--max-connections N', '--allowed-host HOST'])
      assert.ok(SERVE_HELP.includes(flag), flag);
  });

  it('answers only the loopback names and the bound address when bound to loopback (DNS rebinding)', async () => {
    const run = startServe(['--json']);
    const info = await run.started;
    try {
      assert.deepEqual(info.allowedHosts, ['localhost', '127.0.0.1', '[::1]']);
      assert.equal(info.maxConnections, 1024);
      assert.equal(info.bodyTimeoutMs, 30000);
      const metrics = `${String(info.url)}/metrics`;
      const rebound = await getWithHost(metrics, 'rebind.example:18080');
      assert.equal(rebound.status, 421);
      assert.doesNotMatch(rebound.body, /tokenwire_/);
      assert.equal((await getWithHost(`${String(info.url)}/healthz`, 'rebind.example')).status, 421);
      assert.equal((await getWithHost(metrics, `localhost:${String(info.port)}`)).status, 200);
    } finally {
      assert.equal(await run.stop(), 0);
    }

    const extra = startServe(['--json', '--allowed-host', 'Rebind.Example']);
    const extraInfo = await extra.started;
    try {
      assert.equal((await getWithHost(`${String(extraInfo.url)}/metrics`, 'rebind.example:1')).status, 200);
      assert.equal((await getWithHost(`${String(extraInfo.url)}/metrics`, 'other.example')).status, 421);
    } finally {
      assert.equal(await extra.stop(), 0);
    }
  });

  it('answers any Host when bound beyond loopback without --allowed-host', async () => {
    const wide = startServe(['--json', '--host', '0.0.0.0']);
    const info = await wide.started;
    try {
      assert.equal(info.allowedHosts, '*');
      const got = await getWithHost(`http://127.0.0.1:${String(info.port)}/healthz`, 'gateway.lan:8080');
      assert.equal(got.status, 200);
    } finally {
      assert.equal(await wide.stop(), 0);
    }
  });

  it('--body-timeout-ms answers 408 to a body that does not arrive; --max-connections 0 is a usage error', async () => {
    const run = startServe(['--json', '--body-timeout-ms', '300']);
    const info = await run.started;
    try {
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = connect(Number(info.port), '127.0.0.1');
        let text = '';
        socket.setEncoding('utf8');
        socket.on('data', (chunk: string) => {
          text += chunk;
        });
        socket.on('close', () => resolve(text));
        socket.on('error', reject);
        socket.write(
          'POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"model":',
        );
      });
      assert.match(answer, /^HTTP\/1\.1 408 Request Timeout\r\n/);
      assert.match(answer, /did not arrive within 300 ms/);
    } finally {
      assert.equal(await run.stop(), 0);
    }
    for (const args of [
      ['--max-connections', '0'],
      ['--body-timeout-ms', 'soon'],
    ]) {
      const bad = startServe(args);
      await assert.rejects(bad.started, /exited with 2/, args.join(' '));
    }
  });
});
