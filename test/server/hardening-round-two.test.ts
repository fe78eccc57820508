import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { describe, it } from 'node:test';
import type { DialectId } from '../../src/dialects/dialect.ts';
import { type ServedHandler, serve } from '../../src/node/serve.ts';
import { createGateway, type GatewayOptions } from '../../src/server/create-gateway.ts';
import { createGuardedGateway, type GuardOptions } from '../../src/server/guard/guard-gateway.ts';
import { type IncomingRequest, markTakesIncomingRequest } from '../../src/server/http/incoming-request.ts';
import { MemoryResumeStore } from '../../src/server/resume/memory-resume-store.ts';
import type { StreamMeta } from '../../src/server/resume/resume-store.ts';
import { createSim, simRawRoute } from '../../src/sim/index.ts';

/**
 * Hardening over real sockets: drop_params names that cannot be a header value, failures after the
 * upstream call started, the raw simulator routes behind the guard, and smaller edge cases.
 */

/** The simulator as the upstream, counting the calls it gets and the ones the gateway aborts. */
function watchedSim(tokensPerSecond: number) {
  const sim = createSim({ timing: { tokensPerSecond, loadMs: 0 } });
  const calls = { started: 0, aborted: 0 };
  const fetch = async (request: Request): Promise<Response> => {
    calls.started += 1;
    request.signal.addEventListener('abort', () => (calls.aborted += 1), { once: true });
    return sim.fetch(request);
  };
  return { sim, calls, fetch };
}

interface Started {
  url: string;
  served: ServedHandler;
  calls: { started: number; aborted: number };
  activeStreams(): number;
  close(): Promise<void>;
}

/** A guarded gateway on 127.0.0.1:0 in front of a watched simulator speaking `dialects`. */
async function startGuarded(
  options: {
    dialects?: readonly DialectId[];
    tokensPerSecond?: number;
    gateway?: Partial<GatewayOptions & GuardOptions>;
    /** Wraps the guarded handler (a hook between the gateway and the socket). */
    wrap?: (
      handler: (request: IncomingRequest) => Promise<Response>,
    ) => (request: IncomingRequest) => Promise<Response>;
  } = {},
): Promise<Started> {
  const upstream = watchedSim(options.tokensPerSecond ?? 2000);
  const { gateway, fetch } = createGuardedGateway({
    upstreams: [
      {
        name: 'sim',
        url: 'http://sim.internal',
        dialects: options.dialects ?? ['openai-chat'],
        fetch: upstream.fetch,
        models: ['sim'],
      },
    ],
    ...options.gateway,
  });
  // A wrapping hook takes the light requests serve() passes the gateway, as the gateway does.
  const handler = options.wrap === undefined ? fetch : markTakesIncomingRequest(options.wrap(fetch));
  const served = await serve(handler as (request: Request) => Promise<Response>);
  return {
    url: served.url,
    served,
    calls: upstream.calls,
    activeStreams: () => gateway.activeStreams(),
    close: async () => {
      await gateway.close();
      await served.close();
    },
  };
}

/** Polls `check` until it holds (generous: the machine is shared), else fails with `what`. */
async function eventually(check: () => boolean, what: string, timeoutMs = 15000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`never happened: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const chat = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({ model: 'sim', messages: [{ role: 'user', content: 'hello' }], ...extra });

async function post(url: string, body: string, headers: Record<string, string> = {}) {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
}

describe('drop_params names that cannot be a header value', () => {
  it('names them percent-encoded in x-tokenwire-dropped-params, and the stream runs to its end', async () => {
    const g = await startGuarded({ dialects: ['ollama-chat'], gateway: { maxStreams: 1 } });
    try {
      const names = ['ключ', 'a\r\nb', 'x, y', '100%'];
      const extra: Record<string, unknown> = { stream: true, max_tokens: 5, drop_params: true };
      for (const name of names) extra[name] = 1;
      const response = await post(`${g.url}/v1/chat/completions`, chat(extra));
      assert.equal(response.status, 200);
      const header = response.headers.get('x-tokenwire-dropped-params');
      assert.equal(header, '%D0%BA%D0%BB%D1%8E%D1%87, a%0D%0Ab, x%2C%20y, 100%25');
      // Lossless: split on ", " and decode each, and the names are the client's.
      assert.deepEqual(header!.split(', ').map(decodeURIComponent), names);
      const text = await response.text();
      assert.match(text, /data: \[DONE\]/);
      // The slot came back: one more under maxStreams 1 is admitted.
      const next = await post(`${g.url}/v1/chat/completions`, chat({ max_tokens: 3 }));
      assert.equal(next.status, 200);
      await next.text();
      assert.equal(g.calls.aborted, 0);
    } finally {
      await g.close();
    }
  });

  it('keeps the names of its own tables as they are', async () => {
    const g = await startGuarded({ dialects: ['ollama-chat'] });
    try {
      const response = await post(
        `${g.url}/v1/chat/completions`,
        chat({ max_tokens: 3, drop_params: true, logit_bias: { '1': 2 }, my_field: true }),
      );
      assert.equal(response.status, 200);
      assert.equal(response.headers.get('x-tokenwire-dropped-params'), 'logit_bias, my_field');
      await response.text();
    } finally {
      await g.close();
    }
  });
});

/** A memory store whose first `open` throws: the response fails after the upstream call started. */
class FailingOnceStore extends MemoryResumeStore {
  failures = 1;
  override open(streamId: string, meta: StreamMeta): Promise<void> {
    if (this.failures > 0) {
      this.failures -= 1;
      throw new Error('injected: the store failed');
    }
    return super.open(streamId, meta);
  }
}

describe('any failure after the upstream call started aborts it and frees the slot', () => {
  it('a stream whose set-up fails late (the store) gets a 500; its upstream is aborted', async () => {
    const g = await startGuarded({
      tokensPerSecond: 5,
      gateway: { maxStreams: 1, resumeStore: new FailingOnceStore() },
    });
    try {
      const failed = await post(`${g.url}/v1/chat/completions`, chat({ stream: true, max_tokens: 500 }));
      assert.equal(failed.status, 500);
      assert.match(await failed.text(), /injected: the store failed/);
      assert.equal(g.calls.started, 1);
      await eventually(() => g.calls.aborted === 1, 'the upstream call was aborted');
      await eventually(() => g.activeStreams() === 0, 'the stream is no longer active');
      const next = await post(`${g.url}/v1/chat/completions`, chat({ max_tokens: 2 }));
      assert.equal(next.status, 200, 'a later request under maxStreams 1 is admitted');
      await next.text();
    } finally {
      await g.close();
    }
  });

  it('a response whose head cannot be written (a hook set a bad header) ends its stream and upstream', async () => {
    const g = await startGuarded({
      tokensPerSecond: 5,
      gateway: { maxStreams: 1 },
      // A hook between the gateway and the socket that breaks the head once: node:http refuses it.
      wrap: (handler) => {
        let broken = false;
        return async (request) => {
          const response = await handler(request);
          if (!broken && response.status === 200) {
            broken = true;
            response.headers.set('x-hook', 'ключ');
          }
          return response;
        };
      },
    });
    try {
      const failed = await post(`${g.url}/v1/chat/completions`, chat({ stream: true, max_tokens: 500 }));
      assert.equal(failed.status, 500);
      await failed.text();
      assert.equal(g.calls.started, 1);
      await eventually(() => g.calls.aborted === 1, 'the upstream call was aborted');
      await eventually(() => g.activeStreams() === 0, 'the stream is no longer active');
      const next = await post(`${g.url}/v1/chat/completions`, chat({ max_tokens: 2 }));
      assert.equal(next.status, 200, 'a later request under maxStreams 1 is admitted');
      await next.text();
    } finally {
      await g.close();
    }
  });
});

/** `tokenwire serve`'s shape: a guarded gateway with the raw simulator (`/sim/…`) as its fallback. */
async function startWithRawSim(options: Partial<GatewayOptions & GuardOptions> = {}) {
  const sim = createSim({ timing: { tokensPerSecond: 2000, loadMs: 0 } });
  const simCalls = { count: 0 };
  const raw = simRawRoute((request) => {
    simCalls.count += 1;
    return sim.fetch(request);
  });
  const { gateway, fetch } = createGuardedGateway({
    upstreams: [
      {
        name: 'sim',
        url: 'http://sim.internal',
        dialects: ['openai-chat'],
        fetch: sim.fetch,
        models: ['sim'],
      },
    ],
    apiKeys: [KEY],
    maxBodyBytes: 64 * 1024,
    fallback: (request) => raw(request),
    ...options,
  });
  const served = await serve(fetch);
  return {
    url: served.url,
    served,
    simCalls,
    close: async () => {
      await gateway.close();
      await served.close();
    },
  };
}

const KEY = 'sk-test-hardening';
const AUTH = { authorization: `Bearer ${KEY}` };

/** A request written on a raw socket (exact bytes: headers `fetch` would not send); the whole answer. */
function rawExchange(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(request));
    let answer = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      answer += chunk;
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(answer));
  });
}

const statusOf = (answer: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1]);

describe('the raw simulator routes go through the guard and the body limits', () => {
  it('asks for the API key on GET /sim/v1/models (and every /sim path)', async () => {
    const g = await startWithRawSim();
    try {
      for (const path of ['/sim/v1/models', '/sim/api/tags', '/sim/health']) {
        const refused = await fetch(`${g.url}${path}`);
        assert.equal(refused.status, 401, path);
        await refused.text();
      }
      assert.equal(g.simCalls.count, 0);
      const listed = await fetch(`${g.url}/sim/v1/models`, { headers: AUTH });
      assert.equal(listed.status, 200);
      assert.equal(((await listed.json()) as { object: string }).object, 'list');
    } finally {
      await g.close();
    }
  });

  it('refuses a body over maxBodyBytes with a 413, declared or chunked, before the simulator sees it', async () => {
    const g = await startWithRawSim();
    try {
      const big = chat({ stream: true, padding: 'x'.repeat(200 * 1024) });
      const declared = await post(`${g.url}/sim/v1/chat/completions`, big, AUTH);
      assert.equal(declared.status, 413);
      assert.match(await declared.text(), /larger than the limit of 65536 bytes/);
      // No Content-Length: cut while it streams.
      const bytes = new TextEncoder().encode(big);
      const chunked = await fetch(`${g.url}/sim/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...AUTH },
        body: new ReadableStream<Uint8Array>({
          start(controller) {
            for (let at = 0; at < bytes.length; at += 16 * 1024)
              controller.enqueue(bytes.slice(at, at + 16 * 1024));
            controller.close();
          },
        }),
        duplex: 'half',
      } as RequestInit);
      assert.equal(chunked.status, 413);
      await chunked.text();
      assert.equal(g.simCalls.count, 0);
      // A body under the limit still reaches the simulator's own bytes.
      const ok = await post(`${g.url}/sim/v1/chat/completions`, chat({ stream: false, max_tokens: 3 }), AUTH);
      assert.equal(ok.status, 200);
      assert.equal(((await ok.json()) as { object: string }).object, 'chat.completion');
      assert.equal(g.simCalls.count, 1);
    } finally {
      await g.close();
    }
  });

  it('refuses a body nesting deeper than the limit with a 400 (not a 500 stack overflow)', async () => {
    const g = await startWithRawSim();
    try {
      const deep = `{"model":"sim","messages":[{"role":"user","content":"hi"}],"x":${'['.repeat(5000)}${']'.repeat(5000)}}`;
      const response = await post(`${g.url}/sim/v1/chat/completions`, deep, AUTH);
      assert.equal(response.status, 400);
      const body = (await response.json()) as { error: { message: string } };
      assert.match(body.error.message, /nests deeper than 512 levels/);
      assert.equal(g.simCalls.count, 0);
    } finally {
      await g.close();
    }
  });

  it('holds a stream slot for a /sim generation (maxStreams counts it)', async () => {
    const sim = createSim({ timing: { tokensPerSecond: 5, loadMs: 0 } });
    const { gateway, fetch: guarded } = createGuardedGateway({
      upstreams: [{ name: 'sim', url: 'http://sim.internal', dialects: ['openai-chat'], fetch: sim.fetch }],
      maxStreams: 1,
      fallback: simRawRoute(sim.fetch),
    });
    const served = await serve(guarded);
    try {
      const open = await post(
        `${served.url}/sim/v1/chat/completions`,
        chat({ stream: true, max_tokens: 200 }),
      );
      assert.equal(open.status, 200);
      const second = await post(`${served.url}/sim/v1/chat/completions`, chat({ max_tokens: 2 }));
      assert.equal(second.status, 429);
      await second.text();
      await open.body?.cancel();
    } finally {
      await gateway.close();
      await served.close();
    }
  });
});

describe("edge cases: hosts, URLs the parser refuses, model ids, the cursor route's key", () => {
  it('answers a Host with a port past 65535 with a 400, not a 500 "Invalid URL"', async () => {
    const g = await startWithRawSim();
    try {
      for (const host of ['127.0.0.1:99999', '999.0.0.1']) {
        for (const path of ['/v1/models', '/v1/chat/completions', '/v1/models/..']) {
          const answer = await rawExchange(
            g.served.port,
            `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${KEY}\r\nConnection: close\r\n\r\n`,
          );
          assert.equal(statusOf(answer), 400, `${host} ${path}: ${answer.slice(0, 200)}`);
          assert.match(answer, /invalid Host header/);
        }
      }
      // A valid one is served as before.
      const answer = await rawExchange(
        g.served.port,
        `GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1:65535\r\nAuthorization: Bearer ${KEY}\r\nConnection: close\r\n\r\n`,
      );
      assert.equal(statusOf(answer), 200);
    } finally {
      await g.close();
    }
  });

  it('answers a URL the parser refuses with a 400 in the gateway too (an adapter other than serve)', async () => {
    const gateway = createGateway({
      upstreams: [
        { name: 'sim', url: 'http://sim.internal', dialects: ['openai-chat'], fetch: createSim().fetch },
      ],
    });
    try {
      const response = await gateway.fetch({
        method: 'GET',
        url: 'http://127.0.0.1:99999/v1/models/%41',
        headers: new Headers(),
        signal: new AbortController().signal,
        body: null,
      });
      assert.equal(response.status, 400);
      assert.match(await response.text(), /invalid request URL/);
    } finally {
      await gateway.close();
    }
  });

  it('answers a second Host header with a 400 (RFC 9112 §3.2)', async () => {
    const g = await startWithRawSim();
    try {
      const port = g.served.port;
      const twice = await rawExchange(
        port,
        `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nHost: evil.test\r\nConnection: close\r\n\r\n`,
      );
      assert.equal(statusOf(twice), 400, twice.slice(0, 200));
      assert.match(twice, /more than one Host header/);
      const once = await rawExchange(
        port,
        `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`,
      );
      assert.equal(statusOf(once), 200);
    } finally {
      await g.close();
    }
  });

  it('refuses a model id with an encoded slash or a dot segment instead of forwarding it upstream', async () => {
    const seen: string[] = [];
    const upstreamFetch = async (request: Request): Promise<Response> => {
      seen.push(new URL(request.url).pathname);
      return Response.json({ id: 'x', object: 'model' });
    };
    const { gateway, fetch: guarded } = createGuardedGateway({
      upstreams: [
        {
          name: 'vllm',
          url: 'http://vllm.internal',
          dialects: ['openai-chat'],
          fetch: upstreamFetch,
          headers: { authorization: 'Bearer upstream-secret-credential' },
        },
      ],
    });
    const served = await serve(guarded);
    try {
      for (const id of [
        '..%2F..%2Fadmin',
        '..%2f..%2fadmin',
        'a%5C..%5Cadmin',
        '%2E%2E%2Fadmin',
        'org%2Fmodel',
      ]) {
        const answer = await rawExchange(
          served.port,
          `GET /v1/models/${id} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`,
        );
        assert.equal(statusOf(answer), 400, `${id}: ${answer.slice(0, 300)}`);
        assert.match(answer, /invalid model id/);
      }
      assert.deepEqual(seen, [], 'nothing went upstream');
      // An id with a plain slash (org/model) still goes through.
      const plain = await fetch(`${served.url}/v1/models/org/model`);
      assert.equal(plain.status, 200);
      await plain.text();
      assert.deepEqual(seen, ['/v1/models/org/model']);
    } finally {
      await gateway.close();
      await served.close();
    }
  });

  it('asks for the key on GET /responses/{id} without /v1 (401 before the store is read)', async () => {
    const g = await startWithRawSim();
    try {
      for (const path of [
        '/responses/resp_abc',
        '/v1/responses/resp_abc',
        '/responses/resp_abc?stream=true',
      ]) {
        const refused = await fetch(`${g.url}${path}`);
        assert.equal(refused.status, 401, path);
        await refused.text();
      }
      const unknown = await fetch(`${g.url}/responses/resp_abc`, { headers: AUTH });
      assert.equal(unknown.status, 404);
      await unknown.text();
    } finally {
      await g.close();
    }
  });
});
