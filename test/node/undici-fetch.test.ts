import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import { PUSH_ONLY, pushSourceOf } from '../../src/client/push-source.ts';
import { complete } from '../../src/client/token-stream.ts';
import { createUndiciFetch } from '../../src/node/undici-fetch.ts';
import { readFixture } from '../helpers/paths.ts';
import { type ScriptServer, scriptServer, sleep } from '../helpers/script-server.ts';

const servers: ScriptServer[] = [];
after(() => Promise.all(servers.map((s) => s.close())));
const fixture = new TextDecoder().decode(readFixture('wire-examples/vllm-chat.sse'));
const body = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };

const FLOOD_BYTES = 32 * 1024 * 1024;
const FLOOD_PIECE = 64 * 1024;

/**
 * A server that offers FLOOD_BYTES as fast as its socket takes them, in 64 KiB pieces each filled with
 * its index (mod 256), counting what it managed to write: how far a reader that waits lets it get.
 */
async function floodServer(): Promise<{ url: string; written: () => number; close: () => Promise<void> }> {
  let written = 0;
  const server = createServer(async (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    while (written < FLOOD_BYTES) {
      const bytes = Buffer.alloc(FLOOD_PIECE, written / FLOOD_PIECE);
      written += FLOOD_PIECE;
      if (!res.write(bytes)) await new Promise((resolve) => res.once('drain', resolve));
    }
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/big`,
    written: () => written,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** Reads a push-only response's body to its end through its push source, as text. */
function readPushed(response: Response): Promise<string> {
  const chunks: string[] = [];
  return new Promise<string>((resolve, reject) => {
    pushSourceOf(response)!.subscribe({
      chunk: (bytes) => chunks.push(new TextDecoder().decode(bytes)),
      end: () => resolve(chunks.join('')),
      error: reject,
    });
  });
}

/** Calls a new fetch as tokenwire's client does: `(url, init)`, a POST, with PUSH_ONLY. */
function fetchPushOnly(url: string): Promise<Response> {
  const fetchFn = createUndiciFetch() as unknown as (url: string, init: RequestInit) => Promise<Response>;
  return fetchFn(url, { method: 'POST', body: '{}', [PUSH_ONLY]: true } as RequestInit);
}

describe('createUndiciFetch', () => {
  it('serves the client through its push source, sending the body and headers as given', async () => {
    const server = await scriptServer({ steps: fixture.split(/(?<=\n\n)/).map((write) => ({ write })) });
    servers.push(server);
    const fetchFn = createUndiciFetch();
    const result = await complete(
      { url: `${server.url}/v1/chat/completions`, body, headers: { 'x-request-id': 'r1' } },
      { fetch: fetchFn },
    );
    assert.equal(result.complete, true);
    assert.equal(result.text, 'Hi there');
    assert.deepEqual(JSON.parse(server.requests[0]!.body), { ...body, stream: true });
    assert.equal(server.requests[0]!.headers['x-request-id'], 'r1');
  });

  it('keeps the connection for the next request once the terminal event came', async () => {
    const server = await scriptServer({ steps: [{ write: fixture }] });
    servers.push(server);
    const fetchFn = createUndiciFetch();
    for (let i = 0; i < 4; i++) {
      const result = await complete({ url: `${server.url}/v1/chat/completions`, body }, { fetch: fetchFn });
      assert.equal(result.complete, true);
      // undici checks an idle connection for stray bytes on the event loop's next turn before it sends
      // on it again; a request sent sooner goes on a second connection (both are kept).
      await sleep(5);
    }
    assert.equal(server.requests.length, 4);
    assert.equal(server.connections(), 1);
  });

  it('hands a push reader what came before it subscribed, on a later turn, then the rest', async () => {
    const server = await scriptServer({
      steps: [{ write: fixture.slice(0, 200) }, { wait: 60 }, { write: fixture.slice(200) }],
    });
    servers.push(server);
    const response = await fetchPushOnly(`${server.url}/x`);
    await sleep(30); // the first write has come and waits for a reader
    const chunks: string[] = [];
    let inSubscribe = true;
    const ended = new Promise<void>((resolve, reject) => {
      pushSourceOf(response)!.subscribe({
        chunk: (bytes) => {
          assert.equal(inSubscribe, false, 'no chunk is delivered inside subscribe');
          chunks.push(new TextDecoder().decode(bytes));
        },
        end: resolve,
        error: reject,
      });
    });
    inSubscribe = false;
    await ended;
    assert.equal(chunks.join(''), fixture);
    assert.ok(chunks.length >= 2);
  });

  it('delivers a whole body that ended before the reader came', async () => {
    const server = await scriptServer({ steps: [{ write: fixture }] });
    servers.push(server);
    const response = await fetchPushOnly(`${server.url}/x`);
    await sleep(30);
    assert.equal(await readPushed(response), fixture);
  });

  it('holds the upstream back while a ReadableStream reader waits, losing nothing', {
    timeout: 20000,
  }, async () => {
    const flood = await floodServer();
    try {
      const response = await createUndiciFetch()(new Request(flood.url));
      const reader = response.body!.getReader();
      let read = (await reader.read()).value!.length;
      await sleep(300);
      const written = flood.written();
      assert.ok(
        written < FLOOD_BYTES / 2,
        `the upstream was held back (${written} of ${FLOOD_BYTES} bytes written)`,
      );
      let previous = -1;
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        read += value.length;
        // Every byte says which 64 KiB piece it belongs to: pieces come whole and in order.
        const first = value[0]!;
        assert.ok(
          first === previous || first === (previous + 1) % 256 || previous === -1,
          `${first} after ${previous} at ${read} (${value.length})`,
        );
        previous = value[value.length - 1]!;
      }
      assert.equal(read, FLOOD_BYTES);
    } finally {
      await flood.close();
    }
  });

  it('holds the upstream back while a push reader has not subscribed yet, then gives it every byte', {
    timeout: 20000,
  }, async () => {
    const flood = await floodServer();
    try {
      const response = await fetchPushOnly(flood.url);
      await sleep(300);
      const written = flood.written();
      assert.ok(
        written < FLOOD_BYTES / 2,
        `the upstream was held back (${written} of ${FLOOD_BYTES} bytes written)`,
      );
      let read = 0;
      await new Promise<void>((resolve, reject) => {
        pushSourceOf(response)!.subscribe({
          chunk: (bytes) => {
            read += bytes.length;
          },
          end: resolve,
          error: reject,
        });
      });
      assert.equal(read, FLOOD_BYTES);
    } finally {
      await flood.close();
    }
  });

  it('rejects with a clear error when the upstream cannot be reached', async () => {
    const server = await scriptServer({ steps: [] });
    const url = server.url;
    await server.close();
    await assert.rejects(
      createUndiciFetch()(new Request(`${url}/x`, { method: 'POST', body: '{}' })),
      /ECONNREFUSED/,
    );
  });

  it('cuts a connection whose body never ends after the terminal event, the answer still complete', async () => {
    const server = await scriptServer({ steps: [{ write: fixture }, { hang: true }] });
    servers.push(server);
    const result = await complete(
      { url: `${server.url}/v1/chat/completions`, body },
      { fetch: createUndiciFetch({ finishDrainMs: 50 }) },
    );
    assert.equal(result.complete, true);
    assert.equal(result.text, 'Hi there');
    await server.requests[0]!.closed;
    assert.ok(server.requests[0]!.closedEarlyAtMs !== undefined, 'the server saw the connection close');
  });

  it('gives a standard ReadableStream to anyone else, and one consumer only', async () => {
    const server = await scriptServer({ steps: [{ write: fixture }] });
    servers.push(server);
    const response = await createUndiciFetch()(
      new Request(`${server.url}/x`, { method: 'POST', body: '{}' }),
    );
    assert.ok(pushSourceOf(response.body) !== undefined);
    assert.equal(await response.text(), fixture);
    assert.throws(
      () => pushSourceOf(response.body)!.subscribe({ chunk() {}, end() {}, error() {} }),
      /already being read/,
    );
  });

  it('reports a body cut mid-stream as a failure, never a clean end', async () => {
    const server = await scriptServer({
      steps: [{ write: fixture.slice(0, 300) }, { wait: 20 }, { destroy: true }],
    });
    servers.push(server);
    const result = await complete(
      { url: `${server.url}/v1/chat/completions`, body },
      { fetch: createUndiciFetch() },
    );
    assert.equal(result.complete, false);
    assert.equal(result.incomplete, 'connection-closed');
    assert.match(result.error!.message, /connection failed|closed/);
  });

  it('carries an abort to the server, before and during the body', async () => {
    const server = await scriptServer({ headersDelayMs: 5000, steps: [] });
    servers.push(server);
    const controller = new AbortController();
    const pending = complete(
      { url: `${server.url}/v1/chat/completions`, body },
      { fetch: createUndiciFetch(), signal: controller.signal },
    );
    setTimeout(() => controller.abort(), 50);
    await assert.rejects(pending, /aborted/);
    await server.requests[0]!.closed;
    assert.ok(server.requests[0]!.closedEarlyAtMs !== undefined);

    const steps = Array.from({ length: 50 }, (_, i) => [
      { write: `data: {"choices":[{"delta":{"content":"${i}"}}]}\n\n` },
      { wait: 20 },
    ]).flat();
    const slow = await scriptServer({ steps });
    servers.push(slow);
    const during = new AbortController();
    const running = complete(
      { url: `${slow.url}/v1/chat/completions`, body },
      { fetch: createUndiciFetch(), signal: during.signal },
    );
    setTimeout(() => during.abort(), 120);
    const result = await running;
    assert.equal(result.incomplete, 'aborted');
    await slow.requests[0]!.closed;
    assert.ok(slow.requests[0]!.closedEarlyAtMs !== undefined);
  });

  it('answers a PUSH_ONLY caller with the source on the Response and no body stream, errors as usual', async () => {
    const server = await scriptServer((request) =>
      request.path === '/bad'
        ? {
            status: 400,
            headers: { 'content-type': 'application/json' },
            steps: [{ write: '{"error":"no"}' }],
          }
        : { steps: [{ write: fixture }] },
    );
    servers.push(server);
    const fetchFn = createUndiciFetch() as unknown as (url: string, init: RequestInit) => Promise<Response>;
    const init = { method: 'POST', body: '{}', [PUSH_ONLY]: true } as RequestInit;
    const good = await fetchFn(`${server.url}/good`, init);
    assert.equal(good.body, null);
    // The stand-in a push reader gets: what a streaming reader reads of a Response.
    assert.equal(good.status, 200);
    assert.equal(good.ok, true);
    assert.equal(good.url, `${server.url}/good`);
    assert.equal(good.headers.get('Content-Type'), 'text/event-stream');
    assert.deepEqual(
      [...good.headers].find(([key]) => key === 'content-type'),
      ['content-type', 'text/event-stream'],
    );
    assert.equal(await readPushed(good), fixture);
    assert.throws(() => pushSourceOf(good)!.subscribe({ chunk() {}, end() {}, error() {} }), /already/);

    const bad = await fetchFn(`${server.url}/bad`, init);
    assert.equal(bad.status, 400);
    assert.equal(await bad.text(), '{"error":"no"}');
  });

  it('reads a one-document JSON answer through the push path, quoting it in the error', async () => {
    const server = await scriptServer({
      headers: { 'content-type': 'application/json' },
      steps: [{ write: '{"id":"x","object":"chat.completion","choices":[]}' }],
    });
    servers.push(server);
    const result = await complete(
      { url: `${server.url}/v1/chat/completions`, body: { ...body, stream: false } },
      { fetch: createUndiciFetch() },
    );
    assert.equal(result.error?.code, 'not-streaming');
    assert.match(result.error!.message, /chat\.completion/);
  });

  it('passes HTTP errors through with their body', async () => {
    const server = await scriptServer({
      status: 429,
      headers: { 'content-type': 'application/json', 'retry-after': '3' },
      steps: [{ write: '{"error":"slow down"}' }],
    });
    servers.push(server);
    await assert.rejects(
      complete({ url: `${server.url}/api/chat`, body }, { fetch: createUndiciFetch() }),
      (error: unknown) => {
        assert.match(String(error), /429.*slow down/);
        return true;
      },
    );
  });
});
