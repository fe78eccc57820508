import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { formatCaptureFile } from '../../src/capture/capture-file.ts';
import type { Finding } from '../../src/cli/inspect/finding.ts';
import { FINDINGS } from '../../src/cli/inspect/finding.ts';
import { DIALECT_IDS, type DialectId } from '../../src/dialects/dialect.ts';
import { getDialect } from '../../src/dialects/registry.ts';
import { serve } from '../../src/node/serve.ts';
import { startGateway } from '../helpers/gateway.ts';
import { fixturePath, testOutputPath } from '../helpers/paths.ts';
import { cli, FakeIo, type ServedSim, serveSim } from './cli-helpers.ts';

interface Report {
  findings: Finding[];
  frames: {
    n: number;
    split: boolean;
    firstRead: number;
    lastRead: number;
    start: number;
    end: number;
    atMs?: number;
  }[];
  reads: { n: number; bytes: number; atMs?: number }[];
  comments: unknown[];
  dialect?: { id: string; source: string };
  server?: { server: string };
  summary: { errors: number; warnings: number; problems: number; exitCode: number };
  result?: { complete: boolean };
  text: string;
}

const ids = (report: Report) => report.findings.map((f) => f.id);
const problems = (report: Report) =>
  report.findings.filter((f) => f.severity !== 'info').map((f) => `${f.id}: ${f.message}`);

describe('tokenwire inspect', () => {
  // Where a test says "no problem", the stream is paced like a real model (100 tokens/s, about a
  // second): a busy machine that stalls the process for a few hundred ms then piles up only part of
  // it, which the buffering check tells apart from a proxy. Those tests run concurrently. The
  // buffering and keepalive faults use 400 tokens/s; everything else runs fast.
  let paced: ServedSim;
  let sim: ServedSim;
  let fast: ServedSim;
  before(async () => {
    paced = await serveSim({ timing: { tokensPerSecond: 100 } });
    sim = await serveSim({ timing: { tokensPerSecond: 400 } });
    fast = await serveSim({ timing: { tokensPerSecond: 5000 } });
  });
  after(async () => {
    await paced.close();
    await sim.close();
    await fast.close();
  });

  /** `tokenwire inspect <sim>/<path> --json ...` with the given faults; returns the exit status and report. */
  async function inspect(
    dialect: DialectId,
    faults: string,
    args: string[] = [],
    target: ServedSim = fast,
  ): Promise<{ code: number; report: Report; io: FakeIo }> {
    const io = new FakeIo();
    const headers = faults === '' ? [] : ['--header', `x-tokenwire-fault: ${faults}`];
    const path = getDialect(dialect).paths[0];
    const { code } = await cli(
      ['inspect', `${target.url}${path}`, '--model', 'sim', '--json', ...headers, ...args],
      io,
    );
    assert.equal(io.err, '', 'nothing on stderr');
    return { code, report: JSON.parse(io.out) as Report, io };
  }

  function expectFinding(report: Report, id: keyof typeof FINDINGS): Finding {
    const found = report.findings.find((f) => f.id === id);
    assert.ok(found, `expected ${id}, got ${ids(report).join(', ')}`);
    assert.equal(found.severity, FINDINGS[id].severity);
    assert.ok(found.message.length > 0);
    return found;
  }

  describe('a clean stream reports no problem', { concurrency: true }, () => {
    for (const dialect of DIALECT_IDS) {
      it(`${dialect}: exit 0, the dialect named, no error or warning`, async () => {
        const { code, report } = await inspect(dialect, '', [], paced);
        assert.deepEqual(problems(report), []);
        assert.equal(code, 0);
        assert.equal(expectFinding(report, 'dialect').details?.dialect, dialect);
        assert.equal(report.dialect?.source, 'path');
        assert.equal(report.result?.complete, true);
        assert.ok(report.frames.length > 3);
        assert.ok(report.reads.every((read) => typeof read.atMs === 'number' && read.bytes > 0));
      });
    }

    it('the text report lists reads and frames, then says no problems (no colour under NO_COLOR)', async () => {
      const io = new FakeIo({ tty: true });
      const { code } = await cli(['inspect', `${paced.url}/v1/chat/completions`, '--model', 'sim'], io);
      assert.equal(code, 0);
      assert.match(io.out, /> POST http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions/);
      assert.match(io.out, /< HTTP 200/);
      assert.match(io.out, /#1 +\d+ B {2}frame 1/);
      assert.match(io.out, /\[DONE\]/);
      assert.match(io.out, /No problems found\./);
      assert.doesNotMatch(io.out, /\u001b\[\d+m/);
    });
  });

  describe('informational findings alone exit 0', { concurrency: true }, () => {
    it('keepalive comments: keepalive (informational, exit 0)', async () => {
      const { code, report } = await inspect('tgi', 'keepalive=5,ttft=60', [], paced);
      assert.ok(Number(expectFinding(report, 'keepalive').details?.count) >= 2);
      assert.ok(report.comments.length >= 2);
      assert.deepEqual(problems(report), []);
      assert.equal(code, 0);
    });

    it('a body that does not ask for usage: usage-not-requested, with the include_usage hint (exit 0)', async () => {
      const io = new FakeIo();
      const body = JSON.stringify({
        model: 'sim',
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
      });
      const { code } = await cli(
        ['inspect', `${paced.url}/v1/chat/completions`, '--json', '--body', body],
        io,
      );
      const report = JSON.parse(io.out) as Report;
      assert.match(expectFinding(report, 'usage-not-requested').hint ?? '', /stream_options/);
      assert.equal(code, 0);
    });
  });

  describe('dialect and server', () => {
    const flavors: [DialectId, string, string][] = [
      ['openai-chat', 'vllm', 'vLLM'],
      ['openai-chat', 'llamacpp', 'llama.cpp'],
      ['openai-chat', 'tgi', 'TGI'],
      ['openai-chat', 'ollama', 'Ollama'],
      ['llamacpp', 'modern', 'llama.cpp'],
      ['tgi', 'legacy', 'TGI'],
      ['ollama-chat', 'ollama', 'Ollama'],
    ];
    for (const [dialect, flavor, server] of flavors) {
      it(`${dialect} written like ${flavor}: the server is ${server}`, async () => {
        const { report } = await inspect(dialect, '', ['--header', `x-tokenwire-flavor: ${flavor}`]);
        assert.equal(expectFinding(report, 'server').details?.server, server);
      });
    }

    it('through the tokenwire gateway: the server is the gateway (its own header), not "vLLM"', async () => {
      const gateway = await startGateway();
      try {
        const io = new FakeIo();
        await cli(['inspect', `${gateway.url}/v1/chat/completions`, '--model', 'sim', '--json'], io);
        const report = JSON.parse(io.out) as Report;
        const server = expectFinding(report, 'server');
        assert.equal(server.details?.server, 'the tokenwire gateway');
        assert.match(server.message, /x-tokenwire-stream-id/);
        assert.doesNotMatch(server.message, /looks like vLLM/);
      } finally {
        await gateway.close();
      }
    });

    it('--dialect overrides the path, and a payload that says otherwise is pointed out', async () => {
      const { report } = await inspect('ollama-chat', '', ['--dialect', 'ollama-generate']);
      const dialect = expectFinding(report, 'dialect');
      assert.equal(dialect.details?.dialect, 'ollama-generate');
      assert.equal(dialect.details?.source, 'flag');
      assert.equal(dialect.details?.detected, 'ollama-chat');
      assert.match(dialect.message, /the payloads look like ollama-chat/);
    });

    it('a path that names no dialect: unknown-dialect', async () => {
      const served = await serve(
        () =>
          new Response('data: {"foo":1}\n\ndata: {"foo":2}\n\n', {
            headers: { 'content-type': 'text/event-stream' },
          }),
      );
      try {
        const io = new FakeIo();
        const code = (
          await cli(['inspect', `${served.url}/custom/stream`, '--body', '{"x":1}', '--json'], io)
        ).code;
        expectFinding(JSON.parse(io.out) as Report, 'unknown-dialect');
        assert.equal(code, 1);
      } finally {
        await served.close();
      }
    });
  });

  describe('one finding per fault', () => {
    it('framing=ndjson on an SSE dialect: ndjson-instead-of-sse (and the frames are still shown)', async () => {
      const { code, report } = await inspect('openai-chat', 'framing=ndjson');
      expectFinding(report, 'ndjson-instead-of-sse');
      assert.ok(report.frames.length > 3);
      assert.ok(report.text.length > 0, 'the text is decoded even though the framing is wrong');
      assert.equal(code, 1);
    });

    it('framing=sse on an NDJSON dialect: sse-instead-of-ndjson', async () => {
      const { code, report } = await inspect('ollama-chat', 'framing=sse');
      expectFinding(report, 'sse-instead-of-ndjson');
      assert.equal(code, 1);
    });

    it('content-type=text/plain: content-type-wrong', async () => {
      const { code, report } = await inspect('openai-chat', 'content-type=text/plain');
      expectFinding(report, 'content-type-wrong');
      assert.equal(code, 1);
    });

    it('content-type=application/x-ndjson on an SSE body: content-type-wrong', async () => {
      const { report } = await inspect('llamacpp', 'content-type=application/x-ndjson');
      assert.match(expectFinding(report, 'content-type-wrong').message, /body is SSE/);
    });

    it('content-type= (none): content-type-missing', async () => {
      const { code, report } = await inspect('tgi', 'content-type=');
      expectFinding(report, 'content-type-missing');
      assert.equal(code, 1);
    });

    for (const dialect of ['ollama-chat', 'ollama-generate', 'llamacpp', 'tgi'] as const) {
      it(`no-done on ${dialect} (no terminal event): missing-terminal-event`, async () => {
        const { code, report } = await inspect(dialect, 'no-done');
        expectFinding(report, 'missing-terminal-event');
        assert.equal(report.result?.complete, false);
        assert.equal(code, 1);
      });
    }

    it('cut-after=5: missing-terminal-event, and the connection is said to have broken', async () => {
      const { code, report } = await inspect('openai-chat', 'cut-after=5');
      assert.match(expectFinding(report, 'missing-terminal-event').message, /connection broke/);
      assert.equal(code, 1);
    });

    for (const dialect of ['openai-chat', 'openai-completions'] as const) {
      it(`no-done on ${dialect}: missing-done (a warning; the answer itself finished)`, async () => {
        const { code, report } = await inspect(dialect, 'no-done');
        expectFinding(report, 'missing-done');
        assert.ok(!ids(report).includes('missing-terminal-event'));
        assert.equal(code, 1);
      });
    }

    const shapes: [DialectId, string | undefined, RegExp][] = [
      ['openai-chat', 'vllm', /vLLM/],
      ['openai-chat', 'tgi', /TGI's OpenAI-route/],
      ['openai-chat', 'llamacpp', /llama-server shape/],
      ['openai-completions', undefined, /vLLM/],
      ['ollama-chat', undefined, /Ollama's native error line/],
      ['ollama-generate', undefined, /Ollama's native error line/],
      ['llamacpp', undefined, /llama-server shape/],
      ['tgi', undefined, /TGI \/generate_stream/],
    ];
    for (const [dialect, flavor, shape] of shapes) {
      it(`error-after=3 on ${dialect}${flavor === undefined ? '' : ` (${flavor})`}: server-error in that server's shape`, async () => {
        const extra = flavor === undefined ? [] : ['--header', `x-tokenwire-flavor: ${flavor}`];
        const { code, report } = await inspect(dialect, 'error-after=3', extra);
        const found = expectFinding(report, 'server-error');
        assert.match(String(found.details?.shape), shape);
        assert.match(found.message, /simulated failure after 3 tokens/);
        assert.ok(!ids(report).includes('usage-absent'), 'a failed stream says nothing about usage');
        assert.equal(code, 1);
      });
    }

    it("error-after=3 with llama-server's legacy flavor: server-error and legacy-error-field", async () => {
      const { code, report } = await inspect('openai-chat', 'error-after=3', [
        '--header',
        'x-tokenwire-flavor: llamacpp-legacy',
      ]);
      assert.match(String(expectFinding(report, 'server-error').details?.shape), /legacy `error:` line/);
      expectFinding(report, 'legacy-error-field');
      assert.equal(code, 1);
    });

    it("error-after on Ollama's OpenAI layer (no error representation): missing-terminal-event with Ollama's hint", async () => {
      const { report } = await inspect('openai-chat', 'error-after=3', [
        '--header',
        'x-tokenwire-flavor: ollama',
      ]);
      assert.match(expectFinding(report, 'missing-terminal-event').hint ?? '', /Ollama's OpenAI layer/);
    });

    it('control-tokens: the leaked <|eot_id|> is found', async () => {
      const { code, report } = await inspect('openai-chat', 'control-tokens');
      assert.match(expectFinding(report, 'control-tokens').message, /<\|eot_id\|> ×1/);
      assert.equal(code, 1);
    });

    for (const token of ['<|im_end|>', '</s>', '<|endoftext|>']) {
      it(`control-tokens=${token} on ollama-generate is found`, async () => {
        const { report } = await inspect('ollama-generate', `control-tokens=${token}`);
        assert.ok(expectFinding(report, 'control-tokens').message.includes(token));
      });
    }

    it('ignore-stop with a stop list: ignored-stop names the stop string', async () => {
      const { code, report } = await inspect('openai-chat', 'ignore-stop', ['--stop', 'STOP-HERE']);
      assert.match(expectFinding(report, 'ignored-stop').message, /"STOP-HERE"/);
      assert.equal(code, 1);
    });

    it('ignore-stop through --body (TGI parameters.stop): the stop list is read from the body', async () => {
      const body = JSON.stringify({
        inputs: 'hi',
        parameters: { stop: ['ZZ-STOP'], details: true, max_new_tokens: 200 },
      });
      const io = new FakeIo();
      const { code } = await cli(
        [
          'inspect',
          `${fast.url}/generate_stream`,
          '--json',
          '--body',
          body,
          '--header',
          'x-tokenwire-fault: ignore-stop',
        ],
        io,
      );
      assert.match(expectFinding(JSON.parse(io.out) as Report, 'ignored-stop').message, /ZZ-STOP/);
      assert.equal(code, 1);
    });

    it('a stop the server honoured is not reported', async () => {
      const { report } = await inspect('ollama-chat', '', ['--stop', 'STOP-HERE']);
      assert.ok(!ids(report).includes('ignored-stop'));
    });

    it('--max-tokens 5: truncated', async () => {
      const { code, report } = await inspect('llamacpp', '', ['--max-tokens', '5']);
      assert.match(expectFinding(report, 'truncated').message, /5 tokens/);
      assert.equal(code, 1);
    });

    it('buffer=100: buffering (events released in bursts)', async () => {
      const { code, report } = await inspect('openai-chat', 'buffer=100', [], sim);
      const found = expectFinding(report, 'buffering');
      assert.ok(Number(found.details?.bursts) >= 2, JSON.stringify(found.details));
      assert.equal(code, 1);
    });

    it('invalid-utf8: the bad byte is pointed at, and the stream is still shown to its end', async () => {
      const { code, report } = await inspect('openai-chat', 'invalid-utf8');
      const found = expectFinding(report, 'invalid-utf8');
      assert.equal(typeof found.details?.firstOffset, 'number');
      assert.equal(report.result?.complete, true, 'decoded with U+FFFD instead of failing');
      assert.equal(code, 1);
    });

    it('no-usage on openai-chat, which asked for it: usage-absent', async () => {
      const { code, report } = await inspect('openai-chat', 'no-usage');
      assert.match(expectFinding(report, 'usage-absent').message, /include_usage/);
      assert.equal(code, 1);
    });

    it('no-usage on ollama-chat (always sends counts): usage-absent', async () => {
      const { report } = await inspect('ollama-chat', 'no-usage');
      expectFinding(report, 'usage-absent');
    });

    it('cumulative: cumulative-text', async () => {
      const { report } = await inspect('ollama-generate', 'cumulative');
      expectFinding(report, 'cumulative-text');
    });

    it('a stall past --idle-timeout-ms: stalled', async () => {
      const { code, report } = await inspect('openai-chat', 'stall=3000,stall-after=3', [
        '--idle-timeout-ms',
        '300',
      ]);
      expectFinding(report, 'stalled');
      assert.equal(code, 1);
    });

    it('slow-headers past --idle-timeout-ms: request-failed, with the timeout hint', async () => {
      const { code, report } = await inspect('openai-chat', 'slow-headers=3000', [
        '--idle-timeout-ms',
        '200',
      ]);
      const found = expectFinding(report, 'request-failed');
      assert.match(found.message, /no response headers within the idle timeout/);
      assert.match(found.hint ?? '', /in time/);
      assert.equal(code, 1);
    });

    it('status=503: http-error with the server message', async () => {
      const { code, report } = await inspect('openai-chat', 'status=503');
      const found = expectFinding(report, 'http-error');
      assert.match(found.message, /HTTP 503.*simulated HTTP 503/);
      assert.equal(code, 1);
    });
  });

  describe('servers the simulator cannot imitate', () => {
    async function inspectHandler(
      handler: () => Response,
      args: string[] = [],
    ): Promise<{ code: number; report: Report }> {
      const served = await serve(handler);
      try {
        const io = new FakeIo();
        const { code } = await cli(
          ['inspect', `${served.url}/v1/chat/completions`, '--model', 'm', '--json', ...args],
          io,
        );
        return { code, report: JSON.parse(io.out) as Report };
      } finally {
        await served.close();
      }
    }

    it('one JSON document: not-streaming', async () => {
      const { code, report } = await inspectHandler(() =>
        Response.json({
          object: 'chat.completion',
          choices: [{ index: 0, message: { role: 'assistant', content: 'hi' } }],
        }),
      );
      expectFinding(report, 'not-streaming');
      assert.equal(code, 1);
    });

    it('an empty 200: empty-body', async () => {
      const { report } = await inspectHandler(
        () => new Response('', { headers: { 'content-type': 'text/event-stream' } }),
      );
      expectFinding(report, 'empty-body');
    });

    it('an HTML page: unknown-framing', async () => {
      const { report } = await inspectHandler(
        () => new Response('<html>login</html>', { headers: { 'content-type': 'text/html' } }),
      );
      expectFinding(report, 'unknown-framing');
    });

    it('a gzip-compressed stream: compressed', async () => {
      const body = gzipSync(
        'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n',
      );
      const { report } = await inspectHandler(
        () =>
          new Response(body, {
            headers: { 'content-type': 'text/event-stream', 'content-encoding': 'gzip' },
          }),
      );
      expectFinding(report, 'compressed');
    });

    it('nothing listening: request-failed, with the connection-refused hint', async () => {
      const served = await serve(() => new Response(''));
      const url = served.url;
      await served.close();
      const io = new FakeIo();
      const { code } = await cli(['inspect', `${url}/v1/chat/completions`, '--model', 'm', '--json'], io);
      const found = expectFinding(JSON.parse(io.out) as Report, 'request-failed');
      assert.match(found.hint ?? '', /nothing listens/);
      assert.equal(code, 1);
    });

    it('a payload the dialect cannot read: malformed-payload', async () => {
      const { report } = await inspectHandler(
        () =>
          new Response(
            'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\ndata: {not json\n\ndata: [DONE]\n\n',
            {
              headers: { 'content-type': 'text/event-stream' },
            },
          ),
      );
      expectFinding(report, 'malformed-payload');
    });
  });

  describe('--file, --save and Ctrl-C', () => {
    it('--file on the legacy llama.cpp capture: server-error and legacy-error-field', async () => {
      const io = new FakeIo();
      const file = fixturePath('wire-examples', 'llamacpp-chat-midstream-error-legacy.sse');
      const { code } = await cli(['inspect', '--file', file, '--dialect', 'openai-chat', '--json'], io);
      const report = JSON.parse(io.out) as Report;
      expectFinding(report, 'server-error');
      expectFinding(report, 'legacy-error-field');
      assert.equal(code, 1);
    });

    it('--file on a capture the playground saved: its reads, and how it ended (a cut: missing terminal event)', async () => {
      mkdirSync(testOutputPath(), { recursive: true });
      const chunk = (content: string) =>
        `data: ${JSON.stringify({ object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;
      const wire = new TextEncoder().encode(chunk('Reykjav') + chunk('ík'));
      const file = testOutputPath('playground-capture-for-inspect.json');
      writeFileSync(
        file,
        formatCaptureFile({
          source: 'live',
          dialect: 'openai-chat',
          request: {
            method: 'POST',
            url: 'http://127.0.0.1:8080/sim/v1/chat/completions',
            headers: {},
            body: '{}',
          },
          response: {
            status: 200,
            statusText: 'OK',
            headers: { 'content-type': 'text/event-stream' },
            atMs: 3,
          },
          reads: [{ atMs: 10, bytes: wire }],
          end: { kind: 'read-error', atMs: 30, message: 'connection cut' },
        }),
      );
      const io = new FakeIo();
      await cli(['inspect', '--file', file, '--json'], io);
      const report = JSON.parse(io.out) as Report;
      expectFinding(report, 'missing-terminal-event');
    });

    it('--file on a plain JSON answer (not a stream): not-streaming, as the live inspect says', async () => {
      mkdirSync(testOutputPath(), { recursive: true });
      const answers: [string, unknown][] = [
        [
          'openai-chat',
          {
            id: 'chatcmpl-1',
            object: 'chat.completion',
            choices: [{ index: 0, message: { role: 'assistant', content: 'Hello' }, finish_reason: 'stop' }],
          },
        ],
        ['ollama-chat', { model: 'm', message: { role: 'assistant', content: 'Hello' }, done: true }],
        ['tgi', { generated_text: 'Hello' }],
      ];
      for (const [name, answer] of answers) {
        for (const [style, text] of [
          ['one line', `${JSON.stringify(answer)}\n`],
          ['pretty', JSON.stringify(answer, null, 2)],
        ]) {
          const file = testOutputPath(`inspect-whole-${name}.json`);
          writeFileSync(file, text!);
          const io = new FakeIo();
          const { code } = await cli(['inspect', '--file', file, '--json'], io);
          const report = JSON.parse(io.out) as Report;
          expectFinding(report, 'not-streaming');
          assert.deepEqual(
            ids(report).filter((id) => id !== 'not-streaming' && id !== 'dialect'),
            [],
            `${name} ${style}`,
          );
          assert.equal(code, 1);
        }
      }
    });

    it('--file on a one-line stream (an Ollama stream of only its done line) is still a stream', async () => {
      mkdirSync(testOutputPath(), { recursive: true });
      const file = testOutputPath('inspect-one-line.ndjson');
      writeFileSync(
        file,
        `${JSON.stringify({ model: 'm', created_at: '2026-01-01T00:00:00Z', message: { role: 'assistant', content: '' }, done: true, done_reason: 'stop' })}\n`,
      );
      const io = new FakeIo();
      await cli(['inspect', '--file', file, '--json'], io);
      assert.ok(!ids(JSON.parse(io.out) as Report).includes('not-streaming'));
    });

    it("--file holding only llama-server's legacy `error:` line: server-error, not unknown-dialect", async () => {
      mkdirSync(testOutputPath(), { recursive: true });
      const file = testOutputPath('inspect-legacy-error-only.sse');
      writeFileSync(file, 'error: {"code":500,"message":"the model crashed","type":"server_error"}\n\n');
      const io = new FakeIo();
      const { code } = await cli(['inspect', '--file', file, '--json'], io);
      const report = JSON.parse(io.out) as Report;
      assert.match(expectFinding(report, 'server-error').message, /the model crashed/);
      expectFinding(report, 'legacy-error-field');
      assert.ok(!ids(report).includes('unknown-dialect'), ids(report).join(', '));
      assert.equal(code, 1);
    });

    it('--file on clean captures of every dialect: no problem', async () => {
      const files = [
        'vllm-chat.sse',
        'vllm-completions.sse',
        'tgi-chat.sse',
        'tgi-generate-stream.sse',
        'ollama-chat.ndjson',
        'ollama-generate.ndjson',
        'ollama-openai-chat.sse',
        'llamacpp-completion-native.sse',
      ];
      for (const name of files) {
        const io = new FakeIo();
        const { code } = await cli(['inspect', '--file', fixturePath('wire-examples', name), '--json'], io);
        const report = JSON.parse(io.out) as Report;
        // vllm-completions.sse ends on the output cap by design.
        const expected =
          name === 'vllm-completions.sse'
            ? ['truncated: finish "length": the output cap cut the answer off']
            : [];
        assert.deepEqual(problems(report), expected, name);
        assert.equal(code, expected.length === 0 ? 0 : 1, name);
      }
    });

    it('--save writes the raw body; --file reads it back to the same frames', async () => {
      mkdirSync(testOutputPath(), { recursive: true });
      const saved = testOutputPath('inspect-saved.ndjson');
      const live = await inspect('ollama-chat', '', ['--save', saved]);
      const io = new FakeIo();
      await cli(['inspect', '--file', saved, '--json'], io);
      const fromFile = JSON.parse(io.out) as Report;
      assert.equal(fromFile.frames.length, live.report.frames.length);
      assert.equal(fromFile.text, live.report.text);
      assert.equal(fromFile.dialect?.id, 'ollama-chat');
      assert.equal(fromFile.reads[0]?.atMs, undefined, 'a file has no timings');
    });

    it('--file with a malformed body written by hand: malformed-payload, then missing-terminal-event', async () => {
      mkdirSync(testOutputPath(), { recursive: true });
      const file = testOutputPath('inspect-malformed.sse');
      writeFileSync(
        file,
        'data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\ndata: {"choices":\n\n',
      );
      const io = new FakeIo();
      await cli(['inspect', '--file', file, '--dialect', 'openai-chat', '--json'], io);
      const report = JSON.parse(io.out) as Report;
      expectFinding(report, 'malformed-payload');
      expectFinding(report, 'missing-terminal-event');
    });

    it('Ctrl-C during the capture: exit 130, interrupted, the partial stream still diagnosed', async () => {
      const io = new FakeIo();
      const running = cli(
        [
          'inspect',
          `${sim.url}/v1/chat/completions`,
          '--model',
          'sim',
          '--header',
          'x-tokenwire-fault: tps=20',
          '--json',
        ],
        io,
      );
      while (sim.sim.stats.active === 0) await new Promise((resolve) => setTimeout(resolve, 5));
      await new Promise((resolve) => setTimeout(resolve, 100));
      io.interrupt();
      const { code } = await running;
      const report = JSON.parse(io.out) as Report;
      expectFinding(report, 'interrupted');
      assert.ok(!ids(report).includes('missing-terminal-event'));
      assert.equal(code, 130);
    });

    it('usage errors exit 2', async () => {
      assert.equal((await cli(['inspect'])).code, 2);
      assert.equal((await cli(['inspect', 'http://x/v1/chat/completions', '--fail-on', 'never'])).code, 2);
      assert.equal((await cli(['inspect', '--file', 'x', 'http://x/'])).code, 2);
      assert.equal((await cli(['inspect', 'http://x/v1/chat/completions', '--body', '{nope'])).code, 2);
    });

    it('--help cites nothing outside the repository (no wire-formats.md section)', async () => {
      const { io } = await cli(['inspect', '--help']);
      assert.doesNotMatch(io.out, /wire-formats\.md|§/);
    });

    it('--help lists every finding id', async () => {
      const { code, io } = await cli(['inspect', '--help']);
      assert.equal(code, 0);
      for (const id of Object.keys(FINDINGS)) assert.ok(io.out.includes(id), id);
    });

    it('--fail-on error: a warning alone exits 0', async () => {
      const { code, report } = await inspect('openai-chat', 'no-done', ['--fail-on', 'error']);
      expectFinding(report, 'missing-done');
      assert.equal(code, 0);
    });
  });
});
