import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { type ServedHandler, serve } from '../../src/node/serve.ts';
import { testOutputPath } from '../helpers/paths.ts';
import { startServe } from './cli-helpers.ts';

/** An OpenAI chat stream as vLLM writes it: a role chunk, two text chunks, the finish chunk, [DONE]. */
const UPSTREAM_SSE = [
  { choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] },
  { choices: [{ index: 0, delta: { content: 'Hello' }, finish_reason: null }] },
  { choices: [{ index: 0, delta: { content: ' world' }, finish_reason: null }] },
  { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] },
]
  .map(
    (chunk) =>
      `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model: 'm', ...chunk })}\n\n`,
  )
  .concat('data: [DONE]\n\n')
  .join('');

async function streamThrough(url: string): Promise<string> {
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
  });
  assert.equal(response.status, 200);
  return response.text();
}

/** The text of the `content` deltas of an OpenAI chat SSE body, and its `id:` lines. */
function readSse(body: string): { text: string; ids: string[]; done: boolean } {
  let text = '';
  const ids: string[] = [];
  for (const line of body.split('\n')) {
    if (line.startsWith('id: ')) ids.push(line.slice(4));
    if (!line.startsWith('data: {')) continue;
    const chunk = JSON.parse(line.slice(6)) as { choices?: { delta?: { content?: string } }[] };
    text += chunk.choices?.[0]?.delta?.content ?? '';
  }
  return { text, ids, done: body.includes('data: [DONE]') };
}

// serve.ts loads the simulator, node:cluster's code and undici (its Agent alone) only for the features
// that use them: these check that each feature still works from the CLI, and what `--upstream` loads.
describe('tokenwire serve --upstream (what it loads, and that it relays)', () => {
  let upstream: ServedHandler;
  before(async () => {
    upstream = await serve(
      () => new Response(UPSTREAM_SSE, { headers: { 'content-type': 'text/event-stream' } }),
    );
  });
  after(() => upstream.close());

  it("relays a stream through undici's Agent: the text, an SSE id per event, [DONE]", async () => {
    const run = startServe(['--json', '--upstream', upstream.url, '--upstream-dialect', 'openai-chat']);
    try {
      const { url } = (await run.started) as { url: string };
      const sse = readSse(await streamThrough(url));
      assert.equal(sse.text, 'Hello world');
      assert.equal(sse.done, true);
      assert.ok(sse.ids.length >= 3, `ids: ${sse.ids.join(', ')}`);
      assert.equal(new Set(sse.ids).size, sse.ids.length);
    } finally {
      assert.equal(await run.stop(), 0);
    }
  });

  it('without --upstream, still fronts the simulator and names its raw route', async () => {
    const run = startServe([]);
    try {
      await run.started;
      assert.match(
        run.out(),
        /raw simulator \(its own bytes, faults and all\): http:\/\/[^ ]+\/sim\/<dialect path>/,
      );
    } finally {
      await run.stop();
    }
  });

  it('as its own process, loads neither the simulator, the cluster code nor all of undici', async () => {
    const dir = testOutputPath('serve-upstream-modules');
    mkdirSync(dir, { recursive: true });
    const list = `${dir}/loaded.txt`;
    writeFileSync(list, '');
    // ESM modules through a load hook, CommonJS ones (undici) from the require cache at exit.
    writeFileSync(
      `${dir}/hooks.mjs`,
      `import { appendFileSync } from 'node:fs';\nexport async function load(url, context, next) {\n  appendFileSync(${JSON.stringify(list)}, url + '\\n');\n  return next(url, context);\n}\n`,
    );
    writeFileSync(
      `${dir}/register.mjs`,
      `import { appendFileSync } from 'node:fs';\nimport { createRequire, register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(`${dir}/hooks.mjs`).href)});\nconst require = createRequire(import.meta.url);\nprocess.on('exit', () => appendFileSync(${JSON.stringify(list)}, Object.keys(require.cache).join('\\n') + '\\n'));\n`,
    );
    const bin = fileURLToPath(new URL('../../src/cli/bin.js', import.meta.url));
    const child = spawn(
      process.execPath,
      [
        '--import',
        pathToFileURL(`${dir}/register.mjs`).href,
        bin,
        'serve',
        '--port',
        '0',
        '--json',
        '--upstream',
        upstream.url,
        '--upstream-dialect',
        'openai-chat',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } },
    );
    let out = '';
    let err = '';
    child.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const line = out.split('\n')[0];
        if (out.includes('\n') && line !== undefined) resolve((JSON.parse(line) as { url: string }).url);
      });
      void exited.then((code) => reject(new Error(`serve exited with ${code}: ${err}`)));
    });
    try {
      assert.equal(readSse(await streamThrough(url)).text, 'Hello world');
    } finally {
      child.kill('SIGTERM');
    }
    assert.equal(await exited, 0, err);
    const loaded = readFileSync(list, 'utf8').split('\n');
    const has = (part: string) => loaded.some((entry) => entry.includes(part));
    assert.ok(has('/node/undici-fetch.js'), 'the list is the real one');
    assert.ok(has('/undici/lib/dispatcher/agent.js'), "undici's Agent is loaded");
    for (const unused of [
      '/sim/create-sim.js',
      '/sim/corpus.js',
      '/node/cluster-serve.js',
      '/undici/index.js',
      '/undici/lib/web/fetch/',
    ])
      assert.ok(!has(unused), `${unused} is loaded`);
  });
});
