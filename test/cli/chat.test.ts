import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CHAT_EXIT, chatFigures, chatOutcome, tokenRate } from '../../src/cli/chat/chat-outcome.ts';
import { DIALECT_IDS } from '../../src/dialects/dialect.ts';
import { emptyMetrics, type Result } from '../../src/events/result.ts';
import { serve } from '../../src/node/serve.ts';
import { repoRoot } from '../helpers/paths.ts';
import { cli, FakeIo, type ServedSim, serveSim } from './cli-helpers.ts';

/** Lines of `--json` output, parsed. */
const ndjson = (text: string) =>
  text
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown> & { type: string });

const colour = /\u001b\[\d+(;\d+)*m/;

describe('tokenwire chat', () => {
  let fast: ServedSim;
  let slow: ServedSim;
  before(async () => {
    fast = await serveSim({ timing: { tokensPerSecond: 3000 } });
    slow = await serveSim({ timing: { tokensPerSecond: 20, jitter: 0 } });
  });
  after(async () => {
    await fast.close();
    await slow.close();
  });

  const chat = (args: string[], io = new FakeIo()) =>
    cli(['chat', `${fast.url}/v1/chat/completions`, 'Hello there', '--model', 'sim', ...args], io);

  it('streams the answer to stdout and ends with a footer: finished, TTFT, tokens/s, server token count', async () => {
    const { code, io } = await chat([]);
    assert.equal(code, CHAT_EXIT.finished);
    assert.ok(io.out.length > 10, 'the answer is on stdout');
    assert.doesNotMatch(io.out, /finished|TTFT/, 'stdout holds only the answer');
    assert.match(io.err, /\[done\] finished \(stop\)/);
    assert.match(io.err, /TTFT \d/);
    assert.match(io.err, /[\d.]+ tokens\/s/);
    assert.match(io.err, / \d+ output tokens/);
    assert.doesNotMatch(io.err, /estimated/);
    const record = fast.sim.stats.log.at(-1)!;
    assert.equal(record.outcome, 'completed');
    assert.match(io.err, new RegExp(` ${record.outputTokens} output tokens`));
  });

  it('honours NO_COLOR on a terminal, and colours without it', async () => {
    const plain = await chat([], new FakeIo({ tty: true, env: { NO_COLOR: '1' } }));
    assert.doesNotMatch(plain.io.err, colour);
    const coloured = await chat([], new FakeIo({ tty: true, env: {} }));
    assert.match(coloured.io.err, colour);
  });

  it('a truncated answer (finish length) is marked and exits 4, never shown as finished', async () => {
    const { code, io } = await chat(['--max-tokens', '3']);
    assert.equal(code, CHAT_EXIT.truncated);
    assert.match(io.err, /TRUNCATED/);
    assert.doesNotMatch(io.err, /finished/);
  });

  const incomplete: [string, string[], RegExp][] = [
    ['connection lost (cut-after)', ['--sim-faults', 'cut-after=3'], /INCOMPLETE \(connection lost\)/],
    [
      'server error (error-after)',
      ['--sim-faults', 'error-after=3'],
      /INCOMPLETE \(server error\): tokenwire sim: simulated failure/,
    ],
    [
      'idle timeout (a stall)',
      ['--sim-faults', 'stall=3000,stall-after=2', '--idle-timeout-ms', '200'],
      /INCOMPLETE \(idle timeout\)/,
    ],
    [
      'malformed stream (NDJSON on an SSE route)',
      ['--sim-faults', 'framing=ndjson'],
      /INCOMPLETE \(malformed stream\)/,
    ],
  ];
  for (const [name, args, mark] of incomplete) {
    it(`an incomplete answer, ${name}, is marked and exits 3`, async () => {
      const { code, io } = await chat(args);
      assert.equal(code, CHAT_EXIT.incomplete);
      assert.match(io.err, mark);
      // "Partial" when some answer was shown; with none (the malformed body), it says so instead.
      assert.match(io.err, io.out === '' ? /No answer text arrived/ : /The answer above is partial/);
      assert.doesNotMatch(io.err, /\.\. /, 'one full stop between the detail and the verdict');
      assert.doesNotMatch(io.err, /finished/);
    });
  }

  it('--json writes the normalized events as NDJSON, then a result line', async () => {
    const { code, io } = await chat(['--json']);
    assert.equal(code, 0);
    const lines = ndjson(io.out);
    assert.equal(lines[0]?.type, 'start');
    assert.ok(lines.some((line) => line.type === 'text'));
    assert.ok(lines.some((line) => line.type === 'finish'));
    assert.ok(lines.some((line) => line.type === 'usage'));
    const result = lines.at(-1)!;
    assert.equal(result.type, 'result');
    assert.equal(result.status, 'finished');
    assert.equal(result.exitCode, 0);
    assert.equal(result.complete, true);
    const text = lines
      .filter((line) => line.type === 'text')
      .map((line) => line.text)
      .join('');
    assert.equal(result.text, text);
    assert.equal(io.err, '', 'no footer with --json');
  });

  it('--json marks an incomplete answer in its result line', async () => {
    const { code, io } = await chat(['--json', '--sim-faults', 'cut-after=2']);
    assert.equal(code, CHAT_EXIT.incomplete);
    const result = ndjson(io.out).at(-1)!;
    assert.equal(result.status, 'incomplete');
    assert.equal(result.incomplete, 'connection-closed');
  });

  it('every dialect, by its URL path', async () => {
    const paths = [
      '/v1/chat/completions',
      '/v1/completions',
      '/api/chat',
      '/api/generate',
      '/completion',
      '/generate_stream',
    ];
    for (const [i, path] of paths.entries()) {
      const io = new FakeIo();
      const code = (await cli(['chat', `${fast.url}${path}`, 'hi', '--model', 'sim', '--json'], io)).code;
      const result = ndjson(io.out).at(-1)!;
      assert.equal(code, 0, path);
      assert.equal(result.dialect, DIALECT_IDS[i]);
    }
  });

  it('a bare server address is probed for its chat endpoint, and the model is the one it lists', async () => {
    const io = new FakeIo();
    const { code } = await cli(['chat', fast.url, 'hi', '--json'], io);
    assert.equal(code, 0);
    const result = ndjson(io.out).at(-1)!;
    // The sim answers Ollama's /api/tags, so it is taken for Ollama and its native chat is used.
    assert.equal(result.dialect, 'ollama-chat');
    assert.equal(fast.sim.stats.log.at(-1)?.model, 'sim');
  });

  it('an HTTP error before the stream exits 1 with the server message', async () => {
    const { code, io } = await chat(['--sim-faults', 'status=404']);
    assert.equal(code, CHAT_EXIT.failed);
    assert.match(io.err, /error: .*HTTP 404/);
  });

  it('nothing listening at a bare address: exit 1 (not a usage error), saying "connection refused"', async () => {
    const served = await serve(() => new Response(''));
    const url = served.url;
    await served.close();
    const { code, io } = await cli(['chat', url, 'Hi']);
    assert.equal(code, CHAT_EXIT.failed, io.err);
    assert.match(io.err, /connection refused/);
    assert.doesNotMatch(io.err, /could not tell what server|--help/);
    const withPath = await cli(['chat', `${url}/v1/chat/completions`, 'Hi', '--model', 'm']);
    assert.equal(withPath.code, CHAT_EXIT.failed);
    assert.match(withPath.io.err, /connection refused/);
  });

  it('a stream that ends before any text: incomplete, and not called "partial"', async () => {
    const { code, io } = await chat(['--sim-faults', 'cut-after=0']);
    assert.equal(code, CHAT_EXIT.incomplete);
    assert.equal(io.out, '');
    assert.match(io.err, /INCOMPLETE/);
    assert.match(io.err, /No answer text arrived/);
    assert.doesNotMatch(io.err, /partial/);
  });

  it("tokens/s comes from the server's own timing when it reports one (llama.cpp timings), and says so", async () => {
    // The slow simulator (20 tokens/s): its decode takes a few hundred ms, never a 0 ms burst.
    const { code, io } = await cli([
      'chat',
      `${slow.url}/completion`,
      'Hello there',
      '--max-tokens',
      '6',
      '--json',
    ]);
    assert.equal(code, CHAT_EXIT.truncated);
    const result = ndjson(io.out).at(-1) as unknown as Result;
    const timings = result.timings!;
    assert.ok(timings.evalMs !== undefined && timings.evalMs > 0);
    const figures = chatFigures(result);
    const expected = ((timings.evalTokens! * 1000) / timings.evalMs).toFixed(1);
    assert.match(figures, new RegExp(`${expected.replace('.', '\\.')} tokens/s \\(server's timing\\)`));
    const footer = await cli(['chat', `${slow.url}/completion`, 'Hello there', '--max-tokens', '6']);
    assert.match(footer.io.err, /tokens\/s \(server's timing\)/);
  });

  it('tokens/s without server timings is measured after the first token, and says so', async () => {
    const { io } = await chat([]);
    assert.match(io.err, /[\d.]+ tokens\/s \(after the first token\)/);
  });

  it('the built-in simulator answers with no URL, in any dialect', async () => {
    const { code, io } = await cli([
      'chat',
      'hello',
      '--sim-tps',
      '5000',
      '--max-tokens',
      '4',
      '--dialect',
      'tgi',
    ]);
    assert.equal(code, CHAT_EXIT.truncated);
    assert.ok(io.out.length > 0);
    assert.match(io.err, /tgi/);
    const faulty = await cli(['chat', 'hello', '--sim-tps', '5000', '--sim-faults', 'cut-after=2']);
    assert.equal(faulty.code, CHAT_EXIT.incomplete);
  });

  it('usage errors exit 2', async () => {
    assert.equal((await cli(['chat'])).code, 2);
    assert.equal((await cli(['chat', 'http://127.0.0.1:1/v1/chat/completions'])).code, 2);
    assert.equal((await cli(['chat', 'hi', '--sim-faults', 'nonsense'])).code, 2);
    assert.equal((await cli(['chat', 'http://127.0.0.1:1/x', 'hi', '--sim-tps', '5'])).code, 2);
    assert.equal((await cli(['chat', 'hi', '--dialect', 'nope'])).code, 2);
  });

  it('Ctrl-C mid-stream cancels: the server sees the connection close, the footer says cancelled, exit 130', async () => {
    const io = new FakeIo();
    const running = cli(['chat', `${slow.url}/v1/chat/completions`, 'a long answer', '--model', 'sim'], io);
    await io.waitForOutput(1);
    io.interrupt();
    const { code } = await running;
    assert.equal(code, CHAT_EXIT.cancelled);
    assert.match(io.err, /CANCELLED/);
    assert.doesNotMatch(io.err, /finished/);
    await slow.sim.idle();
    const record = slow.sim.stats.log.at(-1)!;
    // Cancelled, not finished, is the whole claim: how many tokens went out first depends on the
    // machine's speed, so no count is asserted.
    assert.equal(record.outcome, 'cancelled', 'the server saw the connection close');
  });

  it('SIGINT to the real CLI process: exit 130, the footer says cancelled, the server saw the close', async () => {
    const before = slow.sim.stats.cancelled;
    const child = spawn(
      process.execPath,
      [
        join(repoRoot, '.build', 'src', 'cli', 'bin.js'),
        'chat',
        `${slow.url}/v1/chat/completions`,
        'tell me more',
        '--model',
        'sim',
      ],
      { env: { ...process.env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (data: Buffer) => {
      stderr += data.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const answering = new Promise<void>((resolve) => {
      child.stdout.on('data', (data: Buffer) => {
        stdout += data.toString();
        resolve();
      });
    });
    const first = await Promise.race([answering.then(() => 'answering'), exited.then(() => 'exited')]);
    assert.equal(first, 'answering', `the CLI ended before answering: ${stderr}`);
    child.kill('SIGINT');
    const code = await exited;
    assert.equal(code, 130, stderr);
    assert.ok(stdout.length > 0);
    assert.match(stderr, /CANCELLED/);
    await slow.sim.idle();
    assert.equal(slow.sim.stats.cancelled, before + 1, 'the server saw the connection close');
    assert.equal(slow.sim.stats.log.at(-1)?.outcome, 'cancelled');
  });
});

describe('chatOutcome', () => {
  const result = (overrides: Partial<Result>): Result => ({
    text: 'x',
    reasoning: '',
    toolCalls: [],
    complete: true,
    truncated: false,
    metrics: emptyMetrics(),
    ...overrides,
  });

  it('finished only when complete and not cut off', () => {
    assert.equal(chatOutcome(result({ finishReason: 'stop', rawFinishReason: 'stop' })).status, 'finished');
    assert.equal(chatOutcome(result({ finishReason: 'length', truncated: true })).status, 'truncated');
    assert.equal(
      chatOutcome(result({ complete: false, incomplete: 'connection-closed' })).status,
      'incomplete',
    );
    assert.equal(chatOutcome(result({ complete: false, incomplete: 'server-error' })).exitCode, 3);
    assert.equal(chatOutcome(result({ complete: false, incomplete: 'aborted' })).status, 'cancelled');
  });

  it('"partial" only when some text, reasoning or tool call was shown', () => {
    const cut = { complete: false, incomplete: 'connection-closed' } as const;
    assert.match(chatOutcome(result({ ...cut })).headline, /The answer above is partial/);
    assert.match(chatOutcome(result({ ...cut, text: '' })).headline, /No answer text arrived/);
    assert.match(chatOutcome(result({ ...cut, text: '', reasoning: 'hmm' })).headline, /partial/);
    assert.match(
      chatOutcome(result({ complete: false, incomplete: 'aborted', text: '' })).headline,
      /CANCELLED.*No answer text arrived/,
    );
  });

  it("tokenRate: the server's decode timing first (evalTokens / evalMs), else the client's figure", () => {
    const metrics = { ...emptyMetrics(), outputTokensPerSecond: 900 };
    assert.deepEqual(tokenRate(result({ metrics, timings: { evalMs: 200, evalTokens: 10 } })), {
      tokensPerSecond: 50,
      source: 'server',
    });
    assert.deepEqual(tokenRate(result({ metrics, timings: { evalMs: 400 }, usage: { outputTokens: 10 } })), {
      tokensPerSecond: 25,
      source: 'server',
    });
    assert.deepEqual(tokenRate(result({ metrics })), { tokensPerSecond: 900, source: 'client' });
    assert.equal(tokenRate(result({})), undefined);
  });

  it("names the server's own finish word when it differs", () => {
    assert.match(
      chatOutcome(result({ finishReason: 'stop', rawFinishReason: 'eos_token' })).headline,
      /stop, server said "eos_token"/,
    );
  });
});
