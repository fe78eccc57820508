import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { CHAT_EXIT } from '../../src/cli/chat/chat-outcome.ts';
import { startGateway, type TestGateway } from '../helpers/gateway.ts';
import { fixturePath } from '../helpers/paths.ts';
import { type ScriptServer, scriptServer } from '../helpers/script-server.ts';
import { cli, FakeIo, type ServedSim, serveSim } from './cli-helpers.ts';

const ndjson = (text: string) =>
  text
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown> & { type: string });
const real = (name: string) => fixturePath('real-captures', 'llamacpp-b10108', name);
/** The SSE events of a capture, whole (each with its blank line). */
const events = (file: string) =>
  readFileSync(file, 'utf8')
    .split(/(?<=\n\n)/)
    .filter((event) => event.trim() !== '');

const ROUTES = [
  { path: '/v1/messages', dialect: 'anthropic-messages', stop: 'end_turn', cap: 'max_tokens' },
  { path: '/v1/responses', dialect: 'openai-responses', stop: 'completed', cap: 'max_output_tokens' },
] as const;

describe('tokenwire chat on /v1/messages and /v1/responses', () => {
  let gateway: TestGateway;
  let sim: ServedSim;
  before(async () => {
    gateway = await startGateway();
    sim = await serveSim({ timing: { tokensPerSecond: 3000 } });
  });
  after(async () => {
    await gateway.close();
    await sim.close();
  });

  const chat = (url: string, args: string[], io = new FakeIo()) =>
    cli(['chat', url, 'Hello there', '--model', 'sim', ...args], io);

  for (const route of ROUTES) {
    describe(`${route.path} through the gateway on the simulator`, () => {
      it('the answer streams to stdout, the footer says finished with the raw stop word, exit 0', async () => {
        const { code, io } = await chat(`${gateway.url}${route.path}`, []);
        assert.equal(code, CHAT_EXIT.finished);
        assert.ok(io.out.length > 10, 'the answer is on stdout');
        assert.match(io.err, new RegExp(`\\[done\\] finished \\(stop, server said "${route.stop}"\\)`));
        assert.match(io.err, new RegExp(route.dialect));
        assert.match(io.err, / \d+ output tokens/);
        assert.doesNotMatch(io.err, /estimated/);
      });

      it('--json: the text events arrive one by one and make the result text', async () => {
        const { code, io } = await chat(`${gateway.url}${route.path}`, ['--json']);
        assert.equal(code, 0);
        const lines = ndjson(io.out);
        const texts = lines.filter((line) => line.type === 'text');
        assert.ok(texts.length > 3, 'streamed in pieces, not one block');
        const result = lines.at(-1)!;
        assert.equal(result.status, 'finished');
        assert.equal(result.dialect, route.dialect);
        assert.equal(result.text, texts.map((line) => line.text).join(''));
      });

      it(`--max-tokens 3: TRUNCATED (finish "${route.cap}"), exit 4, never finished`, async () => {
        const { code, io } = await chat(`${gateway.url}${route.path}`, ['--max-tokens', '3']);
        assert.equal(code, CHAT_EXIT.truncated);
        assert.match(
          io.err,
          new RegExp(`TRUNCATED: the answer hit the output cap \\(finish "${route.cap}"\\)`),
        );
        assert.doesNotMatch(io.err, /finished/);
        assert.ok(io.out.length > 0);
      });

      for (const how of ['header', 'model'] as const) {
        it(`a cut stream (cut-after=3 by ${how}): INCOMPLETE, exit 3, never finished`, async () => {
          const args = how === 'header' ? ['--sim-faults', 'cut-after=3'] : ['--model', 'sim@cut-after=3'];
          const { code, io } = await chat(`${gateway.url}${route.path}`, args);
          assert.equal(code, CHAT_EXIT.incomplete);
          assert.match(io.err, /\[!\] INCOMPLETE/);
          assert.doesNotMatch(io.err, /finished|TRUNCATED/);
        });
      }

      it('an error after the 200 (error-after=3): INCOMPLETE (server error), the partial answer kept', async () => {
        const { code, io } = await chat(`${gateway.url}${route.path}`, ['--sim-faults', 'error-after=3']);
        assert.equal(code, CHAT_EXIT.incomplete);
        assert.match(io.err, /INCOMPLETE \(server error\): .*simulated failure after 3 tokens/);
        assert.match(io.err, /The answer above is partial/);
        assert.ok(io.out.length > 0);
      });
    });

    it(`${route.path} straight to the simulator, cut-after=3: INCOMPLETE (connection lost), exit 3`, async () => {
      const { code, io } = await chat(`${sim.url}${route.path}`, ['--sim-faults', 'cut-after=3', '--json']);
      assert.equal(code, CHAT_EXIT.incomplete);
      const result = ndjson(io.out).at(-1)!;
      assert.equal(result.status, 'incomplete');
      assert.equal(result.incomplete, 'connection-closed');
      assert.equal(result.complete, false);
    });

    it(`${route.path} on the built-in simulator (no URL): --max-tokens 3 exits 4`, async () => {
      const io = new FakeIo();
      const { code } = await cli(['chat', 'hi', '--dialect', route.dialect, '--max-tokens', '3'], io);
      assert.equal(code, CHAT_EXIT.truncated);
      assert.match(io.err, /TRUNCATED/);
    });
  }

  describe("llama-server's own bytes (b10108 captures)", () => {
    let servers: ScriptServer[] = [];
    const served = async (bytes: string | Uint8Array) => {
      const server = await scriptServer({
        headers: { 'content-type': 'text/event-stream' },
        steps: [{ write: bytes }],
      });
      servers.push(server);
      return server;
    };
    after(async () => {
      await Promise.all(servers.map((server) => server.close()));
      servers = [];
    });

    it('/v1/responses says "completed" but the output count reached --max-tokens 16: TRUNCATED, exit 4', async () => {
      const server = await served(readFileSync(real('p01-responses-stream.sse')));
      const { code, io } = await chat(`${server.url}/v1/responses`, ['--max-tokens', '16']);
      assert.equal(JSON.parse(server.requests.at(-1)!.body).max_output_tokens, 16);
      assert.equal(code, CHAT_EXIT.truncated);
      assert.match(io.err, /TRUNCATED: .*the server said "completed", but the output count reached the cap/);
      assert.doesNotMatch(io.err, /finished/);
    });

    it('the same answer under a cap it did not reach (--max-tokens 32): finished, exit 0', async () => {
      const server = await served(readFileSync(real('p01-responses-stream.sse')));
      const { code, io } = await chat(`${server.url}/v1/responses`, ['--max-tokens', '32']);
      assert.equal(code, CHAT_EXIT.finished);
      assert.match(io.err, /\[done\] finished/);
    });

    it('/v1/messages stop_reason max_tokens (a01): TRUNCATED, exit 4', async () => {
      const server = await served(readFileSync(real('a01-anthropic-messages-stream.sse')));
      const { code, io } = await chat(`${server.url}/v1/messages`, ['--max-tokens', '16']);
      assert.equal(code, CHAT_EXIT.truncated);
      assert.match(io.err, /finish "max_tokens"/);
    });

    for (const [path, capture] of [
      ['/v1/messages', 'a01-anthropic-messages-stream.sse'],
      ['/v1/responses', 'p01-responses-stream.sse'],
    ] as const) {
      it(`${path} ending before its terminal event: INCOMPLETE (connection lost), the partial text shown, exit 3`, async () => {
        const all = events(real(capture));
        // Everything but the last event: a Messages stream keeps its message_delta (stop_reason) and
        // still lacks message_stop; a Responses stream lacks response.completed.
        // The body ends cleanly: a reset right after the write could drop the bytes before they are read.
        const server = await served(all.slice(0, -1).join(''));
        const { code, io } = await chat(`${server.url}${path}`, ['--max-tokens', '16']);
        assert.equal(code, CHAT_EXIT.incomplete);
        assert.match(io.err, /INCOMPLETE \(connection lost\)/);
        assert.match(io.err, /The answer above is partial/);
        assert.match(io.out, /Effectéb Ludwig/);
      });
    }
  });
});
