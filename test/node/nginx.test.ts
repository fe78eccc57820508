import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { repoRoot } from '../helpers/paths.ts';

/**
 * docs/deploy.md's nginx configuration, run by Debian's nginx (/usr/sbin/nginx; scripts/check-test-deps.mjs
 * installs it) in front of `tokenwire serve` child processes. The block is read from the document, so
 * what the document says is what is tested; only the ports and the read timeout (300 s -> 2 s) change.
 */
const NGINX = '/usr/sbin/nginx';
const READ_TIMEOUT_S = 2;
const KEEPALIVE_MS = 500;
/** A silence twice nginx's read timeout. */
const STALL_MS = 4000;

function deployBlock(): string {
  const doc = readFileSync(join(repoRoot, 'docs', 'deploy.md'), 'utf8');
  const block = /```nginx\n([\s\S]*?)```/.exec(doc)?.[1];
  assert.ok(block !== undefined, 'docs/deploy.md has an nginx block');
  return block;
}

/** The document's block for one gateway: its upstream named `name`, served on `port` under `/`. */
function configFor(name: string, gatewayPort: number, listenPort: number): string {
  const block = deployBlock();
  for (const expected of [
    'server 127.0.0.1:8080;',
    'listen 80;',
    'proxy_read_timeout 300s;',
    'upstream tokenwire',
  ])
    assert.ok(block.includes(expected), `the block has ${expected}`);
  return block
    .replace('upstream tokenwire', `upstream ${name}`)
    .replace('proxy_pass http://tokenwire;', `proxy_pass http://${name};`)
    .replace('server 127.0.0.1:8080;', `server 127.0.0.1:${gatewayPort};`)
    .replace('listen 80;', `listen 127.0.0.1:${listenPort};`)
    .replace('proxy_read_timeout 300s;', `proxy_read_timeout ${READ_TIMEOUT_S}s;`);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

interface Served {
  child: ChildProcess;
  port: number;
  stderr: () => string;
}

/** `tokenwire serve` (the compiled CLI) in a child process, on a free port; resolves with its port. */
async function serveChild(args: string[]): Promise<Served> {
  const child = spawn(
    process.execPath,
    [join(repoRoot, '.build/src/cli/bin.js'), 'serve', '--port', '0', '--json', ...args],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk) => {
    stderr += chunk;
  });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', () => reject(new Error(`serve exited early: ${stderr}`)));
  });
  const { url } = JSON.parse(line) as { url: string };
  return { child, port: Number(new URL(url).port), stderr: () => stderr };
}

interface Exchange {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The body as it came, one entry per read. */
  reads: string[];
  text: string;
  /** How the body ended: 'end', or the error's message. */
  ended: string;
}

/** A POST through nginx with node:http (no pooling: one connection each), every read recorded. */
function post(
  port: number,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Exchange> {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        agent: false,
        headers: Object.assign(
          { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
          headers,
        ),
      },
      (res) => {
        const reads: string[] = [];
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => reads.push(chunk));
        const done = (ended: string) =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, reads, text: reads.join(''), ended });
        res.on('end', () => done('end'));
        res.on('error', (error) => done(error.message));
        res.on('aborted', () => done('aborted'));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

const chat = (model: string, maxTokens: number) => ({
  model,
  stream: true,
  max_tokens: maxTokens,
  messages: [{ role: 'user', content: 'hello' }],
});

describe('behind nginx (docs/deploy.md)', () => {
  let dir: string;
  let nginx: ChildProcess | undefined;
  let nginxLog = '';
  const children: ChildProcess[] = [];
  /** nginx in front of the gateway with keepalives; and of one without (the control). */
  let port = 0;
  let barePort = 0;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tokenwire-nginx-'));
    const gateway = await serveChild([
      '--keepalive-ms',
      String(KEEPALIVE_MS),
      '--trust-proxy',
      '127.0.0.1',
      '--resume-max-streams-per-client',
      '1',
      '--sim-tps',
      '20',
    ]);
    const bare = await serveChild(['--keepalive-ms', '0']);
    children.push(gateway.child, bare.child);
    port = await freePort();
    barePort = await freePort();
    for (const temp of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(dir, temp));
    const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
    const conf = [
      // As root, nginx's workers would run as `nobody`, who cannot write to this private directory.
      isRoot ? 'user root;' : '',
      'worker_processes 1;',
      `error_log ${join(dir, 'error.log')} warn;`,
      `pid ${join(dir, 'nginx.pid')};`,
      'events { worker_connections 128; }',
      'http {',
      '  access_log off;',
      `  client_body_temp_path ${join(dir, 'body')};`,
      `  proxy_temp_path ${join(dir, 'proxy')};`,
      `  fastcgi_temp_path ${join(dir, 'fastcgi')};`,
      `  uwsgi_temp_path ${join(dir, 'uwsgi')};`,
      `  scgi_temp_path ${join(dir, 'scgi')};`,
      configFor('tokenwire', gateway.port, port),
      configFor('bare', bare.port, barePort),
      '}',
    ].join('\n');
    writeFileSync(join(dir, 'nginx.conf'), conf);
    nginx = spawn(NGINX, ['-c', join(dir, 'nginx.conf'), '-p', dir, '-g', 'daemon off;'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    nginx.stderr?.on('data', (chunk) => {
      nginxLog += chunk;
    });
    // Ready once it answers (a 404 from the gateway through it).
    for (let attempt = 0; ; attempt++) {
      const ready = await fetch(`http://127.0.0.1:${port}/healthz`).then(
        (response) => response.status === 200,
        () => false,
      );
      if (ready) break;
      if (attempt > 200 || nginx.exitCode !== null)
        assert.fail(`nginx did not start: ${nginxLog} ${readError(dir)}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  });

  after(async () => {
    for (const child of [nginx, ...children]) {
      if (child === undefined || child.exitCode !== null) continue;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('passes tokens through one by one: several reads carry text before the end', async () => {
    const answer = await post(port, '/v1/chat/completions', chat('sim', 12));
    assert.equal(answer.status, 200);
    assert.equal(answer.ended, 'end');
    const done = answer.reads.findIndex((read) => read.includes('[DONE]'));
    assert.ok(done >= 0, 'the stream ended with its terminal event');
    const textReads = answer.reads.slice(0, done).filter((read) => read.includes('"content":"'));
    assert.ok(
      textReads.length > 1,
      `reads carrying text before the end: ${textReads.length} of ${answer.reads.length}`,
    );
  });

  it("keeps a silent stream open: keepalive comments come more often than nginx's read timeout", async () => {
    const model = `sim@stall=${STALL_MS},stall-after=2`;
    const kept = await post(port, '/v1/chat/completions', chat(model, 4));
    assert.equal(kept.status, 200);
    assert.equal(kept.ended, 'end');
    assert.match(kept.text, /^:.*\n\n/m, 'keepalive comments went through nginx');
    assert.match(kept.text, /data: \[DONE\]/, 'the stream outlived the stall');
    // The control: the same stall behind the same configuration, from a gateway without keepalives, is
    // cut by nginx's read timeout (so the timeout above was real).
    const cut = await post(barePort, '/v1/chat/completions', chat(model, 4));
    assert.equal(cut.status, 200);
    assert.doesNotMatch(cut.text, /data: \[DONE\]/, 'nginx cut the silent stream');
  });

  it('resumes with Last-Event-ID through nginx, and --trust-proxy sees the X-Forwarded-For address', async () => {
    // One stream kept per client: a client's second stream evicts its first, another client's does not.
    const from = (address: string) => ({ 'x-forwarded-for': address });
    const first = await post(port, '/v1/chat/completions', chat('sim', 3), from('10.1.0.1'));
    const id = first.headers['x-tokenwire-stream-id'];
    assert.equal(typeof id, 'string');
    const other = await post(port, '/v1/chat/completions', chat('sim', 3), from('10.2.0.1'));
    assert.equal(other.status, 200);
    const resumed = await post(port, '/v1/chat/completions', chat('sim', 3), {
      ...from('10.1.0.1'),
      'last-event-id': `${id}.1`,
    });
    assert.equal(resumed.status, 200, `another address's stream left it resumable: ${resumed.text}`);
    const ids = (text: string) => [...text.matchAll(/^id: (\S+)$/gm)].map((match) => match[1]);
    assert.deepEqual(ids(resumed.text), ids(first.text).slice(1), 'every event after event 1, once');
    assert.match(resumed.text, /data: \[DONE\]/);
    // The same client's next stream takes its one place.
    await post(port, '/v1/chat/completions', chat('sim', 3), from('10.1.0.1'));
    const evicted = await post(port, '/v1/chat/completions', chat('sim', 3), {
      ...from('10.1.0.1'),
      'last-event-id': `${id}.1`,
    });
    assert.equal(evicted.status, 404, 'its own later stream evicted it');
  });
});

function readError(dir: string): string {
  try {
    return readFileSync(join(dir, 'error.log'), 'utf8');
  } catch {
    return '';
  }
}
