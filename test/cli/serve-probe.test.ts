import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { describe, it } from 'node:test';
import { probeUpstream, unknownServerProblem } from '../../src/cli/probe-upstream.ts';
import { fixturePath } from '../helpers/paths.ts';
import { type RecordedRequest, type ScriptedResponse, scriptServer } from '../helpers/script-server.ts';
import { cli, startServe } from './cli-helpers.ts';

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const json = (status: number, body: unknown): ScriptedResponse => ({
  status,
  headers: { 'content-type': 'application/json; charset=utf-8' },
  steps: [{ write: JSON.stringify(body) }],
});

/** `serve --upstream URL` that is expected to refuse to start: its exit status and stderr. */
async function serveFails(upstream: string): Promise<{ code: number; err: string }> {
  const { code, io } = await cli(['serve', '--port', '0', '--upstream', upstream]);
  return { code, err: io.err };
}

// Say what happened, then what to do — never only "could not tell … pass --upstream-dialect".
describe('serve --upstream: why a server could not be probed', () => {
  it('nothing listening: exit 1, "connection refused", and to start the server or check the port', async () => {
    const { code, err } = await serveFails(`http://127.0.0.1:${await closedPort()}`);
    assert.equal(code, 1, err);
    assert.match(
      err,
      /cannot reach http:\/\/127\.0\.0\.1:\d+: connection refused; nothing listens on that port/,
    );
    assert.doesNotMatch(err, /could not tell what server|--help/);
  });

  it('https:// at a plain HTTP server: exit 1, a TLS failure and "use http://"', async () => {
    const server = await scriptServer(json(200, {}));
    try {
      const { code, err } = await serveFails(server.url.replace('http:', 'https:'));
      assert.equal(code, 1, err);
      assert.match(err, /TLS failed: the server does not speak TLS there; use http:\/\//);
      assert.equal(server.requests.length, 0);
    } finally {
      await server.close();
    }
  });

  it('401 on the probes: names the status and --upstream-header', async () => {
    const server = await scriptServer(json(401, { error: { message: 'Invalid API key' } }));
    try {
      const { code, err } = await serveFails(server.url);
      assert.equal(code, 2, err);
      assert.match(err, /refused the probes \(\/api\/tags 401, \/v1\/models 401, \/props 401, \/info 401\)/);
      assert.match(err, /--upstream-header 'Authorization: Bearer KEY'/);
    } finally {
      await server.close();
    }
  });

  it('a 403 on one probe among 404s still points at credentials', async () => {
    const server = await scriptServer((request) =>
      request.path === '/v1/models' ? json(403, { detail: 'Forbidden' }) : json(404, { detail: 'Not Found' }),
    );
    try {
      const { err } = await serveFails(server.url);
      assert.match(err, /refused the probes \(\/v1\/models 403\), so it needs credentials/);
    } finally {
      await server.close();
    }
  });

  it('an HTML page: says so, and to check the port or pass --upstream-dialect', async () => {
    const server = await scriptServer({
      headers: { 'content-type': 'text/html; charset=utf-8' },
      steps: [{ write: '<!doctype html><title>Welcome to nginx!</title>' }],
    });
    try {
      const { code, err } = await serveFails(server.url);
      assert.equal(code, 2, err);
      assert.match(err, /answered with an HTML page \(\/api\/tags 200, \/v1\/models 200/);
      assert.match(err, /check the port[^\n]*pass --upstream-dialect/);
    } finally {
      await server.close();
    }
  });

  it('404 on every probe: lists the probes, then --upstream-dialect', async () => {
    const server = await scriptServer(json(404, { error: 'not found' }));
    try {
      const { code, err } = await serveFails(server.url);
      assert.equal(code, 2, err);
      assert.match(err, /every probe got 404 \(\/api\/tags, \/v1\/models, \/props, \/info\)/);
      assert.match(err, /check the URL, or pass --upstream-dialect \(openai-chat/);
    } finally {
      await server.close();
    }
  });

  it('a server that never answers: one probe only, "no answer in time"', async () => {
    // Accepts connections and never answers (no timer of its own to outlive the test).
    const sockets: Socket[] = [];
    const silent = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(silent.address() as { port: number }).port}`;
    const server = {
      url,
      close: () => {
        for (const socket of sockets) socket.destroy();
        return new Promise<void>((resolve) => silent.close(() => resolve()));
      },
    };
    try {
      const probe = await probeUpstream(server.url, (request) => fetch(request), {}, { timeoutMs: 200 });
      assert.equal(probe.server, 'unknown');
      assert.equal(probe.unreachable, 'no answer in time');
      // The connection is the problem: the other probes are not tried (each would wait as long).
      assert.deepEqual(
        probe.answers.map((answer) => answer.path),
        ['/api/tags'],
      );
      const problem = unknownServerProblem(server.url, probe, 'pass --upstream-dialect');
      assert.equal(problem.connection, true);
      assert.match(problem.message, /no answer in time; check the address and any firewall/);
    } finally {
      await server.close();
    }
  });
});

const CAPTURE = 'real-captures/llamacpp-b10108/a03-messages-stream-stop-sequence';

/**
 * llama-server b10108 as its probes see it (answers copied from the real server): no /api/tags, its
 * /props and /v1/models, the two token-count routes, and a Messages stream from a real capture.
 */
function llamaServer(newRoutes: boolean): (request: RecordedRequest) => ScriptedResponse {
  const notFound = json(404, { error: { message: 'File Not Found', type: 'not_found_error', code: 404 } });
  return (request) => {
    switch (request.path) {
      case '/props':
        return json(200, {
          default_generation_settings: { n_ctx: 1024 },
          total_slots: 1,
          build_info: 'b10108',
        });
      case '/v1/models':
        return json(200, {
          object: 'list',
          data: [{ id: 'tiny.gguf', object: 'model', owned_by: 'llamacpp' }],
        });
      case '/v1/messages/count_tokens':
        return newRoutes ? json(200, { input_tokens: 11 }) : notFound;
      case '/v1/responses/input_tokens':
        return newRoutes ? json(200, { input_tokens: 11, object: 'response.input_tokens' }) : notFound;
      case '/v1/messages':
        return { steps: [{ write: readFileSync(fixturePath(`${CAPTURE}.sse`)) }] };
      default:
        return notFound;
    }
  };
}

// A llama-server's Messages and Responses routes are found and used as they are.
describe('serve --upstream at a llama-server: Messages and Responses probed', () => {
  it('finds /v1/messages and /v1/responses and relays a Messages client same-dialect', async () => {
    const upstream = await scriptServer(llamaServer(true));
    const run = startServe(['--json', '--upstream', upstream.url]);
    try {
      const started = (await run.started) as { url: string; upstream: string };
      assert.match(
        started.upstream,
        /\(openai-chat, llamacpp, openai-completions, anthropic-messages, openai-responses\)$/,
      );
      const probes = upstream.requests.filter((request) => request.path.includes('tokens'));
      assert.deepEqual(
        probes.map((request) => [request.method, request.path, JSON.parse(request.body).model]),
        [
          ['POST', '/v1/messages/count_tokens', 'tiny.gguf'],
          ['POST', '/v1/responses/input_tokens', 'tiny.gguf'],
        ],
      );
      const response = await fetch(`${started.url}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: readFileSync(fixturePath(`${CAPTURE}.req.json`), 'utf8'),
      });
      assert.equal(response.status, 200);
      const body = await response.text();
      assert.equal(upstream.requests.at(-1)?.path, '/v1/messages');
      // What a translation through chat loses: the matched stop sequence and the prompt's token count.
      assert.match(body, /"stop_sequence":"Ludwig"/);
      assert.match(body, /"usage":\{"input_tokens":11,/);
      assert.match(body, /event: message_stop/);
    } finally {
      await run.stop();
      await upstream.close();
    }
  });

  it('an older llama-server (404 on both) keeps the three dialects it has', async () => {
    const upstream = await scriptServer(llamaServer(false));
    const run = startServe(['--json', '--upstream', upstream.url]);
    try {
      const started = (await run.started) as { upstream: string };
      assert.match(started.upstream, /\(openai-chat, llamacpp, openai-completions\)$/);
    } finally {
      await run.stop();
      await upstream.close();
    }
  });
});
