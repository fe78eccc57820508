import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
    // --ignore-scripts: `prepack` would rebuild dist/ under the other tests; `npm test` built it already.
    const packed = await run(npm, ['pack', '--silent', '--ignore-scripts', '--pack-destination', scratch], {
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

  it('carries the license, and everything the README links to (docs, the screenshot)', () => {
    const installed = join(scratch, 'node_modules', 'tokenwire');
    assert.match(
      readFileSync(join(installed, 'LICENSE'), 'utf8'),
      /^MIT License\n\nCopyright \(c\) 2026 the tokenwire authors/,
    );
    const readme = readFileSync(join(installed, 'README.md'), 'utf8');
    const links = [...readme.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)].map((match) => match[1]!);
    const relative = links.filter((link) => !/^[a-z]+:/i.test(link));
    assert.ok(
      relative.includes('docs/bench-report.png') && relative.includes('docs/client.md'),
      'the links were found',
    );
    const missing = relative.filter((link) => !existsSync(join(installed, link)));
    assert.deepEqual(missing, [], 'relative README links that the package does not carry');
  });

  it('weighs what the README says (`du -sh` of the installed package, within 10 %)', async () => {
    const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
    const stated = /`npm install tokenwire` is ([\d.]+) MB/.exec(readme)?.[1];
    assert.ok(stated !== undefined, 'the README states the install size');
    // du's unit, as `du -sh` prints it: blocks on disk, M = MiB.
    const du = await run('du', ['-sk', join(scratch, 'node_modules', 'tokenwire')]);
    const measuredMiB = Number(du.stdout.split(/\s/)[0]) / 1024;
    const statedMiB = Number(stated);
    assert.ok(
      Math.abs(measuredMiB - statedMiB) <= statedMiB * 0.1,
      `the README says ${stated} MB; du measures ${measuredMiB.toFixed(1)} MB: update the README`,
    );
  });

  it('type-checks in a strict project without the optional packages (no skipLibCheck)', async () => {
    // Every public entry point but `tokenwire/node/redis`, which is for ioredis users (it imports ioredis).
    writeFileSync(
      join(scratch, 'web.ts'),
      ['', '/wire', '/dialects', '/server', '/sim', '/bench']
        .map((sub, i) => `import * as m${i} from 'tokenwire${sub}';\nexport const e${i} = m${i};\n`)
        .join(''),
    );
    writeFileSync(
      join(scratch, 'node.ts'),
      "import * as node from 'tokenwire/node';\nexport const e = node;\n",
    );
    const base = {
      strict: true,
      module: 'nodenext',
      moduleResolution: 'nodenext',
      target: 'es2022',
      noEmit: true,
    };
    // The web-standard layers need no Node types (a browser project's lib); tokenwire/node needs @types/node.
    writeFileSync(
      join(scratch, 'tsconfig.web.json'),
      JSON.stringify({ compilerOptions: { ...base, lib: ['es2023', 'dom'], types: [] }, files: ['web.ts'] }),
    );
    writeFileSync(
      join(scratch, 'tsconfig.node.json'),
      JSON.stringify({
        compilerOptions: { ...base, typeRoots: [join(repoRoot, 'node_modules', '@types')], types: ['node'] },
        files: ['web.ts', 'node.ts'],
      }),
    );
    for (const nodes of readdirSync(join(scratch, 'node_modules')))
      assert.ok(!nodes.startsWith('@opentelemetry') && nodes !== 'undici', `${nodes} is not installed`);
    const tsc = join(repoRoot, 'node_modules', '.bin', 'tsc');
    const version = await run(tsc, ['--version']);
    assert.match(version.stdout, /Version 7\./);
    for (const project of ['tsconfig.web.json', 'tsconfig.node.json']) {
      const checked = await run(tsc, ['-p', project], { cwd: scratch, timeout: 120_000 }).then(
        () => '',
        (error: { stdout?: string }) => error.stdout ?? String(error),
      );
      assert.equal(checked, '', `tsc --strict -p ${project}`);
    }
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
