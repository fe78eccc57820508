import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { PassThrough, Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { CliIo } from '../../src/cli/cli-io.ts';
import { runCli } from '../../src/cli/run-cli.ts';
import {
  type RecordedRequest,
  type ScriptedResponse,
  type ScriptServer,
  scriptServer,
} from '../helpers/script-server.ts';

const sse = (chunks: object[]) =>
  chunks.map(
    (chunk) =>
      `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model: 'm1', ...chunk })}\n\n`,
  );
const delta = (content: string) => ({ choices: [{ index: 0, delta: { content }, finish_reason: null }] });
const FINISH = { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] };

interface Body {
  model?: string;
  messages: { role: string; content: string }[];
}

/**
 * An OpenAI-compatible server: models m1 and m2, any other name is vLLM's 404; the answer to "hang"
 * is one chunk and then silence (until the client leaves); any other answer is "answer N".
 */
function openAiServer(): (request: RecordedRequest) => ScriptedResponse {
  let answers = 0;
  return (request) => {
    if (request.path === '/v1/models')
      return {
        headers: { 'content-type': 'application/json' },
        steps: [{ write: JSON.stringify({ object: 'list', data: [{ id: 'm1' }, { id: 'm2' }] }) }],
      };
    if (request.path !== '/v1/chat/completions')
      return {
        status: 404,
        headers: { 'content-type': 'application/json' },
        steps: [{ write: '{"detail":"Not Found"}' }],
      };
    const body = JSON.parse(request.body) as Body;
    if (body.model !== 'm1' && body.model !== 'm2')
      return {
        status: 404,
        headers: { 'content-type': 'application/json' },
        steps: [
          {
            write: JSON.stringify({
              error: {
                message: `The model \`${body.model}\` does not exist.`,
                type: 'NotFoundError',
                code: 404,
              },
            }),
          },
        ],
      };
    if (body.messages.at(-1)?.content === 'hang')
      return { steps: [{ write: sse([delta('partial')])[0]! }, { hang: true }] };
    answers += 1;
    return {
      steps: [...sse([delta(`answer ${answers}`), FINISH]), 'data: [DONE]\n\n'].map((write) => ({ write })),
    };
  };
}

/** A CliIo on a pseudo-terminal made of streams: what readline reads (typed keys) and writes. */
class TtyIo implements CliIo {
  out = '';
  err = '';
  readonly input = new PassThrough();
  readonly controller = new AbortController();
  readonly signal = this.controller.signal;
  readonly env = { NO_COLOR: '1' };
  readonly stdout: CliIo['stdout'];
  readonly stderr: CliIo['stderr'];
  readonly stdin: CliIo['stdin'];
  #waiters: (() => void)[] = [];

  constructor() {
    const output = new Writable({
      write: (chunk: Buffer, _encoding, done) => {
        this.out += chunk.toString();
        this.#check();
        done();
      },
    });
    Object.assign(output, { isTTY: true, columns: 100 });
    this.stdout = output as unknown as CliIo['stdout'];
    this.stderr = {
      isTTY: true,
      write: (text: string) => {
        this.err += text;
        this.#check();
        return true;
      },
    };
    this.stdin = { isTTY: true, open: () => this.input };
  }

  #check(): void {
    for (const waiter of this.#waiters.splice(0)) waiter();
  }

  /** Resolves once `test` holds of what was written. */
  async until(test: () => boolean): Promise<void> {
    while (!test()) await new Promise<void>((resolve) => this.#waiters.push(resolve));
  }

  type(text: string): void {
    this.input.write(text);
  }
}

describe('tokenwire chat: the conversation on a terminal (readline on stream stand-ins)', () => {
  let server: ScriptServer;
  before(async () => {
    server = await scriptServer(openAiServer());
  });
  after(() => server.close());

  const chats = () =>
    server.requests
      .filter((request) => request.path === '/v1/chat/completions')
      .map((request) => JSON.parse(request.body) as Body);

  it('keeps the history, and /system, /model, /reset and /quit do what they say', async () => {
    const io = new TtyIo();
    const before = chats().length;
    const exit = runCli(
      ['chat', `${server.url}/v1/chat/completions`, '--model', 'm1', '--system', 'be brief'],
      io,
    );
    io.type('first\n');
    await io.until(() => io.out.includes('answer 1'));
    io.type('second\n');
    await io.until(() => io.out.includes('answer 2'));
    io.type('/system be kind\n/model m2\nthird\n');
    await io.until(() => io.out.includes('answer 3'));
    io.type('/reset\nfourth\n');
    await io.until(() => io.out.includes('answer 4'));
    io.type('/help\n/quit\n');
    assert.equal(await exit, 0, io.err);
    const sent = chats().slice(before);
    assert.equal(sent.length, 4);
    const turns = (body: Body) => body.messages.map((m) => `${m.role}:${m.content}`);
    assert.deepEqual(turns(sent[0]!), ['system:be brief', 'user:first']);
    assert.deepEqual(turns(sent[1]!), ['system:be brief', 'user:first', 'assistant:answer 1', 'user:second']);
    assert.deepEqual(turns(sent[2]!), [
      'system:be kind',
      'user:first',
      'assistant:answer 1',
      'user:second',
      'assistant:answer 2',
      'user:third',
    ]);
    assert.deepEqual(turns(sent[3]!), ['system:be kind', 'user:fourth']);
    assert.deepEqual(
      sent.map((body) => body.model),
      ['m1', 'm1', 'm2', 'm2'],
    );
    assert.match(io.err, /conversation forgotten/);
    assert.match(io.err, /\/system TEXT/);
    assert.match(io.out, />>> /, 'the prompt is shown');
  });

  it('Ctrl-C stops the answer and aborts the request; the turn is dropped; Ctrl-C at the prompt leaves', async () => {
    const io = new TtyIo();
    const before = chats().length;
    const exit = runCli(['chat', `${server.url}/v1/chat/completions`, '--model', 'm1'], io);
    io.type('hang\n');
    await io.until(() => io.out.includes('partial'));
    const hanging = server.requests.at(-1)!;
    io.type('\u0003');
    // The server sees the connection close: the request was aborted, not left running.
    await hanging.closed;
    assert.ok(hanging.closedEarlyAtMs !== undefined, 'closed before the script ended');
    await io.until(() => io.err.includes('not kept in the conversation'));
    assert.match(io.err, /CANCELLED/);
    io.type('after\n');
    await io.until(() => /answer \d+/.test(io.out));
    // The third prompt (after "hang" and "after"): a Ctrl-C now is one at the prompt.
    await io.until(() => io.out.split('>>> ').length > 3);
    io.type('\u0003');
    assert.equal(await exit, 0, io.err);
    const sent = chats().slice(before);
    assert.deepEqual(
      sent.map((body) => body.messages.map((m) => m.content)),
      [['hang'], ['after']],
      'the stopped turn is not in the next request',
    );
  });

  it('an unknown model: the error lists the models the server has, and the chat goes on', async () => {
    const io = new TtyIo();
    const exit = runCli(['chat', `${server.url}/v1/chat/completions`, '--model', 'nope'], io);
    io.type('hi\n');
    await io.until(() => io.err.includes('models on this server'));
    assert.match(io.err, /The model `nope` does not exist/);
    assert.match(io.err, /models on this server: m1, m2; pass one with --model \(or \/model in the chat\)/);
    io.type('/model m2\nhi\n');
    await io.until(() => /answer \d+/.test(io.out));
    io.type('/quit\n');
    assert.equal(await exit, 0, io.err);
  });
});

describe('tokenwire chat: the prompt from a piped stdin, and an unknown model one-shot', () => {
  let server: ScriptServer;
  before(async () => {
    server = await scriptServer(openAiServer());
  });
  after(() => server.close());

  /** The real CLI process with `input` piped to its stdin. */
  function run(args: string[], input: string): Promise<{ code: number | null; out: string; err: string }> {
    const bin = fileURLToPath(new URL('../../src/cli/bin.js', import.meta.url));
    const child = spawn(process.execPath, [bin, 'chat', ...args], {
      stdio: ['pipe', 'pipe', 'pipe'],
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
    child.stdin.end(input);
    return new Promise((resolve) => child.once('close', (code) => resolve({ code, out, err })));
  }

  it("echo hi | tokenwire chat URL: the piped text is the prompt (without echo's newline)", async () => {
    const { code, out, err } = await run(
      [`${server.url}/v1/chat/completions`, '--model', 'm1'],
      'hi there\n',
    );
    assert.equal(code, 0, err);
    assert.match(out, /^answer \d+$/);
    const body = JSON.parse(server.requests.at(-1)!.body) as Body;
    assert.deepEqual(body.messages, [{ role: 'user', content: 'hi there' }]);
  });

  it('an empty stdin is a usage error (exit 2)', async () => {
    const { code, err } = await run([`${server.url}/v1/chat/completions`, '--model', 'm1'], '');
    assert.equal(code, 2);
    assert.match(err, /stdin was empty/);
  });

  it('a one-shot answer for an unknown model lists the models (exit 1; --json has them too)', async () => {
    const { code, err } = await run([`${server.url}/v1/chat/completions`, '--model', 'nope'], 'hi\n');
    assert.equal(code, 1);
    assert.match(err, /models on this server: m1, m2/);
    const json = await run([`${server.url}/v1/chat/completions`, '--model', 'nope', '--json'], 'hi\n');
    assert.deepEqual((JSON.parse(json.out.trim()) as { models: string[] }).models, ['m1', 'm2']);
  });
});
