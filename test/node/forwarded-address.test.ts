import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { forwardedClientAddress, trustedProxySet } from '../../src/node/forwarded-address.ts';
import { serve } from '../../src/node/serve.ts';
import { clientIdentityOf } from '../../src/server/http/client-identity.ts';

describe('the client address behind a trusted proxy', () => {
  const trusted = trustedProxySet(['10.0.0.1', '10.0.0.2']);

  it('believes X-Forwarded-For only from a trusted proxy, read from the right', () => {
    assert.equal(forwardedClientAddress('10.0.0.1', '203.0.113.7', trusted), '203.0.113.7');
    // A chain of trusted proxies is skipped; the client's own claims left of its address are never read.
    assert.equal(
      forwardedClientAddress('10.0.0.1', '6.6.6.6, 203.0.113.7, 10.0.0.2', trusted),
      '203.0.113.7',
    );
    assert.equal(forwardedClientAddress('10.0.0.1', ['6.6.6.6', '203.0.113.7'], trusted), '203.0.113.7');
    // From anyone else the header is the client's own claim: ignored.
    assert.equal(forwardedClientAddress('198.51.100.4', '203.0.113.7', trusted), '198.51.100.4');
    assert.equal(forwardedClientAddress('10.0.0.1', '203.0.113.7', new Set()), '10.0.0.1');
    // No header, an empty hop or only proxies: the proxy's own address.
    assert.equal(forwardedClientAddress('10.0.0.1', undefined, trusted), '10.0.0.1');
    assert.equal(forwardedClientAddress('10.0.0.1', '203.0.113.7, ', trusted), '10.0.0.1');
    assert.equal(forwardedClientAddress('10.0.0.1', '10.0.0.2', trusted), '10.0.0.1');
    assert.equal(forwardedClientAddress('10.0.0.1', 'x'.repeat(200), trusted), '10.0.0.1');
  });

  it('takes a dual-stack socket’s ::ffff: form as the IPv4 address it is', () => {
    assert.equal(forwardedClientAddress('::ffff:10.0.0.1', '::ffff:203.0.113.7', trusted), '203.0.113.7');
    assert.equal(
      forwardedClientAddress('::ffff:10.0.0.1', '203.0.113.7', trustedProxySet(['::ffff:10.0.0.1'])),
      '203.0.113.7',
    );
  });

  it('serve() records the forwarded address as the client’s only with trustProxy', async () => {
    const seen: (string | undefined)[] = [];
    const handler = (request: Request) => {
      seen.push(clientIdentityOf(request).address);
      return new Response('ok');
    };
    const plainServer = await serve(handler);
    const behindProxy = await serve(handler, { trustProxy: ['127.0.0.1'] });
    try {
      for (const served of [plainServer, behindProxy]) {
        const response = await fetch(served.url, { headers: { 'x-forwarded-for': '203.0.113.7' } });
        await response.text();
      }
      assert.match(seen[0]!, /127\.0\.0\.1$/);
      assert.equal(seen[1], '203.0.113.7');
    } finally {
      await plainServer.close();
      await behindProxy.close();
    }
  });
});
