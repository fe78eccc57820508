import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { type IncomingRequest, requestTarget } from '../../src/server/http/incoming-request.ts';

const request = (url: string) => ({ url }) as unknown as IncomingRequest;

/** What the target must equal: the path and query as the URL parser reads them. */
function parsed(url: string) {
  const u = new URL(url);
  return { path: u.pathname.replace(/\/+$/, '') || '/', format: u.searchParams.get('format') };
}

describe('requestTarget', () => {
  it('reads path and query as the URL parser does, for plain and tricky URLs alike', () => {
    const segment = fc.oneof(
      fc.stringMatching(/^[A-Za-z0-9_-]{0,8}$/),
      fc.constantFrom('.', '..', '%2F', '%2e', 'a\\b', 'é', ' ', ':', '@', ';x'),
    );
    const url = fc
      .tuple(
        fc.constantFrom('http://127.0.0.1:8080', 'http://gw.test', 'https://[::1]:9'),
        fc.array(segment, { maxLength: 5 }),
        fc.constantFrom('', '/', '//'),
        fc.constantFrom(
          '',
          '?format=text',
          '?a=1&format=dialect',
          '?format',
          '#frag',
          '?x=1#y',
          '?format=%74ext',
        ),
      )
      .map(([origin, segments, trailing, tail]) => `${origin}/${segments.join('/')}${trailing}${tail}`);
    fc.assert(
      fc.property(url, (href) => {
        const target = requestTarget(request(href));
        const expected = parsed(href);
        assert.equal(target.path, expected.path, href);
        assert.equal(target.query('format'), expected.format, href);
        assert.equal(target.url.href, new URL(href).href);
      }),
      { numRuns: 500 },
    );
  });

  it('is worked out once per request and shared', () => {
    const incoming = request('http://gw.test/v1/chat/completions/');
    const first = requestTarget(incoming);
    assert.equal(first.path, '/v1/chat/completions');
    assert.equal(requestTarget(incoming), first);
  });

  it('throws on a URL the parser refuses, as new URL does', () => {
    assert.throws(() => requestTarget(request('not a url')), TypeError);
  });
});
