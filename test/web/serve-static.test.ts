import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { PLAYGROUND_CSP, serveStatic } from '../../src/node/serve-static.ts';
import { startGateway, type TestGateway } from '../helpers/gateway.ts';

describe('serveStatic', () => {
  let dir: string;
  let handler: ReturnType<typeof serveStatic>;
  const get = (path: string, init: RequestInit = {}) => handler(new Request(`http://h${path}`, init));

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'tokenwire-static-'));
    writeFileSync(join(dir, 'index.html'), '<!doctype html><title>t</title>');
    writeFileSync(join(dir, 'app.js'), 'console.log(1)');
    writeFileSync(join(dir, '.secret.js'), 'no');
    writeFileSync(join(dir, 'data.bin'), 'no');
    mkdirSync(join(dir, 'sub'));
    writeFileSync(join(dir, 'sub', 'style.css'), 'a{}');
    writeFileSync(join(tmpdir(), 'tokenwire-outside.js'), 'no');
    handler = serveStatic({ root: dir });
  });
  after(() => {
    rmSync(dir, { recursive: true, force: true });
    rmSync(join(tmpdir(), 'tokenwire-outside.js'), { force: true });
  });

  it('serves / as index.html with a strict CSP, and files by type', async () => {
    const index = (await get('/'))!;
    assert.equal(index.status, 200);
    assert.equal(index.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.equal(index.headers.get('content-security-policy'), PLAYGROUND_CSP);
    assert.match(PLAYGROUND_CSP, /connect-src 'self'/);
    assert.equal(await index.text(), '<!doctype html><title>t</title>');
    const js = (await get('/app.js'))!;
    assert.equal(js.headers.get('content-type'), 'text/javascript; charset=utf-8');
    assert.equal(js.headers.get('x-content-type-options'), 'nosniff');
    assert.equal((await get('/sub/style.css'))!.headers.get('content-type'), 'text/css; charset=utf-8');
  });

  it('answers HEAD without a body and revalidates with the ETag', async () => {
    const head = (await get('/app.js', { method: 'HEAD' }))!;
    assert.equal(head.status, 200);
    assert.equal(head.body, null);
    const etag = head.headers.get('etag')!;
    const again = (await get('/app.js', { headers: { 'if-none-match': etag } }))!;
    assert.equal(again.status, 304);
  });

  it('leaves everything else to the next handler', async () => {
    for (const path of [
      '/missing.js',
      '/data.bin',
      '/.secret.js',
      '/sub',
      '/../tokenwire-outside.js',
      '/%2e%2e/tokenwire-outside.js',
      '/sub/..%2f..%2ftokenwire-outside.js',
      '/%00.js',
      '/%E0%A4%A.js',
    ]) {
      assert.equal(await get(path), undefined, path);
    }
    assert.equal(await get('/', { method: 'POST', body: '{}' }), undefined);
  });

  it('explains a missing build at / instead of a bare 404', async () => {
    const missing = serveStatic({ root: join(dir, 'nope') });
    const page = (await missing(new Request('http://h/')))!;
    assert.equal(page.status, 503);
    assert.match(await page.text(), /not built.*npm run build/s);
    assert.equal(await missing(new Request('http://h/app.js')), undefined);
  });
});

describe('the gateway with the playground as fallback', () => {
  let g: TestGateway;
  let dir: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tokenwire-static-'));
    writeFileSync(join(dir, 'index.html'), '<!doctype html><title>playground</title>');
    g = await startGateway({ gateway: { fallback: serveStatic({ root: dir }) } });
  });
  after(async () => {
    await g?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves the page at GET / and keeps POST / for TGI', async () => {
    const page = await fetch(`${g.url}/`);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /playground/);
    const tgi = await fetch(`${g.url}/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: 'hi', parameters: { max_new_tokens: 3 }, stream: true }),
    });
    assert.equal(tgi.status, 200);
    assert.match(tgi.headers.get('content-type') ?? '', /event-stream/);
    await tgi.text();
    const missing = await fetch(`${g.url}/nothing-here.js`);
    assert.equal(missing.status, 404);
    await missing.text();
  });
});
