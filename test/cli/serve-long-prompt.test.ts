import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { request } from 'node:http';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

/** `tokenwire serve` as a real process (SIGTERM reaches it as it reaches a deployed one). */
async function startServeProcess(
  args: string[],
): Promise<{ child: ChildProcess; url: string; err: () => string }> {
  // The compiled CLI beside this compiled test (.build/src/cli/bin.js).
  const bin = fileURLToPath(new URL('../../src/cli/bin.js', import.meta.url));
  const child = spawn(process.execPath, [bin, 'serve', '--port', '0', '--json', ...args], {
    env: { ...process.env, NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    err += chunk.toString();
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const line = out.split('\n')[0];
      if (out.includes('\n') && line !== undefined)
        resolve(String((JSON.parse(line) as { url: string }).url));
    });
    child.once('exit', (code) => reject(new Error(`serve exited (${code}) before listening: ${err}`)));
  });
  return { child, url, err: () => err };
}

/** Resolves with the exit code, or rejects after `ms` (a liveness bound, not a latency figure). */
function exited(child: ChildProcess, ms: number): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`still running ${ms} ms after SIGTERM`)), ms);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve(code ?? (signal === null ? null : 128));
    });
  });
}

/** POSTs `body` and resolves once every byte of it has been handed to the socket. */
function postLarge(
  url: string,
  body: string,
): { sent: Promise<void>; answered: Promise<{ status: number; text: string }> } {
  let sent!: () => void;
  const sentPromise = new Promise<void>((resolve) => {
    sent = resolve;
  });
  const answered = new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = request(
      `${url}/v1/chat/completions`,
      { method: 'POST', headers: { 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body, () => sent());
  });
  return { sent: sentPromise, answered };
}

const chat = (content: string) =>
  JSON.stringify({ model: 'sim', stream: true, max_tokens: 4, messages: [{ role: 'user', content }] });

describe('tokenwire serve with a huge prompt for the simulator', () => {
  // A liveness bound, not a latency figure: before tokenization was linear this took minutes.
  it('answers a 3 MB run of letters with the context error while /healthz keeps answering', {
    timeout: 60_000,
  }, async () => {
    const { child, url } = await startServeProcess([]);
    try {
      const big = postLarge(url, chat('a'.repeat(3_000_000)));
      await big.sent;
      const health = await fetch(`${url}/healthz`);
      assert.equal(health.status, 200);
      const answer = await big.answered;
      // The simulator's 400 (context-limit.test.ts has its shapes); the gateway passes it on as a 400
      // when it comes within its header wait, else as the stream's error event.
      assert.ok(answer.status === 400 || answer.status === 200, `status ${answer.status}`);
      assert.match(answer.text, /maximum context length is 32768 tokens/);
    } finally {
      child.kill('SIGKILL');
      await once(child, 'exit').catch(() => {});
    }
  });

  it('ends on SIGTERM while the simulator works through a long prompt', { timeout: 60_000 }, async () => {
    // A context large enough that the whole prompt is tokenized and then generated from.
    const { child, url } = await startServeProcess(['--sim-context-tokens', '100000000']);
    try {
      // Warm up: the tokenizer's load (an import) must not be what gives the event loop its turns.
      const warm = await fetch(`${url}/v1/chat/completions`, { method: 'POST', body: chat('hello') });
      assert.equal(warm.status, 200);
      await warm.text();
      let letters = '';
      for (let i = 0; i < 40_000; i++) letters += 'qwertyuiopasdfghjklzxcvbnm'[(i * 7919) % 26];
      const big = postLarge(url, chat(letters.repeat(50)));
      big.answered.catch(() => {});
      await big.sent;
      // The event loop turns while the prompt is tokenized: /healthz answers, and so will SIGTERM.
      assert.equal((await fetch(`${url}/healthz`)).status, 200);
      child.kill('SIGTERM');
      // Generous: the shutdown deadline is 5 s and the hard exit 8 s; this checks it ends at all.
      const code = await exited(child, 20_000);
      assert.notEqual(code, null);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });
});
