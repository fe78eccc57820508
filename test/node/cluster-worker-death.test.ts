import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import type { IncomingMessage } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { sendToWorker, type WorkerAnswer } from '../helpers/worker-request.ts';

// After a `serve --workers` worker is replaced, the summed /metrics counters went
// down (the dead worker's counts vanished), and a stream whose worker was killed resumed with "the
// stream was cancelled when its client disconnected". Counters must never decrease, and the resumed
// stream must say what happened: its worker died.

/** `tokenwire serve --workers 2` as a real process tree (node:cluster needs a real primary). */
async function startWorkers(args: string[]) {
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
  return { child: child as ChildProcess, url: String(info.url), err: () => err };
}

/** The body to its end; a cut (the worker died) ends it too, with what came. */
function text(response: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let body = '';
    response.on('data', (chunk: string) => {
      body += chunk;
    });
    response.on('end', () => resolve(body));
    response.on('error', () => resolve(body));
    response.on('aborted', () => resolve(body));
  });
}

/** Resolves once `until` holds for what was read (the rest keeps coming to `text()` later). */
function readUntil(response: IncomingMessage, until: (body: string) => boolean): Promise<string> {
  return new Promise((resolve) => {
    let body = '';
    const onData = (chunk: string) => {
      body += chunk;
      if (until(body)) {
        response.off('data', onData);
        resolve(body);
      }
    };
    response.on('data', onData);
    response.on('end', () => resolve(body));
  });
}

const chat = JSON.stringify({
  model: 'sim',
  stream: true,
  messages: [{ role: 'user', content: 'tell me a long story about rivers' }],
});

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(check: () => boolean): Promise<void> {
  while (!check()) await pause(50);
}

/** A scrape of the summed /metrics (retried past a connection handed to a dying worker). */
async function scrape(url: string): Promise<string> {
  for (let i = 0; ; i++) {
    const answer = await sendToWorker(url, '/metrics', { giveUpMs: 3000 }).catch((error: unknown) => {
      if (i >= 10) throw error;
      return undefined;
    });
    if (answer === undefined) continue;
    assert.equal(answer.status, 200);
    return text(answer.response);
  }
}

/** Every counter and histogram sample (`name{labels}` -> value) of a Prometheus text. */
function monotonicSamples(metrics: string): Map<string, number> {
  const out = new Map<string, number>();
  const counters = new Set<string>();
  for (const line of metrics.split('\n')) {
    const type = /^# TYPE (\S+) (counter|histogram)$/.exec(line);
    if (type !== null) counters.add(type[1]!);
    if (line.startsWith('#') || line === '') continue;
    const series = line.slice(0, line.lastIndexOf(' '));
    const name = /^[^{ ]+/.exec(series)![0];
    const family = name.replace(/_(bucket|sum|count)$/, '');
    if (counters.has(name) || counters.has(family)) out.set(series, Number(line.slice(series.length + 1)));
  }
  return out;
}

describe('serve --workers: a worker killed mid-stream', { timeout: 120_000 }, () => {
  let server: Awaited<ReturnType<typeof startWorkers>>;
  before(async () => {
    // 10 tokens a second: the streams are still live when a worker is killed.
    server = await startWorkers(['--sim-tps', '10']);
  });
  after(() => {
    if (server.child.exitCode === null) server.child.kill('SIGKILL');
  });

  it('summed counters never go down, and its stream resumes saying its worker died', async () => {
    // A live stream on each worker (round robin: two connections in a row reach both).
    const streams: { answer: WorkerAnswer; id: string; cut: Promise<string> }[] = [];
    for (let i = 0; i < 8 && new Set(streams.map((s) => s.answer.worker)).size < 2; i++) {
      const answer = await sendToWorker(server.url, '/v1/chat/completions', { body: chat });
      assert.equal(answer.status, 200);
      const id = String(answer.response.headers['x-tokenwire-stream-id']);
      if (streams.some((s) => s.answer.worker === answer.worker)) {
        answer.response.destroy();
        continue;
      }
      await readUntil(answer.response, (body) => body.includes(`id: ${id}.3\n`));
      streams.push({ answer, id, cut: text(answer.response) });
    }
    assert.equal(streams.length, 2, 'a stream on each worker');
    // Both workers counted: the primary has seen each one's counters.
    const before = monotonicSamples(await scrape(server.url));
    assert.ok(before.size > 0);

    const found = spawnSync('pgrep', ['-P', String(server.child.pid)], { encoding: 'utf8' });
    const pids = found.stdout.trim().split('\n').filter(Boolean).map(Number);
    assert.equal(pids.length, 2, `two workers: ${found.stdout}`);
    process.kill(pids[0]!, 'SIGKILL');
    await until(() => new RegExp(`worker \\d+ is serving in place of ${pids[0]}`).test(server.err()));

    // The killed worker's stream is the one whose connection was cut without its [DONE].
    const first = await Promise.race(streams.map(async (s) => ({ s, body: await s.cut })));
    const killed = first.s;
    assert.doesNotMatch(first.body, /\[DONE\]/, 'the first to end was cut, not finished');

    const after = monotonicSamples(await scrape(server.url));
    const lower: string[] = [];
    for (const [series, value] of before) {
      const now = after.get(series);
      if (now === undefined || now < value) lower.push(`${series}: ${value} -> ${now}`);
    }
    assert.deepEqual(lower, [], 'no summed counter went down after the worker was replaced');

    // Resumed (on whichever worker): the stored events, then an ending that says what happened.
    let resumed: WorkerAnswer | undefined;
    for (let i = 0; i < 10 && resumed === undefined; i++)
      resumed = await sendToWorker(server.url, '/v1/chat/completions', {
        body: chat,
        headers: { 'last-event-id': `${killed.id}.1` },
        giveUpMs: 5000,
      }).catch(() => undefined);
    assert.equal(resumed?.status, 200);
    const body = await text(resumed!.response);
    assert.match(body, new RegExp(`id: ${killed.id}\\.3\\n`));
    assert.match(
      body,
      new RegExp(
        `"message": ?"the stream stopped before it finished \\(its worker process \\(pid ${pids[0]}\\) died \\(SIGKILL\\)\\)`,
      ),
    );
    assert.doesNotMatch(body, /client disconnected/);
  });
});
