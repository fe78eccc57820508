import assert from 'node:assert/strict';
import { createServer, request, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { writeNow } from '../../src/node/write-now.ts';

/** Runs `act` on a live chunked response, then reads the whole body the client got. */
async function withResponse(act: (res: ServerResponse) => void): Promise<string> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    act(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    return await new Promise<string>((resolve, reject) => {
      request({ host: '127.0.0.1', port, path: '/' }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (part: string) => {
          text += part;
        });
        res.on('end', () => resolve(text));
      })
        .on('error', reject)
        .end();
    });
  } finally {
    server.close();
  }
}

describe('writeNow', () => {
  it('hands the text to the socket in the call, where res.write leaves it corked until a later tick', async () => {
    const seen: { corked: number; buffered: number }[] = [];
    const body = await withResponse((res) => {
      res.flushHeaders();
      setTimeout(() => {
        const socket = res.socket!;
        res.write('held ');
        seen.push({ corked: socket.writableCorked, buffered: socket.writableLength });
        process.nextTick(() => {
          writeNow(res, 'sent');
          seen.push({ corked: socket.writableCorked, buffered: socket.writableLength });
          res.end();
        });
      }, 10);
    });
    assert.equal(body, 'held sent');
    // node:http alone: corked, the bytes still in the stream's buffer.
    assert.ok(seen[0]!.corked > 0 && seen[0]!.buffered > 0);
    // writeNow: uncorked, and the bytes gone to the kernel (a loopback socket takes them at once).
    assert.deepEqual(seen[1], { corked: 0, buffered: 0 });
  });

  it('keeps a cork taken before it, so text of the same tick leaves together with what it held', async () => {
    const seen: number[] = [];
    const body = await withResponse((res) => {
      res.cork();
      res.flushHeaders();
      writeNow(res, 'a');
      writeNow(res, 'b');
      seen.push(res.socket!.writableCorked, res.socket!.writableLength);
      process.nextTick(() => {
        res.uncork();
        res.end();
      });
    });
    assert.equal(body, 'ab');
    assert.equal(seen[0], 1, 'the outer cork stays');
    assert.ok(seen[1]! > 0, 'the headers and both texts wait for it');
  });
});
