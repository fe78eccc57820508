import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { repoRoot, testOutputPath } from '../helpers/paths.ts';

const run = promisify(execFile);

/**
 * `@opentelemetry/api` is an optional peer dependency: a process that runs the gateway and the client
 * without telemetry never loads any @opentelemetry package (a resolve hook records every attempt).
 */
describe('telemetry off: nothing of OpenTelemetry is loaded', () => {
  async function loadedWith(telemetry: string): Promise<string[]> {
    const dir = testOutputPath('telemetry-off');
    mkdirSync(dir, { recursive: true });
    const log = join(dir, `loaded-${telemetry === '' ? 'off' : 'on'}.txt`);
    rmSync(log, { force: true });
    const build = (path: string) => pathToFileURL(join(repoRoot, '.build', path)).href;
    writeFileSync(
      join(dir, 'hooks.mjs'),
      `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  if (specifier.startsWith('@opentelemetry/')) appendFileSync(process.env.TW_LOADED_LOG, specifier + '\\n');
  return next(specifier, context);
}
`,
    );
    writeFileSync(
      join(dir, 'register.mjs'),
      `import { register } from 'node:module';\nregister('./hooks.mjs', import.meta.url);\n`,
    );
    const script = join(dir, `run-${telemetry === '' ? 'off' : 'on'}.mjs`);
    writeFileSync(
      script,
      `import { createGateway } from ${JSON.stringify(build('src/server/index.js'))};
import { complete, stream } from ${JSON.stringify(build('src/client/index.js'))};
import { createSim } from ${JSON.stringify(build('src/sim/index.js'))};
import ${JSON.stringify(build('src/node/index.js'))};
import ${JSON.stringify(build('src/index.js'))};
const sim = createSim({ timing: { tokensPerSecond: 5000, loadMs: 0 } });
const gateway = createGateway({
  upstreams: [{ name: 'sim', url: 'http://sim.internal', dialects: ['openai-chat'], models: ['sim'], fetch: sim.fetch }],
  onLog: () => {},
  ${telemetry}
});
const body = { model: 'sim', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] };
const result = await complete({ url: 'http://gw/v1/chat/completions', body }, { fetch: gateway.fetch });
for await (const _ of stream({ url: 'http://gw/v1/chat/completions?format=text', dialect: 'openai-chat', body }, { fetch: gateway.fetch })) {}
await gateway.close();
console.log(result.complete ? 'ok' : 'incomplete');
`,
    );
    const { stdout } = await run(
      process.execPath,
      ['--import', pathToFileURL(join(dir, 'register.mjs')).href, script],
      {
        env: { ...process.env, TW_LOADED_LOG: log },
        timeout: 30000,
      },
    );
    assert.equal(stdout.trim(), 'ok');
    return existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : [];
  }

  it('loads no @opentelemetry package when the gateway has no telemetry option', async () => {
    assert.deepEqual(await loadedWith(''), []);
  });

  it('(control) the hook sees @opentelemetry/api when telemetry is configured', async () => {
    assert.ok((await loadedWith('telemetry: {},')).includes('@opentelemetry/api'));
  });
});
