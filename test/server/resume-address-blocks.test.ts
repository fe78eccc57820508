import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, describe, it } from 'node:test';
import { DIALECT_IDS } from '../../src/dialects/dialect.ts';
import { serve } from '../../src/node/serve.ts';
import { createGuardedGateway } from '../../src/server/guard/guard-gateway.ts';
import { clientBlock } from '../../src/server/http/client-identity.ts';
import { MemoryResumeStore } from '../../src/server/resume/memory-resume-store.ts';
import { createSim } from '../../src/sim/create-sim.ts';

// Without API keys a client is an address, and rotating through a block's addresses
// must not defeat the per-client resume bound (1,000 streams from 1,000 loopback addresses evicted a
// victim's resumable stream).

const closers: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const close of closers.reverse()) await close();
});

async function gateway(store: MemoryResumeStore): Promise<number> {
  const sim = createSim({ timing: { tokensPerSecond: 2000, loadMs: 0 } });
  const { gateway: g, fetch } = createGuardedGateway({
    upstreams: [
      { name: 'sim', url: 'http://sim.internal', dialects: DIALECT_IDS, fetch: sim.fetch, models: ['sim'] },
    ],
    keepaliveMs: 0,
    resumeStore: store,
  });
  const served = await serve(fetch);
  closers.push(async () => {
    await g.close();
    await served.close();
  });
  return served.port;
}

/** A one-token stream (or a resume) from a given local address (127.x.y.z works on Linux loopback). */
function postFrom(localAddress: string, port: number, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; streamId: string | undefined; text: string }>((resolve, reject) => {
    const payload = JSON.stringify({
      model: 'sim',
      stream: true,
      max_tokens: 1,
      messages: [{ role: 'user', content: 'hi' }],
    });
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        localAddress,
        agent: false,
        method: 'POST',
        path: '/v1/chat/completions',
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
          ...headers,
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            streamId: res.headers['x-tokenwire-stream-id'] as string | undefined,
            text,
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

describe('resume store bounds per address block', () => {
  it('names the /24 of an IPv4 address and the /64 of an IPv6 one; keys and unknowns are their own', () => {
    assert.equal(clientBlock('ip:127.0.0.3'), 'ip:127.0.0.0/24');
    assert.equal(clientBlock('ip:10.20.30.255'), 'ip:10.20.30.0/24');
    assert.equal(clientBlock('ip:::ffff:127.0.0.9'), 'ip:127.0.0.0/24');
    assert.equal(clientBlock('ip:2001:db8:0:1::5'), 'ip:2001:db8:0:1::/64');
    assert.equal(clientBlock('ip:2001:0DB8:0000:0001:ffff:1:2:3'), 'ip:2001:db8:0:1::/64');
    assert.equal(clientBlock('ip:2001:db8:0:1:a:b:1.2.3.4'), 'ip:2001:db8:0:1::/64');
    assert.equal(clientBlock('ip:fe80::1%eth0'), 'ip:fe80:0:0:0::/64');
    assert.notEqual(clientBlock('ip:2001:db8:0:2::5'), clientBlock('ip:2001:db8:0:1::5'));
    assert.equal(clientBlock('ip:::1'), 'ip:0:0:0:0::/64');
    assert.equal(clientBlock('key:abc'), 'key:abc');
    assert.equal(clientBlock(''), '');
    assert.equal(clientBlock('ip:not-an-address'), 'ip:not-an-address');
  });

  it('500 streams from 250 rotating addresses of one /24 evict their own, not a quiet client’s', async () => {
    const store = new MemoryResumeStore({ maxStreams: 100 });
    const port = await gateway(store);
    const victim = await postFrom('127.0.1.2', port);
    assert.equal(victim.status, 200);
    assert.ok(victim.streamId);
    // Every stream from another address than the one before: each address holds as few as the victim's.
    let sent = 0;
    let firstOfFlood: string | undefined;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (sent < 500) {
          const address = `127.0.0.${2 + (sent % 250)}`;
          sent += 1;
          const answer = await postFrom(address, port);
          assert.equal(answer.status, 200);
          firstOfFlood ??= answer.streamId;
        }
      }),
    );
    assert.equal(store.size, 100, 'the store is full');
    const resumed = await postFrom('127.0.1.2', port, { 'last-event-id': `${victim.streamId}.1` });
    assert.equal(resumed.status, 200, resumed.text);
    assert.match(resumed.text, /data: \[DONE\]/);
    // The flood's oldest went instead.
    const evicted = await postFrom('127.0.0.2', port, { 'last-event-id': `${firstOfFlood}.1` });
    assert.equal(evicted.status, 404);
  });

  it('within one block, the address holding the most loses its oldest first', async () => {
    const store = new MemoryResumeStore({ maxStreams: 50 });
    const port = await gateway(store);
    const quiet = await postFrom('127.0.2.2', port);
    for (let i = 0; i < 120; i++) assert.equal((await postFrom('127.0.2.3', port)).status, 200);
    const resumed = await postFrom('127.0.2.2', port, { 'last-event-id': `${quiet.streamId}.1` });
    assert.equal(resumed.status, 200, resumed.text);
  });
});
