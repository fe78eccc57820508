import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { describe, it } from 'node:test';
import { HttpError } from '../../src/client/client-errors.ts';
import { complete } from '../../src/client/token-stream.ts';
import { DIALECT_IDS, type DialectId } from '../../src/dialects/dialect.ts';
import { getDialect } from '../../src/dialects/registry.ts';
import type { ChatRequest } from '../../src/events/chat-request.ts';
import { serve } from '../../src/node/serve.ts';
import { createGateway, type RequestLog } from '../../src/server/create-gateway.ts';
import { clientStatusFor, withoutAddresses } from '../../src/server/http/gateway-errors.ts';
import type { Upstream } from '../../src/server/upstream/upstream.ts';
import { createSim } from '../../src/sim/create-sim.ts';

const CHAT: ChatRequest = { model: 'm', messages: [{ role: 'user', content: 'hello' }], maxTokens: 8 };

/** An upstream that answers every request with this status and body (an OpenAI-shaped error by default). */
function failingUpstream(status: number, body?: string, headers: Record<string, string> = {}): Upstream {
  const text =
    body ??
    JSON.stringify({ error: { message: `upstream says ${status}`, type: 'x', param: null, code: status } });
  return {
    name: '10.9.8.7:8000',
    url: 'http://10.9.8.7:8000',
    dialects: ['openai-chat'],
    models: ['m'],
    fetch: () => new Response(text, { status, headers: { 'content-type': 'application/json', ...headers } }),
  };
}

/** The client dialect's streaming request, as a Request to the gateway. */
function dialectRequest(dialect: DialectId, options: { stream?: boolean; query?: string } = {}): Request {
  const d = getDialect(dialect);
  const body = d.toRequestBody(CHAT);
  if (options.stream === false) body.stream = false;
  return new Request(`http://gateway.test${d.paths[0]}${options.query ?? ''}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-request-id': 'req-42' },
    body: JSON.stringify(body),
  });
}

/** The JSON's shape: keys and value types, recursively (values themselves differ). */
function shape(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(shape);
  if (typeof value === 'object' && value !== null)
    return Object.fromEntries(
      Object.entries(value)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, v]) => [k, shape(v)]),
    );
  return value === null ? 'null' : typeof value;
}

function assertDialectShape(dialect: DialectId, status: number, body: string): void {
  const expected = getDialect(dialect).errorResponse({ status, message: 'm' }).body;
  assert.deepEqual(shape(JSON.parse(body)), shape(JSON.parse(expected)), `${dialect} ${status}: ${body}`);
}

describe("upstream errors keep their status, in the client dialect's error shape", () => {
  for (const status of [400, 404, 413, 422, 429, 500, 501, 502, 503, 504]) {
    it(`upstream HTTP ${status} -> ${status} on every route, streamed or not`, async () => {
      const gateway = createGateway({ upstreams: [failingUpstream(status)] });
      try {
        for (const dialect of DIALECT_IDS) {
          for (const stream of [true, false]) {
            const response = await gateway.fetch(dialectRequest(dialect, { stream }));
            const body = await response.text();
            assert.equal(response.status, status, `${dialect} stream=${stream}: ${body}`);
            assertDialectShape(dialect, status, body);
            assert.match(body, new RegExp(`upstream says ${status}`), 'the upstream message is kept');
            // A same-dialect non-stream answer is the upstream's own body, as it came (fidelity); the
            // request id is then in its header only.
            if (!(dialect === 'openai-chat' && !stream))
              assert.match(body, /req-42/, 'the message names the request id');
            assert.equal(response.headers.get('x-request-id'), 'req-42');
          }
        }
      } finally {
        await gateway.close();
      }
    });
  }

  it("an upstream 401 or 403 is the gateway's configuration: 502, saying so", async () => {
    for (const status of [401, 403]) {
      const gateway = createGateway({ upstreams: [failingUpstream(status)] });
      try {
        for (const dialect of DIALECT_IDS) {
          const response = await gateway.fetch(dialectRequest(dialect));
          const body = await response.text();
          assert.equal(response.status, 502, `${dialect}: ${body}`);
          assertDialectShape(dialect, 502, body);
          assert.match(body, new RegExp(`refused the gateway's credentials \\(HTTP ${status}`));
        }
      } finally {
        await gateway.close();
      }
    }
    assert.equal(clientStatusFor(407), 502);
    assert.equal(clientStatusFor(302), 502);
  });

  it('passes retry-after on, and the status in the plain-text output', async () => {
    const gateway = createGateway({ upstreams: [failingUpstream(503, undefined, { 'retry-after': '7' })] });
    try {
      const response = await gateway.fetch(dialectRequest('openai-chat'));
      assert.equal(response.status, 503);
      assert.equal(response.headers.get('retry-after'), '7');
      const text = await gateway.fetch(dialectRequest('openai-chat', { query: '?format=text' }));
      assert.equal(text.status, 503);
      assert.match(
        await text.text(),
        /^\[tokenwire: error: the upstream answered HTTP 503: "upstream says 503"/,
      );
    } finally {
      await gateway.close();
    }
  });

  it('through HTTP, the client sees the status the simulator answered', async () => {
    const sim = createSim({ timing: { tokensPerSecond: 2000, loadMs: 0 } });
    const gateway = createGateway({
      upstreams: [
        { name: 'sim', url: 'http://sim.tokenwire.internal', dialects: DIALECT_IDS, fetch: sim.fetch },
      ],
    });
    const served = await serve(gateway.fetch);
    try {
      for (const status of [500, 503, 504]) {
        await assert.rejects(
          complete({
            url: `${served.url}/v1/chat/completions`,
            request: { model: `sim@status=${status}`, prompt: 'x', maxTokens: 4 },
            dialect: 'openai-chat',
          }),
          (error: unknown) => error instanceof HttpError && error.status === status,
        );
      }
    } finally {
      await gateway.close();
      await served.close();
    }
  });
});

describe('isRetryable through the gateway', () => {
  // llama-server b4747 (real-captures/llamacpp-b4747/more/j02-chat-tools-stream-jinja.body): a client
  // mistake answered with 500.
  const CANNOT = '{"error":{"code":500,"message":"Cannot use tools with stream","type":"server_error"}}';

  it('a 500 that says the request is invalid stays 500 and is not retryable; a plain 500 is', async () => {
    for (const [body, retryable] of [
      [CANNOT, false],
      ['{"error":{"code":500,"message":"failed to allocate the KV cache","type":"server_error"}}', true],
    ] as const) {
      const gateway = createGateway({ upstreams: [failingUpstream(500, body)] });
      const served = await serve(gateway.fetch);
      try {
        for (const dialect of DIALECT_IDS) {
          await assert.rejects(
            complete({ url: `${served.url}${getDialect(dialect).paths[0]}`, request: CHAT, dialect }),
            (error: unknown) => {
              assert.ok(error instanceof HttpError, String(error));
              assert.equal(error.status, 500, dialect);
              assert.equal(error.isRetryable, retryable, `${dialect}: ${error.body}`);
              return true;
            },
          );
        }
      } finally {
        await gateway.close();
        await served.close();
      }
    }
  });
});

describe('client-facing errors never name the upstream', () => {
  it('a refused connection: "connection refused" and the request id; the log line has the address', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as { port: number }).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const records: RequestLog[] = [];
    const gateway = createGateway({
      upstreams: [
        {
          name: `127.0.0.1:${port}`,
          url: `http://127.0.0.1:${port}`,
          dialects: ['openai-chat'],
          models: ['m'],
        },
      ],
      onLog: (record) => records.push(record),
    });
    try {
      for (const dialect of DIALECT_IDS) {
        for (const query of ['', '?format=text']) {
          const response = await gateway.fetch(dialectRequest(dialect, { query }));
          const body = await response.text();
          assert.equal(response.status, 502, `${dialect}: ${body}`);
          assert.match(body, /the upstream failed: connection refused \(request id req-42\)/, body);
          assert.ok(!body.includes('127.0.0.1'), body);
          assert.ok(!body.includes(String(port)), body);
          assert.ok(!body.includes('/v1/chat/completions'), body);
        }
      }
      assert.ok(records.length > 0);
      for (const record of records) assert.match(record.error ?? '', new RegExp(`127\\.0\\.0\\.1:${port}`));
    } finally {
      await gateway.close();
    }
  });

  it("an HTTP error from the simulator: no internal URL, host or path in the client's answer", async () => {
    const sim = createSim({ timing: { tokensPerSecond: 2000, loadMs: 0 } });
    const records: RequestLog[] = [];
    const gateway = createGateway({
      upstreams: [
        {
          name: 'sim.tokenwire.internal',
          url: 'http://sim.tokenwire.internal',
          dialects: DIALECT_IDS,
          fetch: sim.fetch,
        },
      ],
      onLog: (record) => records.push(record),
    });
    try {
      for (const dialect of DIALECT_IDS) {
        const request = dialectRequest(dialect);
        request.headers.set('x-tokenwire-fault', 'status=503');
        const response = await gateway.fetch(request);
        const body = await response.text();
        assert.equal(response.status, 503, body);
        assert.ok(!/sim\.tokenwire\.internal|http:\/\/|\/v1\/|\/api\//.test(body), body);
        assert.match(body, /simulated HTTP 503/, "the upstream's own message is kept");
      }
      assert.match(records[0]?.error ?? '', /http:\/\/sim\.tokenwire\.internal\//, 'the log keeps the URL');
    } finally {
      await gateway.close();
    }
  });

  it('a stream that fails mid-way: the error event names neither the upstream nor its address', async () => {
    const sim = createSim({ timing: { tokensPerSecond: 2000, loadMs: 0 } });
    const gateway = createGateway({
      upstreams: [
        { name: '10.1.2.3:8000', url: 'http://10.1.2.3:8000', dialects: DIALECT_IDS, fetch: sim.fetch },
      ],
      keepaliveMs: 0,
    });
    try {
      for (const dialect of DIALECT_IDS) {
        for (const fault of ['error-after=2', 'cut-after=2']) {
          const request = dialectRequest(dialect);
          request.headers.set('x-tokenwire-fault', fault);
          const response = await gateway.fetch(request);
          assert.equal(response.status, 200);
          const body = await response.text();
          // A broken connection is told in the gateway's words; an upstream's error event is its own
          // (copied as it is to a client of the same dialect), and names no address either.
          const said = fault.startsWith('cut')
            ? /the upstream failed: .*request id req-42/
            : /the upstream failed: .*request id req-42|simulated failure after 2 tokens/;
          assert.match(body, said, `${dialect} ${fault}: ${body}`);
          assert.ok(!/10\.1\.2\.3|:8000|upstream 10/.test(body), `${dialect} ${fault}: ${body}`);
        }
      }
    } finally {
      await gateway.close();
    }
  });

  it('withoutAddresses takes URLs and host:port out of any message', () => {
    assert.equal(
      withoutAddresses(
        'POST http://127.0.0.1:8095/v1/chat/completions failed: connect ECONNREFUSED 127.0.0.1:8095',
      ),
      'POST <upstream> failed: connect ECONNREFUSED <upstream>',
    );
    assert.equal(
      withoutAddresses('getaddrinfo ENOTFOUND vllm.internal:8000'),
      'getaddrinfo ENOTFOUND <upstream>',
    );
    assert.equal(withoutAddresses('connect [::1]:11434 refused'), 'connect <upstream> refused');
    assert.equal(withoutAddresses('prompt is too long: 5000 > 4096'), 'prompt is too long: 5000 > 4096');
  });
});
