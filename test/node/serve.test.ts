import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { after, describe, it } from 'node:test';
import { serve } from '../../src/node/serve.ts';
import { WHOLE_BODY } from '../../src/server/http/body-symbols.ts';
import {
  type IncomingRequest,
  markTakesIncomingRequest,
  toRequest,
} from '../../src/server/http/incoming-request.ts';
import { readJsonBody } from '../../src/server/http/read-body.ts';
import { directOnlyResponse, ResponseOutput } from '../../src/server/http/response-output.ts';

const closers: (() => Promise<void>)[] = [];
after(() => Promise.all(closers.map((close) => close())));

interface Seen {
  isRequest: boolean;
  method: string;
  url: string;
  accept: string | null;
  forwarded: string | null;
  hasAccept: boolean;
  keys: string[];
  body: unknown;
  whole: boolean;
}

async function seen(request: IncomingRequest): Promise<Seen> {
  return {
    isRequest: request instanceof Request,
    method: request.method,
    url: request.url,
    accept: request.headers.get('Accept'),
    forwarded: request.headers.get('x-forwarded-for'),
    hasAccept: request.headers.has('ACCEPT'),
    keys: [...request.headers.keys()],
    body: request.method === 'POST' ? await readJsonBody(request, 1 << 20) : undefined,
    whole: (request as unknown as Record<symbol, unknown>)[WHOLE_BODY] instanceof Uint8Array,
  };
}

async function start(handler: (request: IncomingRequest) => Promise<Response>): Promise<string> {
  const served = await serve(handler);
  closers.push(served.close);
  return served.url;
}

/** Raw node:http, so repeated headers and chunked bodies are sent exactly as written. */
function send(
  url: string,
  options: { method: string; headers: [string, string][]; body?: string; chunked?: boolean },
): Promise<Seen> {
  return new Promise((resolve, reject) => {
    // Raw header pairs (so a header can repeat) get none of node:http's defaults: Host and framing here.
    const flat = ['Host', new URL(url).host, ...options.headers.flat()];
    if (options.chunked === true) flat.push('Transfer-Encoding', 'chunked');
    else if (options.body !== undefined) flat.push('Content-Length', String(Buffer.byteLength(options.body)));
    const outgoing = httpRequest(`${url}/x?y=1`, { method: options.method, headers: flat }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
      });
      res.on('end', () => resolve(JSON.parse(text) as Seen));
    });
    outgoing.on('error', reject);
    if (options.body !== undefined) outgoing.write(options.body);
    outgoing.end();
  });
}

describe('serve', () => {
  it('gives a handler marked TAKES_INCOMING_REQUEST a light request, with what a Request would carry', async () => {
    const url = await start(markTakesIncomingRequest(async (request) => Response.json(await seen(request))));
    const got = await send(url, {
      method: 'POST',
      headers: [
        ['Accept', 'text/event-stream'],
        ['X-Forwarded-For', '10.0.0.1'],
        ['X-Forwarded-For', '10.0.0.2'],
        ['Content-Type', 'application/json'],
      ],
      body: '{"model":"m","stream":true}',
    });
    assert.equal(got.isRequest, false);
    assert.equal(got.method, 'POST');
    assert.match(got.url, /^http:\/\/127\.0\.0\.1:\d+\/x\?y=1$/);
    assert.equal(got.accept, 'text/event-stream');
    assert.equal(got.hasAccept, true);
    assert.equal(got.forwarded, '10.0.0.1, 10.0.0.2');
    assert.ok(got.keys.includes('content-type'));
    assert.deepEqual(got.body, { model: 'm', stream: true });
    assert.equal(got.whole, true);
  });

  it('reads a known-length body whole, in one read with the headers or in later reads', async () => {
    const url = await start(markTakesIncomingRequest(async (request) => Response.json(await seen(request))));
    const { port } = new URL(url);
    const body = JSON.stringify({ model: 'm', text: 'é'.repeat(3000) });
    const length = Buffer.byteLength(body);
    const head = `POST /x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\nConnection: close\r\n\r\n`;
    // Together (the usual case), then the headers with a third of the body, the rest after a pause.
    const splits = [[head + body], [head + body.slice(0, 1000), body.slice(1000)]];
    for (const parts of splits) {
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = connect(Number(port), '127.0.0.1');
        let text = '';
        socket.setEncoding('utf8');
        socket.on('data', (chunk: string) => {
          text += chunk;
        });
        socket.on('end', () => resolve(text));
        socket.on('error', reject);
        socket.write(parts[0]!);
        if (parts[1] !== undefined) setTimeout(() => socket.write(parts[1]!), 50);
      });
      const json = answer.slice(answer.indexOf('\r\n\r\n') + 4);
      const got = JSON.parse(json.slice(json.indexOf('{'), json.lastIndexOf('}') + 1)) as Seen;
      assert.deepEqual(got.body, JSON.parse(body), `body sent in ${parts.length} part(s)`);
      assert.equal(got.whole, true);
    }
  });

  it('gives an unmarked handler a standard Request, and a marked one a light one even when the body streams', async () => {
    const plain = await start(async (request) => Response.json(await seen(request)));
    const plainGot = await send(plain, { method: 'POST', headers: [], body: '{"a":1}' });
    assert.equal(plainGot.isRequest, true);
    assert.deepEqual(plainGot.body, { a: 1 });

    const marked = await start(
      markTakesIncomingRequest(async (request) => Response.json(await seen(request))),
    );
    const chunked = await send(marked, { method: 'POST', headers: [], body: '{"b":2}', chunked: true });
    // The body is read when the handler asks, with its limit (the limit holds while it streams).
    assert.equal(chunked.isRequest, false, 'a body of unknown length is read through the light request');
    assert.deepEqual(chunked.body, { b: 2 });
    assert.equal(chunked.whole, true);
  });

  it('aborts the light request signal when the client goes away', async () => {
    let aborted: () => void = () => {};
    const abortedPromise = new Promise<void>((resolve) => {
      aborted = resolve;
    });
    const url = await start(
      markTakesIncomingRequest(async (request) => {
        request.signal.addEventListener('abort', () => aborted(), { once: true });
        return new Response(new ReadableStream({}), { headers: { 'content-type': 'text/event-stream' } });
      }),
    );
    const outgoing = httpRequest(`${url}/`, { method: 'GET' }, (res) => {
      res.once('data', () => {});
      outgoing.destroy();
    });
    outgoing.on('error', () => {});
    outgoing.end();
    await abortedPromise;
  });

  it("sends a direct response's headers at once, before any body text, and the text as it comes", async () => {
    const outputs: ResponseOutput[] = [];
    const url = await start(
      markTakesIncomingRequest(async () => {
        const output = new ResponseOutput(() => {});
        outputs.push(output);
        return directOnlyResponse(output.direct, { headers: { 'content-type': 'text/event-stream' } });
      }),
    );
    // Nothing is written until the headers were seen: they must not wait for the first body text.
    const response = await fetch(`${url}/`);
    assert.equal(response.headers.get('content-type'), 'text/event-stream');
    const reader = response.body!.getReader();
    outputs[0]!.write('data: a\n\n');
    outputs[0]!.write('data: b\n\n');
    assert.equal(new TextDecoder().decode((await reader.read()).value), 'data: a\n\ndata: b\n\n');
    outputs[0]!.write('data: c\n\n');
    outputs[0]!.end();
    let rest = '';
    for (let next = await reader.read(); !next.done; next = await reader.read())
      rest += new TextDecoder().decode(next.value);
    assert.equal(rest, 'data: c\n\n');
  });

  it('sends text a direct response held before it was taken, with its headers', async () => {
    const url = await start(
      markTakesIncomingRequest(async () => {
        const output = new ResponseOutput(() => {});
        output.write('retry: 3000\n\n');
        setImmediate(() => {
          output.write('data: x\n\n');
          output.end();
        });
        return directOnlyResponse(output.direct, { headers: { 'content-type': 'text/event-stream' } });
      }),
    );
    const response = await fetch(`${url}/`);
    assert.equal(await response.text(), 'retry: 3000\n\ndata: x\n\n');
  });

  it('builds a standard Request from a light one when code needs it (toRequest)', async () => {
    const url = await start(
      markTakesIncomingRequest(async (request) => {
        const standard = toRequest(request);
        return Response.json({
          isRequest: standard instanceof Request,
          accept: standard.headers.get('accept'),
          body: await standard.json(),
        });
      }),
    );
    const got = (await send(url, {
      method: 'POST',
      headers: [['Accept', 'application/json']],
      body: '{"c":3}',
    })) as unknown as { isRequest: boolean; accept: string; body: unknown };
    assert.deepEqual(got, { isRequest: true, accept: 'application/json', body: { c: 3 } });
  });
});
