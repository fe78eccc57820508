import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { startGateway, type TestGateway } from '../helpers/gateway.ts';
import { repoRoot } from '../helpers/paths.ts';

const run = promisify(execFile);
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/** The README's first client example (the `stream()` one under "## The client"). */
function readmeClientExample(): string {
  const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## The client'));
  const code = /```js\n([\s\S]*?)```/.exec(section)?.[1];
  if (code === undefined || !code.includes("from 'tokenwire'"))
    assert.fail('the README has a client example');
  return code;
}

/**
 * `npm install tokenwire` as a user gets it: the packed tarball (`npm pack` of dist/, as built by
 * `npm test`) installed into a scratch project outside the repository, so nothing resolves from the
 * repository's node_modules. `--offline`: the package has no runtime dependency, so the install needs
 * no registry at all (an optional peer dependency is never fetched).
 */
describe('the packed tarball, installed in a scratch project', () => {
  let scratch: string;
  let gateway: TestGateway;
  const node = (args: string[], env: Record<string, string> = {}) =>
    run(process.execPath, args, { cwd: scratch, env: { ...process.env, ...env }, timeout: 60_000 });

  before(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'tokenwire-install-'));
    gateway = await startGateway();
    const packed = await run(npm, ['pack', '--silent', '--pack-destination', scratch], {
      cwd: repoRoot,
      timeout: 120_000,
    });
    const tarball = join(scratch, packed.stdout.trim().split('\n').at(-1)!);
    writeFileSync(
      join(scratch, 'package.json'),
      JSON.stringify({ name: 'scratch', version: '1.0.0', private: true, type: 'module' }),
    );
    await run(npm, ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', tarball], {
      cwd: scratch,
      timeout: 120_000,
    });
  });
  after(async () => {
    await gateway?.close();
    if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
  });

  it('installs tokenwire alone: no runtime dependency comes with it', () => {
    const installed = readdirSync(join(scratch, 'node_modules')).filter((name) => !name.startsWith('.'));
    assert.deepEqual(installed, ['tokenwire']);
  });

  it("runs the README's client example against a live gateway", async () => {
    writeFileSync(join(scratch, 'example.mjs'), readmeClientExample());
    const { stdout, stderr } = await node(['example.mjs'], { TOKENWIRE_URL: gateway.url });
    assert.match(stdout, /TTFT \d+ ms, \d+ tokens/);
    assert.doesNotMatch(stderr, /incomplete/);
  });

  it('loads the node adapter (serve) without undici, which only the upstream fetch needs', async () => {
    const code =
      "const m = await import('tokenwire/node'); console.log(typeof m.serve, typeof m.createUndiciFetch);";
    const { stdout } = await node(['--input-type=module', '-e', code]);
    assert.equal(stdout.trim(), 'function function');
  });

  const cli = (args: string[]) =>
    node([join('node_modules', 'tokenwire', 'dist', 'cli', 'bin.js'), ...args], { NO_COLOR: '1' }).then(
      () => ({ code: 0, stderr: '' }),
      (error: { code?: number; stderr?: string }) => ({ code: error.code, stderr: error.stderr ?? '' }),
    );

  it('a feature whose optional package is missing says which package and how to install it (exit 1)', async () => {
    const serve = await cli(['serve', '--port', '0']);
    assert.equal(serve.code, 1);
    assert.match(
      serve.stderr,
      /simulated model .*needs the npm package gpt-tokenizer.*npm install gpt-tokenizer/,
    );
    const upstream = await cli(['serve', '--port', '0', '--upstream', gateway.url]);
    assert.equal(upstream.code, 1);
    assert.match(upstream.stderr, /npm install undici/);
    const bench = await cli(['bench', `${gateway.url}/v1/chat/completions`, '-n', '1']);
    assert.equal(bench.code, 1);
    assert.match(bench.stderr, /npm install hdr-histogram-js undici/, 'both, in one command');
    const chat = await cli(['chat', 'hello']);
    assert.equal(chat.code, 1);
    assert.match(chat.stderr, /npm install gpt-tokenizer/);
  });

  it('the CLI commands that need no optional package still run: chat against a URL, inspect', async () => {
    const chat = await node([
      join('node_modules', 'tokenwire', 'dist', 'cli', 'bin.js'),
      'chat',
      `${gateway.url}/v1/chat/completions`,
      'hello',
      '--model',
      'sim',
    ]);
    assert.ok(chat.stdout.length > 0);
    assert.match(chat.stderr, /finished|TRUNCATED/);
  });
});
