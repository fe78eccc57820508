import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type ServedHandler, serve } from '../../src/node/serve.ts';
import { createSim } from '../../src/sim/index.ts';
import { repoRoot, testOutputPath } from '../helpers/paths.ts';
import { cli, FakeIo, type ServedSim, serveSim, startServe } from './cli-helpers.ts';

/** A port nothing listens on (connection refused). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

interface PathProxy {
  /** Its base URL with the prefix, e.g. `http://127.0.0.1:1234/llama`. */
  url: string;
  /** Every request it got: its path and its Authorization header. */
  seen: { path: string; authorization: string | null }[];
  close(): Promise<void>;
}

/**
 * A path-routing proxy in front of a simulator: only `PREFIX/...` is served (the prefix stripped),
 * anything else is a 404 — so an upstream whose URL path the gateway drops cannot be reached at all.
 */
async function pathProxy(prefix: string, models: string[]): Promise<PathProxy> {
  const sim = createSim({ models, timing: { loadMs: 0, tokensPerSecond: 10_000 } });
  const seen: PathProxy['seen'] = [];
  const served: ServedHandler = await serve(async (request) => {
    const url = new URL(request.url);
    seen.push({ path: url.pathname, authorization: request.headers.get('authorization') });
    if (!url.pathname.startsWith(`${prefix}/`)) return new Response('no such route', { status: 404 });
    const init: RequestInit = { method: request.method, headers: { 'content-type': 'application/json' } };
    if (request.method !== 'GET' && request.method !== 'HEAD') init.body = await request.text();
    return sim.fetch(
      new Request(`http://sim.internal${url.pathname.slice(prefix.length)}${url.search}`, init),
    );
  });
  return { url: `${served.url}${prefix}`, seen, close: () => served.close() };
}

async function chat(gatewayUrl: string, model: string): Promise<{ status: number; body: string }> {
  const response = await fetch(`${gatewayUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, stream: true, max_tokens: 3, messages: [{ role: 'user', content: 'hi' }] }),
  });
  return { status: response.status, body: await response.text() };
}

async function modelIds(gatewayUrl: string): Promise<string[]> {
  const list = (await (await fetch(`${gatewayUrl}/v1/models`)).json()) as { data: { id: string }[] };
  return list.data.map((model) => model.id).sort();
}

function writeConfig(name: string, text: string): string {
  const dir = testOutputPath('serve-pool');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}

interface StartRecord {
  url: string;
  upstream: string;
  upstreams: {
    name: string;
    url: string;
    dialects: string[];
    models: string[];
    weight: number;
    down?: string;
  }[];
  balance: string;
  retries: number;
  continueOnFailure: boolean;
  continueMax: number;
}

describe('serve with many upstreams', () => {
  let simA: ServedSim;
  let simB: ServedSim;
  before(async () => {
    simA = await serveSim({ models: ['model-a'] });
    simB = await serveSim({ models: ['model-b'] });
  });
  after(async () => {
    await simA?.close();
    await simB?.close();
  });

  it('two --upstream: both probed, both listed with their models, each model answered by its server', async () => {
    const run = startServe(['--json', '--upstream', simA.url, '--upstream', simB.url]);
    try {
      const started = (await run.started) as unknown as StartRecord;
      assert.deepEqual(
        started.upstreams.map((u) => [u.name, u.url, u.models, u.weight]),
        [
          [simA.url.replace('http://', ''), simA.url, ['model-a'], 1],
          [simB.url.replace('http://', ''), simB.url, ['model-b'], 1],
        ],
      );
      assert.ok(started.upstreams.every((u) => u.dialects.includes('openai-chat') && u.down === undefined));
      assert.equal(started.balance, 'least-busy');
      assert.equal(started.retries, 2);
      assert.deepEqual(await modelIds(started.url), ['model-a', 'model-b']);
      // A server that does not serve a model answers "model not found": a 200 means it went to its own.
      for (const model of ['model-a', 'model-b']) {
        const answer = await chat(started.url, model);
        assert.equal(answer.status, 200, answer.body);
        assert.match(answer.body, /data: \[DONE\]/);
      }
    } finally {
      assert.equal(await run.stop(), 0);
    }
  });

  it('the banner lists each upstream (name, URL, dialects, models, weight), the balance and the retries', async () => {
    const run = startServe([
      '--upstream',
      simA.url,
      '--upstream',
      simB.url,
      '--balance',
      'round-robin',
      '--retries',
      '1',
    ]);
    try {
      await run.started;
      const out = run.out();
      assert.match(out, /upstreams \(balance round-robin, 1 retry before the first byte\):/);
      const name = simA.url.replace('http://', '');
      assert.ok(
        out.includes(
          `    ${name}  ${simA.url}  (ollama-chat, ollama-generate, openai-chat, openai-completions)  models: model-a  weight 1\n`,
        ),
        out,
      );
      assert.match(out, /models: model-b {2}weight 1\n/);
      assert.doesNotMatch(out, /down at start/);
    } finally {
      assert.equal(await run.stop(), 0);
    }
  });

  it("keeps the URL's path: probes and requests go under it (behind a path-routing proxy)", async () => {
    const proxy = await pathProxy('/vllm', ['model-p']);
    const run = startServe(['--json', '--upstream', `${proxy.url}/`]);
    try {
      const started = (await run.started) as unknown as StartRecord;
      assert.equal(started.upstreams.length, 1);
      assert.equal(started.upstreams[0]!.url, proxy.url);
      assert.equal(started.upstreams[0]!.name, proxy.url.replace('http://', ''));
      assert.deepEqual(started.upstreams[0]!.models, ['model-p']);
      const answer = await chat(started.url, 'model-p');
      assert.equal(answer.status, 200, answer.body);
      assert.match(answer.body, /data: \[DONE\]/);
      assert.ok(proxy.seen.length >= 2);
      assert.deepEqual(
        proxy.seen.filter((request) => !request.path.startsWith('/vllm/')),
        [],
        'every probe and call went under /vllm',
      );
      assert.equal(proxy.seen.at(-1)?.path, '/vllm/v1/chat/completions');
    } finally {
      assert.equal(await run.stop(), 0);
      await proxy.close();
    }
  });

  it('an upstream down at start is marked down and named in the banner; the gateway starts and serves', async () => {
    const port = await closedPort();
    const args = ['--upstream', simA.url, '--upstream', `http://127.0.0.1:${port}`];
    const dialects = ['--upstream-dialect', 'openai-chat,openai-completions'];
    const json = startServe(['--json', ...args, ...dialects]);
    try {
      const started = (await json.started) as unknown as StartRecord;
      assert.deepEqual(
        started.upstreams.map((u) => [u.name, u.down]),
        [
          [simA.url.replace('http://', ''), undefined],
          [`127.0.0.1:${port}`, 'connection refused'],
        ],
      );
      assert.deepEqual(started.upstreams[1]!.dialects, ['openai-chat', 'openai-completions']);
      const answer = await chat(started.url, 'model-a');
      assert.equal(answer.status, 200, answer.body);
    } finally {
      assert.equal(await json.stop(), 0);
    }
    const text = startServe([...args, ...dialects]);
    try {
      await text.started;
      assert.ok(text.out().includes(`  down at start: 127.0.0.1:${port} (connection refused)\n`), text.out());
    } finally {
      assert.equal(await text.stop(), 0);
    }
  });

  it('a config upstream down at start without "dialects" is left out with a warning', async () => {
    const port = await closedPort();
    const file = writeConfig(
      'down.json',
      JSON.stringify({
        upstreams: [
          { name: 'alive', url: simA.url },
          { name: 'gone', url: `http://127.0.0.1:${port}` },
        ],
      }),
    );
    const run = startServe(['--json', '--config', file]);
    try {
      const started = (await run.started) as unknown as StartRecord;
      assert.deepEqual(
        started.upstreams.map((u) => u.name),
        ['alive'],
      );
      assert.match(
        run.err(),
        /warning: upstream gone \([^)]*down\.json:1\) is down at start \(connection refused\) and has no dialects given: left out/,
      );
    } finally {
      assert.equal(await run.stop(), 0);
    }
  });

  it('a single --upstream that is down still stops serve (exit 1, the reason)', async () => {
    const { code, io } = await cli([
      'serve',
      '--port',
      '0',
      '--upstream',
      `http://127.0.0.1:${await closedPort()}`,
    ]);
    assert.equal(code, 1, io.err);
    assert.match(io.err, /connection refused/);
  });

  it('a bad config exits 2 before listening, naming the file, the line and the reason', async () => {
    const file = writeConfig('bad.yaml', `upstreams:\n  - name: a\n    url: ${simA.url}\n    weight: 0\n`);
    const { code, io } = await cli(['serve', '--port', '0', '--config', file]);
    assert.equal(code, 2, io.err);
    assert.ok(io.err.includes(`${file}:4: upstream "a": "weight" must be a number above 0`), io.err);
    assert.equal(io.out, '', 'nothing listened');
    // With --workers the file is checked before anything forks.
    const workers = await cli(['serve', '--port', '0', '--workers', '2', '--config', file]);
    assert.equal(workers.code, 2, workers.io.err);
    assert.ok(workers.io.err.includes(`${file}:4: `));
    const duplicate = writeConfig(
      'duplicate.json',
      `{"upstreams": [\n{"name": "a", "url": "${simA.url}"},\n{"name": "a", "url": "${simB.url}"}]}`,
    );
    const second = await cli(['serve', '--port', '0', '--config', duplicate]);
    assert.equal(second.code, 2);
    assert.ok(second.io.err.includes(`${duplicate}:3: two upstreams are named "a" (the other at line 2)`));
    const valid = writeConfig('valid.json', JSON.stringify({ upstreams: [{ name: 'a', url: simA.url }] }));
    const flagWithoutUrl = await cli([
      'serve',
      '--port',
      '0',
      '--config',
      valid,
      '--upstream-dialect',
      'tgi',
    ]);
    assert.equal(flagWithoutUrl.code, 2);
    assert.match(
      flagWithoutUrl.io.err,
      /--upstream-dialect applies to --upstream URLs; .* give their "dialects" in the file/,
    );
    const missing = await cli([
      'serve',
      '--port',
      '0',
      '--config',
      join(testOutputPath('serve-pool'), 'nope.json'),
    ]);
    assert.equal(missing.code, 2);
    assert.match(missing.io.err, /cannot read --config .*nope\.json: no such file/);
  });

  it('--continue-on-failure: an answer whose server dies mid-answer goes on on the other, one stream', async () => {
    const dying = await serveSim({ models: ['m'], faults: 'die-after=6', timing: { tokensPerSecond: 2000 } });
    const sibling = await serveSim({ models: ['m'], timing: { tokensPerSecond: 2000 } });
    const run = startServe([
      '--json',
      '--upstream',
      dying.url,
      '--upstream',
      sibling.url,
      '--balance',
      'round-robin',
      '--continue-on-failure',
      '--continue-max',
      '2',
    ]);
    try {
      const started = (await run.started) as unknown as StartRecord;
      assert.equal(started.continueOnFailure, true);
      assert.equal(started.continueMax, 2);
      for (let i = 0; i < 2; i++) {
        const response = await fetch(`${started.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            model: 'm',
            stream: true,
            max_tokens: 20,
            messages: [{ role: 'user', content: 'Tell me about rivers' }],
          }),
        });
        const body = await response.text();
        assert.match(body, /"finish_reason":"length"/, body);
        assert.match(body, /data: \[DONE\]/);
      }
      assert.equal(dying.sim.stats.log.filter((record) => record.outcome === 'cut').length, 1);
    } finally {
      assert.equal(await run.stop(), 0);
      await dying.close();
      await sibling.close();
    }
  });

  it('--continue-max must be a whole number: exit 2 naming it', async () => {
    const io = new FakeIo();
    assert.equal((await cli(['serve', '--continue-max', 'lots'], io)).code, 2);
    assert.match(io.err, /--continue-max/);
  });

  it('--help documents --upstream (repeatable, path kept), --config, --balance and --retries', async () => {
    const { code, io } = await cli(['serve', '--help']);
    assert.equal(code, 0);
    assert.match(io.out, /--upstream URL .*\n.*repeatable: a pool; the URL's path is kept/);
    assert.match(io.out, /--config FILE +The upstreams as a file: JSON, or YAML/);
    assert.match(io.out, /--balance POLICY .*least-busy \(default\), round-robin,\n +prefix .* or load/);
    assert.match(io.out, /--retries N .*\(default 2\)/);
  });

  it('the tokenwire process itself exits 2 on a bad config, before listening', async () => {
    const file = writeConfig(
      'spawned.json',
      `{"upstreams": [{"name": "a",\n"url": "${simA.url}",\n"colour": "red"}]}`,
    );
    const bin = fileURLToPath(new URL('../../src/cli/bin.js', import.meta.url));
    const child = spawn(process.execPath, [bin, 'serve', '--port', '0', '--config', file], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NO_COLOR: '1' },
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    assert.equal(code, 2, err);
    assert.ok(err.includes(`${file}:3: unknown key "colour" in an upstream`), err);
    assert.equal(out, '');
  });

  it('a bad --balance or --retries exits 2; the flags win over the file', async () => {
    const balance = await cli(['serve', '--port', '0', '--balance', 'random']);
    assert.equal(balance.code, 2);
    assert.match(
      balance.io.err,
      /--balance must be one of least-busy, round-robin, prefix, load, got "random"/,
    );
    const retries = await cli(['serve', '--port', '0', '--retries', '-1']);
    assert.equal(retries.code, 2);
    const file = writeConfig(
      'flags.json',
      JSON.stringify({ upstreams: [{ name: 'a', url: simA.url }], balance: 'prefix', retries: 4 }),
    );
    const fromFile = startServe(['--json', '--config', file]);
    try {
      const started = (await fromFile.started) as unknown as StartRecord;
      assert.deepEqual([started.balance, started.retries], ['prefix', 4]);
    } finally {
      assert.equal(await fromFile.stop(), 0);
    }
    const overridden = startServe(['--json', '--config', file, '--balance', 'load', '--retries', '0']);
    try {
      const started = (await overridden.started) as unknown as StartRecord;
      assert.deepEqual([started.balance, started.retries], ['load', 0]);
    } finally {
      assert.equal(await overridden.stop(), 0);
    }
  });

  it('header credentials from an environment variable reach the upstream and are never printed', async () => {
    const proxy = await pathProxy('/secure', ['model-s']);
    const file = writeConfig(
      'secret.yaml',
      `upstreams:\n  - name: s\n    url: ${proxy.url}\n    headers:\n      Authorization: Bearer \${POOL_KEY}\n`,
    );
    const env = { POOL_KEY: 'sk-pool-secret-42' };
    const runs = [startServe(['--json', '--config', file], env), startServe(['--config', file], env)];
    try {
      const started = (await runs[0]!.started) as unknown as StartRecord;
      await runs[1]!.started;
      const answer = await chat(started.url, 'model-s');
      assert.equal(answer.status, 200, answer.body);
      assert.ok(proxy.seen.length > 0);
      assert.ok(proxy.seen.every((request) => request.authorization === 'Bearer sk-pool-secret-42'));
      for (const run of runs) {
        assert.doesNotMatch(run.out(), /sk-pool-secret-42/);
        assert.doesNotMatch(run.err(), /sk-pool-secret-42/);
      }
    } finally {
      for (const run of runs) assert.equal(await run.stop(), 0);
      await proxy.close();
    }
  });
});

/** docs/gateway.md "A pool of servers": its JSON and YAML examples, run against two simulators. */
describe('docs/gateway.md: the pool config examples run', () => {
  const docs = readFileSync(join(repoRoot, 'docs', 'gateway.md'), 'utf8');
  const section = docs.slice(
    docs.indexOf('## A pool of servers'),
    docs.indexOf('\n## ', docs.indexOf('## A pool of servers') + 1),
  );
  const example = (language: string) => {
    const found = new RegExp(`\`\`\`${language}\\n([\\s\\S]*?)\`\`\``).exec(section);
    assert.ok(found, `the section has a ${language} example`);
    return found[1]!;
  };
  let qwen: ServedSim;
  let llama: PathProxy;
  before(async () => {
    qwen = await serveSim({ models: ['qwen2.5-7b-instruct'] });
    llama = await pathProxy('/llama', ['llama3.2-3b']);
  });
  after(async () => {
    await qwen?.close();
    await llama?.close();
  });

  for (const [language, fileName] of [
    ['json', 'pool.json'],
    ['yaml', 'pool.yaml'],
  ] as const) {
    it(`the ${language} example: both upstreams served, both models listed`, async () => {
      const text = example(language)
        .replace('http://10.0.0.5:8000', qwen.url)
        .replace('http://10.0.0.6:9000/llama', llama.url);
      assert.ok(text.includes(qwen.url) && text.includes(llama.url), 'the example names the two URLs');
      const file = writeConfig(fileName, text);
      const run = startServe(['--json', '--config', file], { VLLM_API_KEY: 'docs-example-key' });
      try {
        const started = (await run.started) as unknown as StartRecord;
        assert.deepEqual(
          started.upstreams.map((u) => [u.name, u.url, u.weight]),
          [
            ['qwen-a', qwen.url, 2],
            ['llama-b', llama.url, 1],
          ],
        );
        assert.deepEqual([started.balance, started.retries], ['prefix', 2]);
        // The alias is a public name, listed beside the models.
        assert.deepEqual(await modelIds(started.url), ['chat', 'llama3.2-3b', 'qwen2.5-7b-instruct']);
        const aliased = await chat(started.url, 'chat');
        assert.equal(aliased.status, 200, aliased.body);
        assert.equal(qwen.sim.stats.log.at(-1)?.model, 'qwen2.5-7b-instruct', 'the server gets its own name');
        const answer = await chat(started.url, 'llama3.2-3b');
        assert.equal(answer.status, 200, answer.body);
        assert.equal(llama.seen.at(-1)?.path, '/llama/v1/chat/completions');
        assert.doesNotMatch(run.out() + run.err(), /docs-example-key/);
      } finally {
        assert.equal(await run.stop(), 0);
      }
    });
  }
});
