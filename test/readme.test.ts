import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { FAULTS } from '../src/sim/faults.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { repoRoot, testOutputPath } from './helpers/paths.ts';

const run = promisify(execFile);
const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
/** The README and the docs it links to: their examples run, whichever page they are on. */
const DOCS = ['README.md', 'docs/client.md', 'docs/gateway.md', 'docs/cli.md', 'docs/simulator.md'];
const pages = DOCS.map((path) => ({ path, text: readFileSync(join(repoRoot, path), 'utf8') }));

/** The README's JavaScript examples run as written (importing the package by name, from dist/). */
describe('README', () => {
  let gateway: TestGateway;
  before(async () => {
    gateway = await startGateway();
  });
  after(() => gateway?.close());

  const examples = pages.flatMap((page) =>
    [...page.text.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => ({ path: page.path, code: m[1]! })),
  );

  it('has runnable examples, one in the README itself', () => {
    assert.ok(examples.length >= 3);
    assert.ok(examples.some((example) => example.path === 'README.md'));
  });

  it('links to every page of docs/ it moved its details to', () => {
    for (const path of DOCS.slice(1).concat([
      'docs/translation.md',
      'docs/dialects.md',
      'docs/playground.md',
      'docs/performance.md',
      'docs/deploy.md',
    ])) {
      assert.ok(readme.includes(`](${path})`), `README does not link ${path}`);
    }
  });

  examples.forEach(({ path, code }, i) => {
    it(`example ${i + 1} (${path}) runs against a live gateway`, async () => {
      // Inside the repository, so `import 'tokenwire'` resolves to this package (self-reference).
      const dir = testOutputPath('readme-examples');
      mkdirSync(dir, { recursive: true });
      const file = join(dir, `example-${i + 1}.mjs`);
      writeFileSync(file, code);
      const { stdout } = await run(process.execPath, [file], {
        env: { ...process.env, TOKENWIRE_URL: gateway.url },
        timeout: 30000,
      });
      assert.ok(stdout.trim().length > 0, 'the example printed nothing');
    });
  });

  it('documents every simulator fault (docs/simulator.md)', () => {
    const simulator = pages.find((page) => page.path === 'docs/simulator.md')!.text;
    for (const fault of FAULTS)
      assert.ok(simulator.includes(`| \`${fault.name}`), `docs/simulator.md misses the fault ${fault.name}`);
  });
});
