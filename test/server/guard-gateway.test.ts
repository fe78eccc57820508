import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, describe, it } from 'node:test';
import fc from 'fast-check';
import { DIALECT_IDS } from '../../src/dialects/dialect.ts';
import { type ServedHandler, serve } from '../../src/node/serve.ts';
import type { GatewayOptions, RequestLog } from '../../src/server/create-gateway.ts';
import {
  createGuardedGateway,
  type GuardOptions,
  guardGateway,
} from '../../src/server/guard/guard-gateway.ts';
import { markTakesIncomingRequest } from '../../src/server/http/incoming-request.ts';
import {
  type DirectWriter,
  directBodyOf,
  directBodyOfResponse,
  directOnlyResponse,
  ResponseOutput,
} from '../../src/server/http/response-output.ts';
import { createSim } from '../../src/sim/create-sim.ts';
import type { SimOptions } from '../../src/sim/sim-options.ts';
import { type RecordedRequest, type ScriptedResponse, scriptServer } from '../helpers/script-server.ts';
import { readSse } from '../helpers/sse-read.ts';

const closers: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const close of closers.reverse()) await close();
});

interface Guarded {
  url: string;
  served: ServedHandler;
  logs: RequestLog[];
  inFlight(): number;
  activeStreams(): number;
}

/** A guarded gateway (what `tokenwire serve` runs) over HTTP, in front of the simulator or `upstreamUrl`. */
async function guarded(
  options: Partial<GatewayOptions> &
    GuardOptions & { sim?: SimOptions; upstreamUrl?: string; upstreamHeaders?: Record<string, string> } = {},
): Promise<Guarded> {
  const sim = createSim({ timing: { tokensPerSecond: 2000, loadMs: 0 }, ...options.sim });
  const logs: RequestLog[] = [];
  const { gateway, fetch } = createGuardedGateway({
    upstreams: [
      {
        name: 'up',
        url: options.upstreamUrl ?? 'http://sim.internal',
        dialects: options.upstreamUrl === undefined ? DIALECT_IDS : ['openai-chat'],
        fetch: options.upstreamUrl === undefined ? sim.fetch : undefined,
        headers: options.upstreamHeaders,
        models: ['sim'],
        anyModelName: options.sim?.models === undefined,
      },
    ],
    keepaliveMs: 0,
    onLog: (record) => logs.push(record),
    ...options,
  });
  const served = await serve(fetch);
  closers.push(async () => {
    await gateway.close();
    await served.close();
  });
  return {
    url: served.url,
    served,
    logs,
    inFlight: fetch.inFlight,
    activeStreams: () => gateway.activeStreams(),
  };
}

const chatBody = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    model: 'sim',
    stream: true,
    messages: [{ role: 'user', content: 'hi' }],
    max_tokens: 8,
    ...extra,
  });
const post = (url: string, body: string, headers: Record<string, string> = {}, signal?: AbortSignal) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
    ...(signal === undefined ? {} : { signal }),
  });

const ROUTES: [path: string, body: string, errorOf: (body: unknown) => string | undefined][] = [
  ['/v1/chat/completions', chatBody(), (b) => (b as { error?: { message?: string } }).error?.message],
  [
    '/v1/completions',
    JSON.stringify({ model: 'sim', prompt: 'x', stream: true }),
    (b) => (b as { error?: { message?: string } }).error?.message,
  ],
  [
    '/api/chat',
    JSON.stringify({ model: 'sim', messages: [{ role: 'user', content: 'x' }] }),
    (b) => (b as { error?: string }).error,
  ],
  ['/api/generate', JSON.stringify({ model: 'sim', prompt: 'x' }), (b) => (b as { error?: string }).error],
  [
    '/completion',
    JSON.stringify({ prompt: 'x', stream: true }),
    (b) => (b as { error?: { message?: string } }).error?.message,
  ],
  ['/generate_stream', JSON.stringify({ inputs: 'x' }), (b) => (b as { error?: string }).error],
];

async function waitFor(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(check(), what);
}

describe('guard: API keys', () => {
  it('asks for no key unless keys are configured', async () => {
    const g = await guarded();
    assert.equal((await post(`${g.url}/v1/chat/completions`, chatBody())).status, 200);
  });

  it('refuses a missing or wrong key with a 401 in each dialect error shape, and takes any configured key', async () => {
    const g = await guarded({ apiKeys: ['key-one-0123456789', 'key-two-abcdefghij'] });
    for (const [path, body, errorOf] of ROUTES) {
      for (const headers of [
        {},
        { authorization: 'Bearer key-one-012345678' },
        { authorization: 'Bearer key-one-01234567890' },
        { authorization: 'Basic key-one-0123456789' },
        { 'x-api-key': 'KEY-ONE-0123456789' },
      ]) {
        const response = await post(`${g.url}${path}`, body, headers);
        assert.equal(response.status, 401, `${path} ${JSON.stringify(headers)}`);
        assert.equal(response.headers.get('www-authenticate'), 'Bearer');
        assert.match(response.headers.get('content-type') ?? '', /application\/json/);
        assert.match(errorOf(await response.json()) ?? '', /API key/, path);
      }
      for (const headers of [
        { authorization: 'Bearer key-one-0123456789' },
        { 'x-api-key': 'key-two-abcdefghij' },
      ]) {
        const response = await post(`${g.url}${path}`, body, headers);
        assert.equal(response.status, 200, `${path} ${JSON.stringify(headers)}`);
        await response.arrayBuffer();
      }
    }
    // The API beside the generation routes needs the key too; probes and the page do not.
    assert.equal((await fetch(`${g.url}/v1/models`)).status, 401);
    assert.equal((await fetch(`${g.url}/metrics`)).status, 401);
    assert.equal((await fetch(`${g.url}/healthz`)).status, 200);
    const metrics = await (
      await fetch(`${g.url}/metrics`, { headers: { 'x-api-key': 'key-two-abcdefghij' } })
    ).text();
    assert.match(metrics, /tokenwire_rejected_total\{route="openai-chat",status="401"\} 5/);
  });

  it('accepts exactly the configured keys, whatever their length or content', async () => {
    const key = fc.stringMatching(/^[!-~]{1,40}$/);
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(key, { minLength: 1, maxLength: 4 }), key, async (keys, other) => {
        const handler = guardGateway(() => new Response('ok'), { apiKeys: keys });
        const status = async (headers: Record<string, string>) =>
          (await handler(new Request('http://gw.test/v1/models', { headers }))).status;
        for (const k of keys) {
          assert.equal(await status({ authorization: `Bearer ${k}` }), 200);
          assert.equal(await status({ 'x-api-key': k }), 200);
          for (const near of [k.slice(0, -1), `${k}x`, `x${k.slice(1)}`])
            if (near !== '' && !keys.includes(near))
              assert.equal(await status({ 'x-api-key': near }), 401, near);
        }
        assert.equal(await status({ 'x-api-key': other }), keys.includes(other) ? 200 : 401);
        assert.equal(await status({}), 401);
      }),
      { numRuns: 100 },
    );
  });
});

describe('guard: body size and concurrent streams', () => {
  it('refuses a body over the limit with 413 in the dialect shape, declared or chunked', async () => {
    const g = await guarded({ maxBodyBytes: 2048 });
    const big = chatBody({ messages: [{ role: 'user', content: 'x'.repeat(4096) }] });
    const declared = await post(`${g.url}/v1/chat/completions`, big);
    assert.equal(declared.status, 413);
    assert.match(((await declared.json()) as { error: { message: string } }).error.message, /2048 bytes/);
    // No content-length: the body arrives chunked and is cut off at the limit.
    const chunked = await fetch(`${g.url}/api/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: new Blob([big]).stream(),
      duplex: 'half',
    } as RequestInit);
    assert.equal(chunked.status, 413);
    assert.match(((await chunked.json()) as { error: string }).error, /larger than the limit/);
    assert.equal((await post(`${g.url}/v1/chat/completions`, chatBody())).status, 200);
  });

  it('refuses a stream over the concurrency limit with 429 + Retry-After in the dialect shape, and frees slots', async () => {
    const g = await guarded({
      maxStreams: 2,
      retryAfterSeconds: 3,
      sim: { timing: { tokensPerSecond: 20, loadMs: 0 } },
    });
    const controller = new AbortController();
    const long = chatBody({ max_tokens: 400 });
    const open = [
      await post(`${g.url}/v1/chat/completions`, long, {}, controller.signal),
      await post(
        `${g.url}/api/chat`,
        JSON.stringify({
          model: 'sim',
          messages: [{ role: 'user', content: 'x' }],
          options: { num_predict: 400 },
        }),
        {},
        controller.signal,
      ),
    ];
    assert.deepEqual(
      open.map((r) => r.status),
      [200, 200],
    );
    assert.equal(g.inFlight(), 2);
    const refused = await post(`${g.url}/v1/chat/completions`, chatBody());
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get('retry-after'), '3');
    const error = ((await refused.json()) as { error: { message: string; type: string } }).error;
    assert.equal(error.type, 'rate_limit_error');
    assert.match(error.message, /at most 2/);
    const ollama = await post(`${g.url}/api/generate`, JSON.stringify({ model: 'sim', prompt: 'x' }));
    assert.equal(ollama.status, 429);
    assert.match(((await ollama.json()) as { error: string }).error, /too many concurrent streams/);
    // Non-generation routes are not limited.
    assert.equal((await fetch(`${g.url}/v1/models`)).status, 200);
    // Clients leave: their slots come back.
    controller.abort();
    await waitFor(() => g.inFlight() === 0, `slots freed (in flight ${g.inFlight()})`);
    await waitFor(() => g.activeStreams() === 0, 'upstreams stopped');
    const again = await post(`${g.url}/v1/chat/completions`, chatBody());
    assert.equal(again.status, 200);
    await again.text();
    assert.equal(g.inFlight(), 0, 'a finished stream frees its slot');
  });
});

describe('guard: CORS', () => {
  it('is off by default: no CORS headers, and a cross-origin API request or preflight is refused', async () => {
    const g = await guarded();
    const preflight = await fetch(`${g.url}/v1/chat/completions`, {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    assert.equal(preflight.status, 403);
    assert.equal(preflight.headers.get('access-control-allow-origin'), null);
    const cross = await post(`${g.url}/v1/chat/completions`, chatBody(), { origin: 'https://evil.example' });
    assert.equal(cross.status, 403);
    assert.equal(cross.headers.get('access-control-allow-origin'), null);
    assert.match(((await cross.json()) as { error: { message: string } }).error.message, /cross-origin/);
    // A page the gateway serves itself (same origin) works, and so do clients that send no Origin.
    const same = await post(`${g.url}/v1/chat/completions`, chatBody(), { origin: g.url });
    assert.equal(same.status, 200);
    assert.equal(same.headers.get('access-control-allow-origin'), null);
    await same.text();
  });

  it('with an allow-list: answers preflights and echoes only listed origins, never *', async () => {
    const g = await guarded({ corsOrigins: ['https://play.example'], apiKeys: ['secret-key-123456'] });
    const preflight = await fetch(`${g.url}/v1/chat/completions`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://play.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type, last-event-id',
      },
    });
    assert.equal(preflight.status, 204, 'a preflight needs no key (browsers send none)');
    assert.equal(preflight.headers.get('access-control-allow-origin'), 'https://play.example');
    assert.match(preflight.headers.get('access-control-allow-methods') ?? '', /POST/);
    for (const name of ['authorization', 'content-type', 'last-event-id'])
      assert.match(preflight.headers.get('access-control-allow-headers') ?? '', new RegExp(name));
    assert.match(preflight.headers.get('vary') ?? '', /origin/i);

    const allowed = await post(`${g.url}/v1/chat/completions`, chatBody(), {
      origin: 'https://play.example',
      authorization: 'Bearer secret-key-123456',
    });
    assert.equal(allowed.status, 200);
    assert.equal(allowed.headers.get('access-control-allow-origin'), 'https://play.example');
    assert.match(allowed.headers.get('access-control-expose-headers') ?? '', /x-tokenwire-stream-id/);
    assert.match(allowed.headers.get('vary') ?? '', /origin/i);
    await allowed.text();
    // 401s carry CORS headers so the page can read why.
    const noKey = await post(`${g.url}/v1/chat/completions`, chatBody(), { origin: 'https://play.example' });
    assert.equal(noKey.status, 401);
    assert.equal(noKey.headers.get('access-control-allow-origin'), 'https://play.example');

    for (const origin of [
      'https://evil.example',
      'https://play.example.evil.example',
      'http://play.example',
      'null',
    ]) {
      const refused = await post(`${g.url}/v1/chat/completions`, chatBody(), {
        origin,
        authorization: 'Bearer secret-key-123456',
      });
      assert.equal(refused.status, 403, origin);
      assert.equal(refused.headers.get('access-control-allow-origin'), null, origin);
      const pre = await fetch(`${g.url}/v1/chat/completions`, {
        method: 'OPTIONS',
        headers: { origin, 'access-control-request-method': 'POST' },
      });
      assert.equal(pre.status, 403, origin);
      assert.equal(pre.headers.get('access-control-allow-origin'), null, origin);
    }
  });
});

/** Every line of an SSE body is a field the gateway writes itself: nothing else was injected. */
function assertOnlyGatewayFields(body: string, streamId: string): void {
  const lines = body.split(/\r\n|\r|\n/);
  for (const line of lines) {
    if (line === '' || line.startsWith(':')) continue;
    assert.match(line, /^(data: |retry: \d+$|id: )/, `unexpected line ${JSON.stringify(line)}`);
    if (line.startsWith('id: ')) assert.match(line, new RegExp(`^id: ${streamId}\\.\\d+$`));
  }
  assert.ok(!/\r/.test(body), 'no CR in the body');
}

describe('guard: nothing a client or upstream sends can inject SSE fields or headers', () => {
  const HOSTILE = 'sim\r\nid: evil.1\r\nevent: pwned\r\n\r\ndata: [DONE]\nSet-Cookie: a=b';

  it('a model name with CR/LF stays inside its JSON string (SSE and NDJSON), never in a header', async () => {
    const g = await guarded();
    const response = await post(`${g.url}/v1/chat/completions`, chatBody({ model: HOSTILE }));
    assert.equal(response.status, 200);
    for (const [name, value] of response.headers) {
      assert.ok(!/[\r\n]/.test(value), name);
      assert.ok(!value.includes('evil'), `${name}: ${value}`);
    }
    assert.equal(response.headers.get('set-cookie'), null);
    const streamId = response.headers.get('x-tokenwire-stream-id')!;
    const body = await response.text();
    assertOnlyGatewayFields(body, streamId);
    const frames = body.split('\n\n').filter((f) => f.startsWith('id: '));
    const models = frames
      .map((f) =>
        f
          .split('\n')
          .find((l) => l.startsWith('data: '))!
          .slice(6),
      )
      .filter((d) => d !== '[DONE]')
      .map((d) => (JSON.parse(d) as { model?: string }).model);
    assert.ok(
      models.every((m) => m === HOSTILE),
      'the model name is carried intact, as data',
    );

    const ndjson = await post(
      `${g.url}/api/chat`,
      JSON.stringify({
        model: HOSTILE,
        messages: [{ role: 'user', content: 'x' }],
        options: { num_predict: 5 },
      }),
    );
    const lines = (await ndjson.text()).split('\n').filter((l) => l !== '');
    for (const line of lines) assert.equal((JSON.parse(line) as { model: string }).model, HOSTILE);
  });

  it('an upstream error message with CR/LF and fake fields becomes one error event, in SSE and NDJSON', async () => {
    const evil = 'boom\r\nid: evil.99\r\n\r\ndata: [DONE]\r\n\r\nevent: x';
    const upstream = await scriptServer({
      headers: { 'content-type': 'text/event-stream' },
      steps: [
        {
          write:
            'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}\n\n',
        },
        {
          write: `data: ${JSON.stringify({ error: { message: evil, type: 'internal_error', code: 500 } })}\n\n`,
        },
        { write: 'data: [DONE]\n\n' },
      ],
    });
    closers.push(() => upstream.close());
    const g = await guarded({ upstreamUrl: upstream.url });
    const response = await post(`${g.url}/v1/chat/completions`, chatBody());
    const streamId = response.headers.get('x-tokenwire-stream-id')!;
    const body = await response.text();
    assertOnlyGatewayFields(body, streamId);
    const data = body
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => l.slice(6));
    const errors = data.filter((d) => d.startsWith('{"error"'));
    assert.equal(errors.length, 1);
    assert.ok(
      (JSON.parse(errors[0]!) as { error: { message: string } }).error.message.includes('id: evil.99'),
    );
    assert.ok(!body.includes('\nid: evil'), 'no injected id field');

    const ndjson = await post(
      `${g.url}/api/chat`,
      JSON.stringify({ model: 'sim', messages: [{ role: 'user', content: 'x' }] }),
    );
    for (const line of (await ndjson.text()).split('\n').filter((l) => l !== '')) JSON.parse(line);
  });

  it('an upstream HTTP error with a hostile message and Retry-After passes only data, never raw text, into headers', async () => {
    const upstream = await scriptServer({
      status: 429,
      headers: { 'content-type': 'application/json', 'retry-after': '7, x-evil: 1' },
      steps: [{ write: JSON.stringify({ error: { message: 'slow down\r\nx-evil: 1\r\n\r\n<html>' } }) }],
    });
    closers.push(() => upstream.close());
    const g = await guarded({ upstreamUrl: upstream.url });
    const response = await post(`${g.url}/v1/chat/completions`, chatBody());
    assert.equal(response.status, 429);
    assert.equal(response.headers.get('x-evil'), null);
    const retryAfter = response.headers.get('retry-after');
    assert.ok(retryAfter === null || /^\d+$/.test(retryAfter), `retry-after ${retryAfter}`);
    const body = (await response.json()) as { error: { message: string } };
    assert.match(body.error.message, /slow down/);
  });

  it('a hostile Last-Event-ID is refused with a 4xx JSON error, and a raw CR in a header never reaches the gateway', async () => {
    const g = await guarded();
    for (const id of ['evil.1 x', '../../x.1', 'a'.repeat(200), 'abc.-1', 'abc.1e3', 'abc\u0085.1', '.1']) {
      const response = await post(`${g.url}/v1/chat/completions`, chatBody(), {
        'last-event-id': encodeURI(id),
      });
      assert.ok(response.status === 400 || response.status === 404, `${id}: ${response.status}`);
      assert.match(response.headers.get('content-type') ?? '', /json/);
      await response.json();
    }
    const logged = g.logs.length;
    const reply = await new Promise<string>((resolve) => {
      const socket = connect(g.served.port, '127.0.0.1');
      let text = '';
      socket.on('connect', () =>
        socket.write(
          'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nLast-Event-ID: a.1\rid: evil\r\nContent-Length: 2\r\n\r\n{}',
        ),
      );
      socket.on('data', (chunk) => {
        text += chunk.toString();
      });
      socket.on('close', () => resolve(text));
      socket.on('error', () => resolve(text));
    });
    assert.match(reply, /^HTTP\/1\.1 400/);
    assert.equal(g.logs.length, logged, 'the request never reached the gateway');
  });
});

describe('guard: upstream credentials are never echoed, logged or put in metrics', () => {
  const SECRET = 'sk-upstream-7f3a9c2e5b1d4f60';

  function echoingUpstream(kind: 'http' | 'midstream' | 'long') {
    return (request: RecordedRequest): ScriptedResponse => {
      const received = String(request.headers.authorization ?? '');
      if (kind === 'http')
        return {
          status: 401,
          headers: { 'content-type': 'application/json' },
          steps: [{ write: JSON.stringify({ error: { message: `invalid credential: ${received}` } }) }],
        };
      if (kind === 'long')
        return {
          status: 403,
          headers: { 'content-type': 'application/json' },
          // The client's snippet() cuts messages at 200 chars: here, inside the credential.
          steps: [
            {
              write: JSON.stringify({
                error: {
                  message: `${'x'.repeat(200 - 'Bearer sk-upstream-7f'.length)}${received} was refused`,
                },
              }),
            },
          ],
        };
      return {
        headers: { 'content-type': 'text/event-stream' },
        steps: [
          {
            write:
              'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}\n\n',
          },
          {
            write: `data: ${JSON.stringify({ error: { message: `upstream saw authorization=${received} and x-key=${String(request.headers['x-key'])}`, type: 'internal_error' } })}\n\n`,
          },
        ],
      };
    };
  }

  for (const kind of ['http', 'midstream', 'long'] as const) {
    it(`redacts an upstream that echoes its credentials (${kind === 'http' ? 'in an HTTP error' : kind === 'long' ? 'cut by the snippet limit' : 'in a mid-stream error'})`, async () => {
      const upstream = await scriptServer(echoingUpstream(kind));
      closers.push(() => upstream.close());
      const g = await guarded({
        upstreamUrl: upstream.url,
        upstreamHeaders: { authorization: `Bearer ${SECRET}`, 'x-key': 'k2-0123456789abcdef' },
      });
      const response = await post(`${g.url}/v1/chat/completions`, chatBody(), {
        authorization: 'Bearer client-key-should-not-go-upstream',
      });
      const body = await response.text();
      assert.equal(
        upstream.requests[0]?.headers.authorization,
        `Bearer ${SECRET}`,
        'the upstream got its credential',
      );
      assert.ok(
        !String(upstream.requests[0]?.headers.authorization).includes('client-key'),
        'not the client key',
      );
      assert.ok(body.length > 0);
      assert.ok(body.includes('[redacted]'), body);
      for (const leak of [SECRET, SECRET.slice(0, 12), 'k2-0123456789abcdef'])
        assert.ok(!body.includes(leak), `client body leaks ${leak}: ${body}`);
      await waitFor(() => g.logs.length > 0, 'a log record');
      const logs = JSON.stringify(g.logs);
      for (const leak of [SECRET, 'k2-0123456789abcdef'])
        assert.ok(!logs.includes(leak), `log leaks: ${logs}`);
      const metrics = await (await fetch(`${g.url}/metrics`)).text();
      assert.ok(!metrics.includes(SECRET) && !metrics.includes('k2-0123456789abcdef'), 'metrics leak');
    });
  }

  it('redacts a credential split across two reads of a streamed body', async () => {
    const parts = ['data: {"a":"Bearer sk-upstream-7f3a', '9c2e5b1d4f60"}\n\n'];
    const handler = guardGateway(
      () =>
        new Response(
          new ReadableStream({
            start(controller) {
              for (const part of parts) controller.enqueue(new TextEncoder().encode(part));
              controller.close();
            },
          }),
        ),
      { secrets: [SECRET] },
    );
    const text = await (
      await handler(new Request('http://gw.test/v1/chat/completions', { method: 'POST', body: '{}' }))
    ).text();
    assert.equal(text, 'data: {"a":"Bearer [redacted]"}\n\n');
  });

  it('keeps the direct socket path: redacts what is written, also split across writes, and frees the slot', async () => {
    let output: ResponseOutput | undefined;
    const handler = guardGateway(
      markTakesIncomingRequest(async () => {
        output = new ResponseOutput(() => {});
        return new Response(output.body, { headers: { 'content-type': 'text/event-stream' } });
      }),
      { secrets: [SECRET], maxStreams: 1 },
    );
    const response = await handler(
      new Request('http://gw.test/v1/chat/completions', { method: 'POST', body: '{}' }),
    );
    assert.equal(handler.inFlight(), 1);
    const direct = directBodyOf(response.body);
    assert.ok(direct !== undefined, 'the guarded response still offers the direct path');
    const writer = recordingWriter();
    const written = writer.written;
    direct.attach(writer);
    output!.write('data: {"a":"Bearer sk-upstream-7f3a');
    await Promise.resolve(); // the output writes once per tick: the secret reaches the guard in two writes
    assert.equal(written.length, 1);
    output!.write('9c2e5b1d4f60"}\n\n');
    output!.write('data: [DONE]\n\n');
    output!.end();
    assert.equal(written.join(''), 'data: {"a":"Bearer [redacted]"}\n\ndata: [DONE]\n\n');
    assert.ok(writer.ended);
    assert.equal(handler.inFlight(), 0);
  });

  it('guards a direct-only response (no body stream, the writer on the Response): redacts, adds CORS, frees the slot', async () => {
    let output: ResponseOutput | undefined;
    const handler = guardGateway(
      markTakesIncomingRequest(async () => {
        output = new ResponseOutput(() => {});
        return directOnlyResponse(output.direct, { headers: { 'content-type': 'text/event-stream' } });
      }),
      { secrets: [SECRET], maxStreams: 1, corsOrigins: ['https://app.example'] },
    );
    const response = await handler(
      new Request('http://gw.test/v1/chat/completions', {
        method: 'POST',
        body: '{}',
        headers: { origin: 'https://app.example' },
      }),
    );
    assert.equal(response.body, null);
    assert.equal(response.headers.get('access-control-allow-origin'), 'https://app.example');
    assert.equal(handler.inFlight(), 1);
    const direct = directBodyOfResponse(response);
    assert.ok(direct !== undefined, 'the guarded response carries its direct writer');
    const writer = recordingWriter();
    direct.attach(writer);
    output!.write('data: {"a":"Bearer sk-upstream-7f3a');
    output!.write('9c2e5b1d4f60"}\n\n');
    output!.end();
    assert.equal(writer.written.join(''), 'data: {"a":"Bearer [redacted]"}\n\n');
    assert.ok(writer.ended);
    assert.equal(handler.inFlight(), 0);
  });

  it('keeps SSE reads whole (no holding back) when nothing looks like a secret', async () => {
    const g = await guarded({ upstreamHeaders: { authorization: `Bearer ${SECRET}` } });
    const raw = await readSse(await post(`${g.url}/v1/chat/completions`, chatBody()));
    assert.equal(raw.frames.at(-1)?.data, '[DONE]');
  });
});

/** A direct writer that keeps what it is given, the text of its end included. */
function recordingWriter(): DirectWriter & { written: string[]; ended: boolean } {
  const writer = {
    written: [] as string[],
    ended: false,
    write: (text: string) => {
      writer.written.push(text);
      return true;
    },
    end: (text?: string) => {
      if (text !== undefined) writer.written.push(text);
      writer.ended = true;
    },
    destroy: () => {},
  };
  return writer;
}
