import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import type { IncomingMessage } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { SERVE_HELP } from '../../src/cli/commands/serve.ts';
import { startRedis } from '../helpers/redis-server.ts';
import { sendToWorker, type WorkerAnswer } from '../helpers/worker-request.ts';
import { startServe } from './cli-helpers.ts';

/** `tokenwire serve --workers 2` as a real process tree (node:cluster needs a real primary). */
async function startWorkers(
  args: string[],
): Promise<{ child: ChildProcess; url: string; info: Record<string, unknown>; err: () => string }> {
  // The compiled CLI beside this compiled test (.build/src/cli/bin.js).
  const bin = fileURLToPath(new URL('../../src/cli/bin.js', import.meta.url));
  const child = spawn(process.execPath, [bin, 'serve', '--port', '0', '--json', '--workers', '2', ...args], {
    env: { ...process.env, NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    err += chunk.toString();
  });
  const info = await new Promise<Record<string, unknown>>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('\n')) resolve(JSON.parse(out.split('\n')[0]!) as Record<string, unknown>);
    });
    child.once('exit', (code) => reject(new Error(`serve exited (${code}) before listening: ${err}`)));
  });
  return { child, url: String(info.url), info, err: () => err };
}

function text(response: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = '';
    response.on('data', (chunk: string) => {
      body += chunk;
    });
    response.on('end', () => resolve(body));
    response.on('error', reject);
  });
}

/** Resolves with what was read once `until` holds for it (the rest of the body keeps coming). */
function readUntil(response: IncomingMessage, until: (body: string) => boolean): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = '';
    const onData = (chunk: string) => {
      body += chunk;
      if (until(body)) {
        response.off('data', onData);
        response.pause();
        resolve(body);
      }
    };
    response.on('data', onData);
    response.on('end', () => resolve(body));
    response.on('error', reject);
  });
}

/** SSE events as `id data` lines (comments, retry and blank lines dropped). */
function events(body: string): string[] {
  const out: string[] = [];
  for (const block of body.split('\n\n')) {
    const id = /^id: (.*)$/m.exec(block)?.[1];
    const data = /^data: (.*)$/m.exec(block)?.[1];
    if (data !== undefined) out.push(`${id ?? ''} ${data}`);
  }
  return out;
}

const chat = (maxTokens: number) =>
  JSON.stringify({
    model: 'sim',
    stream: true,
    max_tokens: maxTokens,
    messages: [{ role: 'user', content: 'tell me about workers' }],
  });

/** Requests until a worker other than `not` answers (bounded: round robin gets there in two). */
async function onAnotherWorker(
  attempt: () => Promise<WorkerAnswer>,
  not: string,
  onSame: (answer: WorkerAnswer) => Promise<unknown> = async (answer) => answer.response.destroy(),
): Promise<WorkerAnswer> {
  for (let i = 0; i < 40; i++) {
    const answer = await attempt();
    if (answer.worker !== not) return answer;
    await onSame(answer);
  }
  throw new Error(`40 connections, all answered by worker ${not}`);
}

function sampleSum(metrics: string, name: string, labels: string): number {
  let sum = 0;
  for (const line of metrics.split('\n'))
    if (line.startsWith(`${name}{`) && line.includes(labels))
      sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  return sum;
}

/** Opens a stream on one worker and resumes it, live, on another: every later event, none twice. */
async function resumeOnAnotherWorker(url: string): Promise<void> {
  const opened = await sendToWorker(url, '/v1/chat/completions', { body: chat(40) });
  assert.equal(opened.status, 200);
  const streamId = String(opened.response.headers['x-tokenwire-stream-id']);
  const first = await readUntil(opened.response, (body) => body.includes(`id: ${streamId}.3\n`));
  const rest = text(opened.response);
  opened.response.resume();
  // From id 2, on a connection another worker took, while the stream is live on its own.
  const resumed = await onAnotherWorker(
    () =>
      sendToWorker(url, '/v1/chat/completions', {
        body: chat(40),
        headers: { 'last-event-id': `${streamId}.2` },
      }),
    opened.worker,
  );
  assert.equal(resumed.status, 200);
  assert.notEqual(resumed.worker, opened.worker);
  const resumedEvents = events(await text(resumed.response));
  const original = events(first + (await rest));
  const afterTwo = original.slice(original.findIndex((e) => e.startsWith(`${streamId}.2 `)) + 1);
  assert.ok(afterTwo.length > 10, `the stream went on: ${afterTwo.length} events after id 2`);
  assert.deepEqual(resumedEvents, afterTwo, 'every event after id 2, live ones included, none twice');
  assert.ok(resumedEvents.at(-1)?.endsWith(' [DONE]'), 'to the end');
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves once `check` holds, looking every 50 ms (the test's own timeout bounds it). */
async function until(check: () => boolean): Promise<void> {
  while (!check()) await pause(50);
}

describe('tokenwire serve --workers', { timeout: 120_000 }, () => {
  let server: Awaited<ReturnType<typeof startWorkers>>;
  before(async () => {
    // 20 tokens a second: a 40-token stream is still live while it is resumed elsewhere.
    server = await startWorkers(['--sim-tps', '20']);
  });
  after(() => {
    if (server.child.exitCode === null) server.child.kill('SIGKILL');
  });

  it('--json says how many workers; --help documents --workers; usage errors exit 2, said once', async () => {
    assert.equal(server.info.workers, 2);
    assert.match(SERVE_HELP, /--workers N\|auto\s+Processes serving the one port/);
    assert.match(SERVE_HELP, /restarted \(at most 5 in 60 s/);
    for (const value of ['0', 'x', '1.5']) {
      const bad = startServe(['--workers', value]);
      await assert.rejects(bad.started, /exited with 2/, value);
      assert.match(bad.err(), /--workers needs a whole number or "auto"/);
    }
    // An error the workers find (they parse the rest): said once, by the first, and serve exits 2.
    const bin = fileURLToPath(new URL('../../src/cli/bin.js', import.meta.url));
    const child = spawn(process.execPath, [bin, 'serve', '--workers', '2', '--port', 'abc'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    assert.equal(code, 2);
    assert.equal(err.match(/--port needs a whole number/g)?.length, 1, err);
  });

  it('a stream opened on one worker resumes on another: the stored events, then the live rest', async () => {
    await resumeOnAnotherWorker(server.url);
  });

  it('/metrics sums every worker: each one counts the requests all of them served', async () => {
    const metricsFrom = async (not?: string) => {
      const answer =
        not === undefined
          ? await sendToWorker(server.url, '/metrics')
          : await onAnotherWorker(() => sendToWorker(server.url, '/metrics'), not);
      assert.equal(answer.status, 200);
      return { worker: answer.worker, text: await text(answer.response) };
    };
    const route = 'route="openai-chat"';
    const before = await metricsFrom();
    const served = new Map<string, number>();
    for (let i = 0; i < 6; i++) {
      const answer = await sendToWorker(server.url, '/v1/chat/completions', { body: chat(1) });
      assert.equal(answer.status, 200);
      await text(answer.response);
      served.set(answer.worker, (served.get(answer.worker) ?? 0) + 1);
    }
    assert.equal(served.size, 2, `both workers served: ${[...served.entries()].join(' ')}`);
    const one = await metricsFrom();
    const other = await metricsFrom(one.worker);
    for (const scrape of [one, other]) {
      assert.equal(
        sampleSum(scrape.text, 'tokenwire_requests_total', route) -
          sampleSum(before.text, 'tokenwire_requests_total', route),
        6,
        `worker ${scrape.worker} counts all 6 requests`,
      );
      assert.equal((scrape.text.match(/^# TYPE tokenwire_requests_total counter$/gm) ?? []).length, 1);
    }
    // Streams are counted as they end: every one of them shows up, summed, on a later scrape.
    let completed = 0;
    for (let i = 0; i < 100 && completed < 6; i++) {
      completed =
        sampleSum((await metricsFrom()).text, 'tokenwire_streams_total', `outcome="completed",${route}`) -
        sampleSum(before.text, 'tokenwire_streams_total', `outcome="completed",${route}`);
      if (completed < 6) await pause(50);
    }
    assert.equal(completed, 6);
  });

  it('a worker that dies is replaced, and the server keeps answering', async () => {
    const found = spawnSync('pgrep', ['-P', String(server.child.pid)], { encoding: 'utf8' });
    const pids = found.stdout.trim().split('\n').filter(Boolean).map(Number);
    assert.equal(pids.length, 2, `two workers: ${found.stdout}`);
    process.kill(pids[0]!, 'SIGKILL');
    // The primary says when the replacement serves (however long a loaded machine takes to start it).
    await until(() => new RegExp(`worker \\d+ is serving in place of ${pids[0]}`).test(server.err()));
    // Then round robin reaches it (cluster ids 1 and 2 were the first two; it is 3). A connection handed
    // to the killed worker as it died is lost (node:cluster): give up on it and ask again.
    let seen = '';
    for (let i = 0; i < 20 && seen !== '3'; i++) {
      const answer = await sendToWorker(server.url, '/healthz', { giveUpMs: 2000 }).catch(() => undefined);
      if (answer !== undefined) {
        await text(answer.response);
        seen = answer.worker;
      }
    }
    assert.equal(seen, '3', 'a third worker answers');
    assert.match(server.err(), /worker \d+ exited \(SIGKILL\); starting another/);
  });

  it('SIGTERM stops every worker: open streams end with their dialect’s error, then the primary exits 0', async () => {
    const open = await sendToWorker(server.url, '/v1/chat/completions', { body: chat(2000) });
    assert.equal(open.status, 200);
    const body = text(open.response);
    await readUntil(open.response, (seen) => seen.includes('id: '));
    open.response.resume();
    const exited = new Promise<number | null>((resolve) =>
      server.child.once('exit', (code) => resolve(code)),
    );
    server.child.kill('SIGTERM');
    assert.match(await body, /data: \{"error":.*the gateway is shutting down/);
    assert.equal(await exited, 0);
    await assert.rejects(sendToWorker(server.url, '/healthz'), /ECONNREFUSED/);
  });
});

describe('tokenwire serve --workers 2 --max-streams 1', { timeout: 60_000 }, () => {
  it('the stream limit is global: with one stream open on a worker, the other refuses the next', async () => {
    const server = await startWorkers(['--sim-tps', '20', '--max-streams', '1']);
    try {
      const open = await sendToWorker(server.url, '/v1/chat/completions', { body: chat(2000) });
      assert.equal(open.status, 200);
      await readUntil(open.response, (seen) => seen.includes('id: '));
      const refused = await onAnotherWorker(
        () => sendToWorker(server.url, '/v1/chat/completions', { body: chat(1) }),
        open.worker,
        async (same) => {
          assert.equal(same.status, 429);
          await text(same.response);
        },
      );
      assert.equal(refused.status, 429, 'the other worker counts the first one’s stream');
      assert.match(await text(refused.response), /at most 1 at once/);
      // Its slot is freed when the client leaves: the next stream, on either worker, is served.
      open.response.destroy();
      let status = 0;
      for (let i = 0; i < 50 && status !== 200; i++) {
        const next = await sendToWorker(server.url, '/v1/chat/completions', { body: chat(1) });
        status = next.status;
        await text(next.response);
        if (status !== 200) await pause(50);
      }
      assert.equal(status, 200);
    } finally {
      server.child.kill('SIGKILL');
    }
  });
});

describe('tokenwire serve --workers 2 --resume-store redis://…', { timeout: 60_000 }, () => {
  it('the workers share the Redis store: a stream opened on one resumes on another', async () => {
    const redis = await startRedis();
    try {
      const server = await startWorkers(['--sim-tps', '20', '--resume-store', redis.url]);
      try {
        assert.equal(server.info.resumeStore, redis.url.replace(/\/$/, ''));
        await resumeOnAnotherWorker(server.url);
      } finally {
        server.child.kill('SIGKILL');
      }
    } finally {
      await redis.stop();
    }
  });
});
