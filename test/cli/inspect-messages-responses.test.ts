import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { Recording } from '../../src/capture/recording.ts';
import { analyzeRecording } from '../../src/cli/inspect/analyze-recording.ts';
import { diagnose } from '../../src/cli/inspect/diagnose.ts';
import type { Finding } from '../../src/cli/inspect/finding.ts';
import { FINDINGS } from '../../src/cli/inspect/finding.ts';
import { fixturePath, testOutputPath } from '../helpers/paths.ts';
import { type ScriptServer, scriptServer } from '../helpers/script-server.ts';
import { cli, FakeIo, type ServedSim, serveSim } from './cli-helpers.ts';

interface Report {
  findings: Finding[];
  summary: { exitCode: number };
  result?: { complete: boolean; truncated?: boolean; finishReason?: string };
  dialect?: { id: string };
}

const ids = (report: Report) => report.findings.map((f) => f.id);
const problems = (report: Report) =>
  report.findings.filter((f) => f.severity !== 'info').map((f) => `${f.id}: ${f.message}`);
const real = (name: string) => fixturePath('real-captures', 'llamacpp-b10108', name);
const wire = (name: string) => fixturePath('wire-examples', name);

function expectFinding(report: Report, id: keyof typeof FINDINGS): Finding {
  const found = report.findings.find((f) => f.id === id);
  assert.ok(found, `expected ${id}, got ${ids(report).join(', ')}`);
  assert.equal(found.severity, FINDINGS[id].severity);
  return found;
}

async function inspectFile(file: string, args: string[] = []): Promise<{ code: number; report: Report }> {
  const io = new FakeIo();
  const { code } = await cli(['inspect', '--file', file, '--json', ...args], io);
  assert.equal(io.err, '', 'nothing on stderr');
  return { code, report: JSON.parse(io.out) as Report };
}

/** A file holding `text` (a capture cut by hand), under test-output/. */
function written(name: string, text: string): string {
  mkdirSync(testOutputPath(), { recursive: true });
  const file = testOutputPath(name);
  writeFileSync(file, text);
  return file;
}

/** The SSE events of a capture, whole (each with its blank line). */
function events(file: string): string[] {
  return readFileSync(file, 'utf8')
    .split(/(?<=\n\n)/)
    .filter((event) => event.trim() !== '');
}

describe('inspect: Anthropic Messages and OpenAI Responses, from files', () => {
  it('clean captures of both dialects: no problem, exit 0', async () => {
    for (const name of [
      real('a09-messages-stream-eos.sse'),
      real('p08-responses-stream-eos.sse'),
      wire('anthropic-messages.sse'),
      wire('vllm-anthropic-messages.sse'),
      wire('openai-responses.sse'),
    ]) {
      const { code, report } = await inspectFile(name);
      assert.deepEqual(problems(report), [], name);
      assert.equal(code, 0, name);
    }
  });

  it('a Messages stream cut before message_stop (after message_delta): missing-terminal-event, incomplete', async () => {
    const all = events(real('a01-anthropic-messages-stream.sse'));
    assert.match(all.at(-1)!, /message_stop/);
    assert.match(all.at(-2)!, /message_delta/);
    const { code, report } = await inspectFile(written('inspect-a01-cut.sse', all.slice(0, -1).join('')));
    const found = expectFinding(report, 'missing-terminal-event');
    assert.match(found.message, /message_stop/);
    assert.match(found.message, /stop_reason "max_tokens"\) came, message_stop did not/);
    assert.equal(report.result?.complete, false);
    assert.equal(code, 1);
  });

  it('a Messages stream cut mid-text: missing-terminal-event', async () => {
    const all = events(real('a04-messages-stream-system-multiturn.sse'));
    const { report } = await inspectFile(written('inspect-a04-cut.sse', all.slice(0, 6).join('')));
    assert.doesNotMatch(expectFinding(report, 'missing-terminal-event').message, /did not/);
    assert.equal(report.result?.complete, false);
  });

  it('a Responses stream cut before response.completed: missing-terminal-event naming the terminal events', async () => {
    const all = events(real('p01-responses-stream.sse'));
    assert.match(all.at(-1)!, /response\.completed/);
    const { code, report } = await inspectFile(written('inspect-p01-cut.sse', all.slice(0, -1).join('')));
    assert.match(
      expectFinding(report, 'missing-terminal-event').message,
      /response\.completed, response\.incomplete or response\.failed/,
    );
    assert.equal(report.result?.complete, false);
    assert.ok(!ids(report).includes('truncated'));
    assert.equal(code, 1);
  });

  it('max_tokens on Messages (a01, real llama-server): truncated, not missing-terminal-event', async () => {
    const { code, report } = await inspectFile(real('a01-anthropic-messages-stream.sse'));
    assert.deepEqual(
      ids(report).filter((id) => FINDINGS[id].severity !== 'info'),
      ['truncated'],
    );
    assert.match(expectFinding(report, 'truncated').message, /"max_tokens"/);
    assert.equal(code, 1);
  });

  for (const name of ['openai-responses-incomplete.sse', 'vllm-responses-incomplete.sse']) {
    it(`response.incomplete / status incomplete (${name}): truncated, with the max_output_tokens hint`, async () => {
      const { report } = await inspectFile(wire(name));
      const found = expectFinding(report, 'truncated');
      assert.match(found.message, /"max_output_tokens"/);
      assert.match(found.hint ?? '', /^raise max_output_tokens/);
      assert.ok(!ids(report).includes('completed-at-cap'));
    });
  }

  const errors: [string, RegExp][] = [
    [wire('anthropic-messages-midstream-error.sse'), /Anthropic's `event: error` shape/],
    [wire('vllm-anthropic-messages-midstream-error.sse'), /Anthropic's `event: error` shape/],
    [real('a05-messages-stream-midstream-ctxfull.sse'), /llama-server's Messages shape/],
    [wire('openai-responses-error.sse'), /the Responses `error` event/],
    [wire('openai-responses-failed.sse'), /`response\.failed` event/],
    [real('p05-responses-stream-midstream-ctxfull.sse'), /llama-server's Responses shape/],
  ];
  for (const [file, shape] of errors) {
    it(`an error after the 200 (${file.split('/').at(-1)}): server-error in that shape, not missing-terminal-event`, async () => {
      const { code, report } = await inspectFile(file);
      assert.match(String(expectFinding(report, 'server-error').details?.shape), shape);
      assert.ok(!ids(report).includes('missing-terminal-event'));
      assert.equal(report.result?.complete, false);
      assert.equal(code, 1);
    });
  }

  it('a sequence_number gap: sequence-gap names the frame and the numbers', async () => {
    const { code, report } = await inspectFile(wire('openai-responses-sequence-gap.sse'));
    const found = expectFinding(report, 'sequence-gap');
    assert.match(found.message, /first at frame 5: sequence_number 5 after 3 \(expected 4\)/);
    assert.deepEqual(found.details?.frames, [5]);
    assert.equal(code, 1);
  });

  it('an event without sequence_number among numbered ones, and one after the terminal event', async () => {
    const all = events(wire('openai-responses.sse'));
    const unnumbered = all[3]!.replace(/,?"sequence_number":\d+/, '');
    assert.notEqual(unnumbered, all[3]);
    const text = [...all.slice(0, 3), unnumbered, ...all.slice(4), all.at(-2)!].join('');
    const { report } = await inspectFile(written('inspect-responses-bookkeeping.sse', text));
    assert.match(expectFinding(report, 'sequence-missing').message, /first at frame 4/);
    assert.match(expectFinding(report, 'after-terminal').message, /after the terminal event/);
  });

  it('llama-server "completed" at the cap (p01 with --max-tokens 16): completed-at-cap and truncated', async () => {
    const { code, report } = await inspectFile(real('p01-responses-stream.sse'), ['--max-tokens', '16']);
    const found = expectFinding(report, 'completed-at-cap');
    assert.match(
      found.message,
      /status "completed", but the output count \(16 tokens\) reached the request's max_output_tokens \(16\)/,
    );
    assert.match(expectFinding(report, 'truncated').message, /see completed-at-cap/);
    assert.equal(report.result?.truncated, true, "the client's verdict agrees");
    assert.equal(code, 1);
  });

  it("llama-server's Responses events (no sequence_number) name the server; OpenAI's do not", async () => {
    const llama = (await inspectFile(real('p01-responses-stream.sse'))).report as Report & {
      server?: { server: string };
    };
    assert.equal(llama.server?.server, 'llama.cpp');
    const openai = (await inspectFile(wire('openai-responses.sse'))).report as Report & {
      server?: { server: string };
    };
    assert.equal(openai.server, undefined);
  });

  it('the same capture without a cap, or under a higher one: finished, no finding', async () => {
    for (const args of [[], ['--max-tokens', '17']]) {
      const { code, report } = await inspectFile(real('p01-responses-stream.sse'), args);
      assert.deepEqual(problems(report), [], args.join(' '));
      assert.equal(report.result?.truncated, false);
      assert.equal(code, 0);
    }
  });

  it("the cap comes from the recorded request's body (max_output_tokens)", async () => {
    const recording: Recording = {
      source: 'live',
      request: {
        method: 'POST',
        url: 'http://127.0.0.1:1/v1/responses',
        headers: {},
        body: readFileSync(real('p01-responses-stream.req.json'), 'utf8'),
      },
      response: { status: 200, statusText: 'OK', headers: { 'content-type': 'text/event-stream' }, atMs: 1 },
      dialect: 'openai-responses',
      dialectSource: 'path',
      reads: [{ atMs: 2, bytes: new Uint8Array(readFileSync(real('p01-responses-stream.sse'))) }],
      end: { kind: 'eof', atMs: 3 },
    };
    const analysis = await analyzeRecording(recording);
    assert.equal(analysis.outputCap, 16);
    assert.ok(diagnose(analysis).some((f) => f.id === 'completed-at-cap'));
    assert.equal(analysis.result?.truncated, true);
  });
});

describe('inspect: Anthropic Messages and OpenAI Responses, live', () => {
  let sim: ServedSim;
  // "Clean: no problem" is read from a stream paced like a real model (100 tokens/s), as in
  // inspect.test.ts: at 5000 tokens/s a busy machine delivers the whole answer in one read, which the
  // buffering check rightly cannot tell from a buffering proxy (no speed-dependent test).
  let paced: ServedSim;
  let llama: ScriptServer;
  before(async () => {
    sim = await serveSim({ timing: { tokensPerSecond: 5000 } });
    paced = await serveSim({ timing: { tokensPerSecond: 100 } });
    llama = await scriptServer({
      headers: { 'content-type': 'text/event-stream' },
      steps: [{ write: readFileSync(real('p01-responses-stream.sse')) }],
    });
  });
  after(async () => {
    await sim.close();
    await paced.close();
    await llama.close();
  });

  async function inspect(url: string, args: string[]): Promise<{ code: number; report: Report }> {
    const io = new FakeIo();
    const { code } = await cli(['inspect', url, '--model', 'sim', '--json', ...args], io);
    assert.equal(io.err, '', 'nothing on stderr');
    return { code, report: JSON.parse(io.out) as Report };
  }
  const fault = (spec: string) => ['--header', `x-tokenwire-fault: ${spec}`];

  for (const path of ['/v1/messages', '/v1/responses']) {
    it(`${path}, clean: no problem`, async () => {
      const { code, report } = await inspect(`${paced.url}${path}`, []);
      assert.deepEqual(problems(report), []);
      assert.equal(code, 0);
    });

    it(`${path}, error-after=3: server-error`, async () => {
      const { code, report } = await inspect(`${sim.url}${path}`, fault('error-after=3'));
      assert.match(expectFinding(report, 'server-error').message, /simulated failure after 3 tokens/);
      assert.equal(code, 1);
    });

    it(`${path}, --max-tokens 5: truncated`, async () => {
      const { code, report } = await inspect(`${sim.url}${path}`, ['--max-tokens', '5']);
      assert.match(expectFinding(report, 'truncated').message, /\(5 tokens\)/);
      assert.ok(!ids(report).includes('completed-at-cap'), 'the sim says incomplete itself');
      assert.equal(code, 1);
    });
  }

  for (const [path, capture] of [
    ['/v1/messages', 'a01-anthropic-messages-stream.sse'],
    ['/v1/responses', 'p01-responses-stream.sse'],
  ] as const) {
    it(`${path}: llama-server's stream cut before its terminal event, the connection broken: missing-terminal-event`, async () => {
      const all = events(real(capture));
      const server = await scriptServer({
        headers: { 'content-type': 'text/event-stream' },
        steps: [{ write: all.slice(0, 5).join('') }, { destroy: true }],
      });
      try {
        const { code, report } = await inspect(`${server.url}${path}`, []);
        assert.match(expectFinding(report, 'missing-terminal-event').message, /connection broke/);
        assert.equal(report.result?.complete, false);
        assert.equal(code, 1);
      } finally {
        await server.close();
      }
    });
  }

  it('llama-server /v1/responses "completed" at the cap inspect sent (--max-tokens 16): completed-at-cap', async () => {
    const { code, report } = await inspect(`${llama.url}/v1/responses`, ['--max-tokens', '16']);
    assert.equal(JSON.parse(llama.requests.at(-1)!.body).max_output_tokens, 16);
    expectFinding(report, 'completed-at-cap');
    expectFinding(report, 'truncated');
    assert.equal(report.result?.truncated, true);
    assert.equal(code, 1);
  });

  it('the same server under a cap it did not reach (--max-tokens 32): no problem', async () => {
    const { code, report } = await inspect(`${llama.url}/v1/responses`, ['--max-tokens', '32']);
    assert.deepEqual(problems(report), []);
    assert.equal(code, 0);
  });
});
