import assert from 'node:assert/strict';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { after, describe, it } from 'node:test';
import { serve } from '../../src/node/serve.ts';
import { createUndiciFetch } from '../../src/node/undici-fetch.ts';
import { createGateway } from '../../src/server/create-gateway.ts';

const closers: (() => Promise<void>)[] = [];
after(() => Promise.all(closers.map((close) => close())));

const chunk = (delta: object, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

/** Counts the socket writes (syscall-level: `_write` or `_writev`) on each accepted connection. */
function countWrites(server: { on(event: 'connection', listener: (socket: Socket) => void): unknown }) {
  const counter = { writes: 0 };
  server.on('connection', (socket) => {
    const target = socket as unknown as Record<string, (...args: unknown[]) => unknown>;
    for (const name of ['_write', '_writev']) {
      const original = target[name]!;
      target[name] = function (this: unknown, ...args: unknown[]) {
        counter.writes += 1;
        return original.apply(this, args);
      };
    }
  });
  return counter;
}

describe('socket writes under serve()', () => {
  it('sends the events of one upstream read in one socket write, headers with the first', async () => {
    // The upstream writes its role chunk, then, once the client has it, five content chunks, the
    // finish and [DONE] as separate HTTP chunks in one TCP write (what a busy gateway reads at once).
    let releaseRest: () => void = () => {};
    const rest = new Promise<void>((resolve) => {
      releaseRest = resolve;
    });
    const upstream = createServer((req, res) => {
      req.resume();
      req.on('end', async () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(chunk({ role: 'assistant', content: '' }));
        await rest;
        res.socket!.cork();
        for (let i = 0; i < 5; i++) res.write(chunk({ content: `t${i}` }));
        res.write(chunk({}, 'stop'));
        res.end('data: [DONE]\n\n');
        res.socket!.uncork();
      });
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    closers.push(() => new Promise((resolve) => upstream.close(() => resolve())));
    const gateway = createGateway({
      upstreams: [
        {
          name: 'up',
          url: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`,
          dialects: ['openai-chat'],
          fetch: createUndiciFetch(),
        },
      ],
    });
    const served = await serve(gateway.fetch);
    closers.push(async () => {
      await gateway.close();
      await served.close();
    });
    const counter = countWrites(served.server);

    const body = await new Promise<string>((resolve, reject) => {
      const req = httpRequest(`${served.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
      });
      req.on('error', reject);
      req.on('response', (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (piece: string) => {
          text += piece;
          if (text.includes('"role"')) releaseRest();
        });
        res.on('end', () => resolve(text));
      });
      req.end(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true }));
    });

    assert.equal(body.match(/^data: /gm)?.length, 8, 'every event arrived');
    assert.match(body, /data: \[DONE\]/);
    // Headers + role chunk, then everything else: one write per upstream read (a read split by the
    // kernel could make it three; one write per upstream HTTP chunk made it nine).
    assert.ok(counter.writes <= 3, `${counter.writes} socket writes for two upstream reads`);
  });
});
