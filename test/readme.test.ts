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

/** The README's JavaScript examples run as written (importing the package by name, from dist/). */
describe('README', () => {
  let gateway: TestGateway;
  before(async () => {
    gateway = await startGateway();
  });
  after(() => gateway?.close());

  const examples = [...readme.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]!);

  it('has runnable examples', () => {
    assert.ok(examples.length >= 3);
  });

  examples.forEach((code, i) => {
    it(`example ${i + 1} runs against a live gateway`, async () => {
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

  it('documents every simulator fault', () => {
    for (const fault of FAULTS)
      assert.ok(readme.includes(`| \`${fault.name}`), `README misses the fault ${fault.name}`);
  });
});
