import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { DIALECT_IDS } from '../../src/dialects/dialect.ts';
import { type ServedHandler, type ServeOptions, serve } from '../../src/node/serve.ts';
import type { GatewayOptions } from '../../src/server/create-gateway.ts';
import {
  createGuardedGateway,
  type GuardOptions,
  guardGateway,
} from '../../src/server/guard/guard-gateway.ts';
import { jsonNestingDepth, MAX_JSON_NESTING } from '../../src/server/http/read-body.ts';
import type { RequestLog } from '../../src/server/observability/request-log.ts';
import { createSim } from '../../src/sim/index.ts';

// Over real sockets with raw HTTP: what an attacker sends.

const KEY = 'hardening-key-123456';
const LIMIT = 1000;
const closers: (() => Promise<void>)[] = [];
after(() => Promise.all(closers.map((close) => close())));

interface Started {
  served: ServedHandler;
  port: number;
  logs: RequestLog[];
}

async function start(
  guard: Partial<GatewayOptions> & GuardOptions = {},
  serveOptions: ServeOptions = {},
): Promise<Started> {
  const sim = createSim({ timing: { tokensPerSecond: 5000, loadMs: 0 } });
  const logs: RequestLog[] = [];
  const { gateway, fetch } = createGuardedGateway({
    upstreams: [
      { name: 'sim', url: 'http://sim.internal', dialects: DIALECT_IDS, fetch: sim.fetch, models: ['sim'] },
    ],
    maxBodyBytes: LIMIT,
    onLog: (record) => logs.push(record),
    ...guard,
  });
  const served = await serve(fetch, serveOptions);
  closers.push(async () => {
    await gateway.close();
    await served.close();
  });
  return { served, port: served.port, logs };
}

/** A raw connection: what the server sent, whether it closed, and what the client has written. */
class Raw {
  readonly socket: Socket;
  text = '';
  sentBytes = 0;
  closed = false;
  readonly #waiters: (() => void)[] = [];

  constructor(port: number) {
    this.socket = connect(port, '127.0.0.1');
    this.socket.setEncoding('latin1');
    this.socket.on('data', (chunk: string) => {
      this.text += chunk;
      this.#wake();
    });
    this.socket.on('error', () => {});
    this.socket.on('close', () => {
      this.closed = true;
      this.#wake();
    });
    closers.push(async () => {
      this.socket.destroy();
    });
  }

  write(text: string): void {
    this.sentBytes += Buffer.byteLength(text);
    this.socket.write(text);
  }

  #wake(): void {
    for (const waiter of this.#waiters.splice(0)) waiter();
  }

  /** Resolves once `check` holds (checked on every read and on close). */
  until(check: (raw: Raw) => boolean): Promise<void> {
    return new Promise((resolve) => {
      const test = () => {
        if (check(this)) resolve();
        else this.#waiters.push(test);
      };
      test();
    });
  }

  /** The response head once it is here (the status line and headers). */
  async head(): Promise<string> {
    await this.until((raw) => raw.text.includes('\r\n\r\n') || raw.closed);
    return this.text.slice(0, this.text.indexOf('\r\n\r\n'));
  }

  /** The whole exchange once the server closes the connection. */
  async all(): Promise<string> {
    await this.until((raw) => raw.closed);
    return this.text;
  }
}

function post(path: string, headers: string[], port: number): string {
  return [
    `POST ${path} HTTP/1.1`,
    `Host: 127.0.0.1:${port}`,
    'Content-Type: application/json',
    ...headers,
    '',
    '',
  ].join('\r\n');
}

function bodyOf(exchange: string): string {
  return exchange.slice(exchange.indexOf('\r\n\r\n') + 4);
}

const chat = JSON.stringify({
  model: 'sim',
  stream: true,
  messages: [{ role: 'user', content: 'hi' }],
  max_tokens: 3,
});

describe('serve hardening: the body is not read before the key and the limit are decided', {
  timeout: 20_000,
}, () => {
  let s: Started;
  before(async () => {
    s = await start({ apiKeys: [KEY] }, { bodyTimeoutMs: 1000 });
  });

  it('answers 401 from the headers alone: the client declared 8 MiB and sent no body byte', async () => {
    const raw = new Raw(s.port);
    raw.write(post('/v1/chat/completions', [`Content-Length: ${8 * 1024 * 1024}`], s.port));
    const sentWithHeaders = raw.sentBytes;
    const head = await raw.head();
    assert.match(head, /^HTTP\/1\.1 401 Unauthorized\r\n/);
    assert.equal(raw.sentBytes, sentWithHeaders, 'no body byte was sent before the answer');
    assert.match(head, /\r\nconnection: close/i, 'the unread body is not waited for');
    await raw.until((r) => r.closed);
    assert.match(bodyOf(raw.text), /missing or invalid API key/);
  });

  it('answers 413 at once when an authorised client declares more than --max-body-bytes', async () => {
    const raw = new Raw(s.port);
    raw.write(
      post('/v1/chat/completions', [`Authorization: Bearer ${KEY}`, 'Content-Length: 5000000'], s.port),
    );
    const sentWithHeaders = raw.sentBytes;
    const exchange = await raw.all();
    assert.match(exchange, /^HTTP\/1\.1 413 Payload Too Large\r\n/);
    assert.equal(raw.sentBytes, sentWithHeaders);
    assert.match(bodyOf(exchange), new RegExp(`limit of ${LIMIT} bytes`));
  });

  it('sends 100 Continue only when the body is wanted: never to a request refused from its headers', async () => {
    const refused = new Raw(s.port);
    refused.write(post('/v1/chat/completions', ['Expect: 100-continue', 'Content-Length: 8388608'], s.port));
    assert.match(await refused.head(), /^HTTP\/1\.1 401 /, 'no 100 Continue before the 401');
    const wanted = new Raw(s.port);
    wanted.write(
      post(
        '/v1/chat/completions',
        ['Expect: 100-continue', `X-API-Key: ${KEY}`, `Content-Length: ${chat.length}`, 'Connection: close'],
        s.port,
      ),
    );
    await wanted.until((r) => r.text.includes('\r\n\r\n'));
    assert.match(wanted.text, /^HTTP\/1\.1 100 Continue\r\n\r\n$/);
    wanted.write(chat);
    const exchange = await wanted.all();
    assert.match(exchange, /\r\n\r\nHTTP\/1\.1 200 OK\r\n/);
    assert.match(exchange, /data: \[DONE\]/);
  });

  it('cuts a chunked body with 413 once it outgrows the limit, and closes the connection', async () => {
    const raw = new Raw(s.port);
    raw.write(post('/v1/chat/completions', [`X-API-Key: ${KEY}`, 'Transfer-Encoding: chunked'], s.port));
    const chunk = `{"messages":[{"role":"user","content":"${'x'.repeat(700)}`;
    raw.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`);
    raw.write(`${(700).toString(16)}\r\n${'y'.repeat(700)}\r\n`);
    // No terminating chunk: the server must not wait for the rest.
    const exchange = await raw.all();
    assert.match(exchange, /^HTTP\/1\.1 413 Payload Too Large\r\n/);
    assert.match(bodyOf(exchange), new RegExp(`limit of ${LIMIT} bytes`));
  });

  it('answers 408 in the dialect shape when the body does not arrive within --body-timeout-ms', async () => {
    const raw = new Raw(s.port);
    raw.write(post('/api/chat', [`X-API-Key: ${KEY}`, 'Content-Length: 200'], s.port));
    raw.write('{"model":"sim",');
    const exchange = await raw.all();
    assert.match(exchange, /^HTTP\/1\.1 408 Request Timeout\r\n/);
    const body = bodyOf(exchange);
    // Ollama's error shape: {"error": "..."}.
    assert.match(body, /"error":"the request body did not arrive within 1000 ms"/);
  });

  it('still serves an authorised request whose body arrives in several reads', async () => {
    const raw = new Raw(s.port);
    const body = chat;
    raw.write(
      post(
        '/v1/chat/completions',
        [`X-API-Key: ${KEY}`, `Content-Length: ${body.length}`, 'Connection: close'],
        s.port,
      ),
    );
    raw.write(body.slice(0, 10));
    setTimeout(() => raw.write(body.slice(10)), 30);
    const exchange = await raw.all();
    assert.match(exchange, /^HTTP\/1\.1 200 OK\r\n/);
    assert.match(exchange, /data: \[DONE\]/);
  });
});

describe("serve hardening: a guard in front of the user's own handler", { timeout: 20_000 }, () => {
  // A handler not marked TAKES_INCOMING_REQUEST wants a standard Request: the guard in front of it
  // still decides from the headers before any body byte is asked for, then hands the body on as a stream.
  let s: { port: number };
  const seen: { isRequest: boolean; body: string }[] = [];
  before(async () => {
    const handler = guardGateway(
      async (request: Request) => {
        try {
          seen.push({ isRequest: request instanceof Request, body: await request.text() });
        } catch (error) {
          seen.push({ isRequest: true, body: `failed: ${(error as Error).message}` });
          return new Response('body failed', { status: 400 });
        }
        return new Response('handled');
      },
      { apiKeys: [KEY] },
    );
    const served = await serve(handler, { bodyTimeoutMs: 1000 });
    closers.push(() => served.close());
    s = { port: served.port };
  });

  it('answers 401 from the headers alone, sending no 100 Continue and reading no body', async () => {
    const raw = new Raw(s.port);
    raw.write(post('/v1/chat/completions', ['Expect: 100-continue', 'Content-Length: 8388608'], s.port));
    const sentWithHeaders = raw.sentBytes;
    const head = await raw.head();
    assert.match(head, /^HTTP\/1\.1 401 /, 'no 100 Continue before the 401');
    assert.equal(raw.sentBytes, sentWithHeaders);
    assert.equal(seen.length, 0);
  });

  it('gives an admitted request to the handler as a standard Request with its body', async () => {
    const raw = new Raw(s.port);
    raw.write(
      post(
        '/v1/chat/completions',
        ['Expect: 100-continue', `X-API-Key: ${KEY}`, `Content-Length: ${chat.length}`, 'Connection: close'],
        s.port,
      ),
    );
    await raw.until((r) => r.text.includes('\r\n\r\n'));
    assert.match(raw.text, /^HTTP\/1\.1 100 Continue\r\n\r\n$/);
    raw.write(chat);
    const exchange = await raw.all();
    assert.match(exchange, /\r\n\r\nHTTP\/1\.1 200 OK\r\n/);
    assert.match(bodyOf(bodyOf(exchange)), /\bhandled\r\n/);
    assert.deepEqual(seen, [{ isRequest: true, body: chat }]);
  });

  it("errors the handler's body read when the body does not arrive within the body timeout", async () => {
    const raw = new Raw(s.port);
    raw.write(post('/v1/chat/completions', [`X-API-Key: ${KEY}`, 'Content-Length: 200'], s.port));
    raw.write('{"model":"sim",');
    const exchange = await raw.all();
    assert.match(exchange, /^HTTP\/1\.1 400 /);
    assert.deepEqual(seen.at(-1), {
      isRequest: true,
      body: 'failed: the request body did not arrive within 1000 ms',
    });
  });
});

describe('serve hardening: --max-connections', { timeout: 20_000 }, () => {
  it('refuses connections over the cap, and takes new ones once others close', async () => {
    const s = await start({}, { maxConnections: 2 });
    const healthz = `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${s.port}\r\n\r\n`;
    // Both hold a request (its body is asked for, not sent): the cap closes only idle connections
    // (test/node/serve-connections.test.ts).
    const held = post('/v1/chat/completions', ['Expect: 100-continue', 'Content-Length: 100'], s.port);
    const first = new Raw(s.port);
    const second = new Raw(s.port);
    first.write(held);
    second.write(held);
    await first.until((r) => r.text.includes('100 Continue'));
    await second.until((r) => r.text.includes('100 Continue'));
    const third = new Raw(s.port);
    third.write(healthz);
    await third.until((r) => r.closed);
    assert.equal(third.text, '', 'the connection over the cap got no answer');
    first.socket.destroy();
    await new Promise<void>((resolve) => {
      const check = () => (s.served.connections() < 2 ? resolve() : setImmediate(check));
      check();
    });
    const fourth = new Raw(s.port);
    fourth.write(healthz);
    await fourth.until((r) => r.text.includes('"status":"ok"') || r.closed);
    assert.match(fourth.text, /^HTTP\/1\.1 200 OK\r\n/);
  });
});

describe('serve hardening: allowed hosts (DNS rebinding)', { timeout: 20_000 }, () => {
  let s: Started;
  before(async () => {
    s = await start({ allowedHosts: ['localhost', '127.0.0.1', '[::1]'] });
  });

  async function get(path: string, host: string, extra: string[] = []): Promise<string> {
    const raw = new Raw(s.port);
    raw.write([`GET ${path} HTTP/1.1`, `Host: ${host}`, ...extra, 'Connection: close', '', ''].join('\r\n'));
    return raw.all();
  }

  it('refuses any other Host with 421 before routing, /metrics and /healthz included', async () => {
    for (const path of ['/metrics', '/healthz', '/v1/models', '/']) {
      const exchange = await get(path, 'rebind.example:18080', ['Origin: http://rebind.example:18080']);
      assert.match(exchange, /^HTTP\/1\.1 421 Misdirected Request\r\n/, path);
      assert.match(bodyOf(exchange), /\\"rebind\.example:18080\\" is not a host this gateway answers to/);
      assert.doesNotMatch(exchange, /tokenwire_/);
    }
    const raw = new Raw(s.port);
    raw.write(
      [
        'POST /v1/chat/completions HTTP/1.1',
        'Host: rebind.example:18080',
        'Origin: http://rebind.example:18080',
        'Content-Type: application/json',
        `Content-Length: ${chat.length}`,
        'Connection: close',
        '',
        chat,
      ].join('\r\n'),
    );
    const exchange = await raw.all();
    assert.match(exchange, /^HTTP\/1\.1 421 /);
    assert.match(bodyOf(exchange), /"type":"invalid_request_error"/);
  });

  it('serves the allowed names on any port', async () => {
    for (const host of ['localhost:9', `127.0.0.1:${s.port}`, '[::1]:1234', 'LOCALHOST']) {
      assert.match(await get('/healthz', host), /^HTTP\/1\.1 200 OK\r\n/, host);
    }
  });

  it('checks the authority of an absolute-form target, not the Host header', async () => {
    const exchange = await get('http://rebind.example/healthz', '127.0.0.1');
    assert.match(exchange, /^HTTP\/1\.1 421 /);
  });

  it('lets any Host through when no list is given (the library default)', async () => {
    const open = await start();
    const raw = new Raw(open.port);
    raw.write('GET /healthz HTTP/1.1\r\nHost: anything.example\r\nConnection: close\r\n\r\n');
    assert.match(await raw.all(), /^HTTP\/1\.1 200 OK\r\n/);
  });
});

describe('serve hardening: the route is the request target alone', { timeout: 20_000 }, () => {
  let s: Started;
  before(async () => {
    s = await start();
  });

  async function exchange(text: string): Promise<string> {
    const raw = new Raw(s.port);
    raw.write(text);
    return raw.all();
  }

  it('refuses a Host that is not a host (it cannot add a path): 400, never another route', async () => {
    const metrics = await exchange(
      'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1/metrics?\r\nConnection: close\r\n\r\n',
    );
    assert.match(metrics, /^HTTP\/1\.1 400 Bad Request\r\n/);
    assert.doesNotMatch(metrics, /tokenwire_/);
    assert.match(bodyOf(metrics), /invalid Host header/);
    const completion = await exchange(
      `POST /nothing HTTP/1.1\r\nHost: x/v1/chat/completions#\r\nContent-Type: application/json\r\nContent-Length: ${chat.length}\r\nConnection: close\r\n\r\n${chat}`,
    );
    assert.match(completion, /^HTTP\/1\.1 400 /);
    assert.doesNotMatch(completion, /chat\.completion/);
  });

  it('parses an absolute-form target as such, and logs it like any request', async () => {
    const health = await exchange(
      `GET http://127.0.0.1:${s.port}/healthz HTTP/1.1\r\nHost: 127.0.0.1:${s.port}\r\nConnection: close\r\n\r\n`,
    );
    assert.match(health, /^HTTP\/1\.1 200 OK\r\n/);
    assert.match(bodyOf(health), /"status":"ok"/);
    const before = s.logs.length;
    const streamed = await exchange(
      `POST http://127.0.0.1:${s.port}/v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:${s.port}\r\nContent-Type: application/json\r\nContent-Length: ${chat.length}\r\nConnection: close\r\n\r\n${chat}`,
    );
    assert.match(streamed, /^HTTP\/1\.1 200 OK\r\n/);
    assert.match(streamed, /data: \[DONE\]/);
    await new Promise<void>((resolve) => {
      const check = () => (s.logs.length > before ? resolve() : setImmediate(check));
      check();
    });
    assert.equal(s.logs.at(-1)?.route, 'openai-chat');
  });

  it('answers OPTIONS * with 204 and Allow, not a 500', async () => {
    const answer = await exchange(
      `OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1:${s.port}\r\nConnection: close\r\n\r\n`,
    );
    assert.match(answer, /^HTTP\/1\.1 204 No Content\r\n/);
    assert.match(answer, /\r\nallow: GET, HEAD, POST, OPTIONS\r\n/i);
  });

  it('puts the reason phrase on the status line, direct streams included', async () => {
    const health = await exchange(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
    assert.match(health, /^HTTP\/1\.1 200 OK\r\n/);
    const missing = await exchange(
      `GET /v1/nothing HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`,
    );
    assert.match(missing, /^HTTP\/1\.1 404 Not Found\r\n/);
    const streamed = await exchange(
      `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${chat.length}\r\nConnection: close\r\n\r\n${chat}`,
    );
    assert.match(streamed, /^HTTP\/1\.1 200 OK\r\n/);
  });
});

describe('serve hardening: JSON nesting', { timeout: 20_000 }, () => {
  let s: Started;
  before(async () => {
    s = await start({ maxBodyBytes: 1 << 20 });
  });

  async function postJson(path: string, body: string): Promise<string> {
    const raw = new Raw(s.port);
    raw.write(
      `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
    return raw.all();
  }

  it('refuses a body nested deeper than the limit with 400 in the route dialect, before the upstream', async () => {
    const deep = `{"model":"sim","messages":[{"role":"user","content":"hi"}],"x":${'['.repeat(5000)}${']'.repeat(5000)}}`;
    const openai = await postJson('/v1/chat/completions', deep);
    assert.match(openai, /^HTTP\/1\.1 400 Bad Request\r\n/);
    assert.match(bodyOf(openai), new RegExp(`nests deeper than ${MAX_JSON_NESTING} levels`));
    assert.match(bodyOf(openai), /"type":"invalid_request_error"/);
    const ollama = await postJson('/api/chat', deep);
    assert.match(ollama, /^HTTP\/1\.1 400 /);
    assert.match(bodyOf(ollama), /\{"error":"[^"]*nests deeper than/);
    // Just inside the limit is not refused for its depth.
    const inside = `{"model":"sim","messages":[{"role":"user","content":"hi"}],"max_tokens":2,"x":${'['.repeat(MAX_JSON_NESTING - 1)}${']'.repeat(MAX_JSON_NESTING - 1)}}`;
    assert.doesNotMatch(bodyOf(await postJson('/v1/chat/completions', inside)), /nests deeper/);
  });

  it('counts brackets outside strings only, escapes included', () => {
    const bytes = (text: string) => new TextEncoder().encode(text);
    assert.equal(jsonNestingDepth(bytes('{"a":[1,{"b":[]}]}')), 4);
    assert.equal(jsonNestingDepth(bytes('{"a":"[[[[{{{"}')), 1);
    assert.equal(jsonNestingDepth(bytes('{"a":"\\"[[[\\\\","b":[[]]}')), 3);
    assert.equal(jsonNestingDepth(bytes('"just a string"')), 0);
    assert.equal(jsonNestingDepth(bytes(`${'['.repeat(100000)}`)), 100000);
  });
});
