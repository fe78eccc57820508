import { existsSync, type Stats } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { extname, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Serves GET/HEAD for files under a directory; undefined for anything it does not serve. */
export type StaticHandler = (request: Request) => Promise<Response | undefined>;

export interface ServeStaticOptions {
  /** The directory to serve. Default: the built playground (see `playgroundRoot`). */
  root?: string | URL | undefined;
}

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
};

/**
 * The page may load only its own script and styles and talk only to the gateway that served it: an
 * answer that smuggled markup past the Markdown sanitizer still could not run script or fetch from
 * outside.
 */
export const PLAYGROUND_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * Where the built playground is: `dist/web` beside `dist/node` in the package, or the repository's
 * `dist/web` when this file runs from `src/` (tsx) or from the test build (`.build/src/node`).
 * Undefined when it was never built (`node scripts/build-web.mjs`, part of `npm run build`).
 */
export function playgroundRoot(): string | undefined {
  for (const candidate of ['../web/', '../../dist/web/', '../../../dist/web/']) {
    const dir = fileURLToPath(new URL(candidate, import.meta.url));
    if (existsSync(`${dir}index.html`)) return dir;
  }
  return undefined;
}

/**
 * A small static file handler for the playground, to pass as the gateway's `fallback`. GET and HEAD
 * only; `/` is `index.html`; only files with a known type, never dot-files, never outside the root.
 * Files are read per request (they are small), so a rebuilt bundle is served without a restart;
 * `Cache-Control: no-cache` with an ETag lets the browser revalidate cheaply.
 */
export function serveStatic(options: ServeStaticOptions = {}): StaticHandler {
  const given = options.root;
  const root =
    given === undefined ? playgroundRoot() : resolve(given instanceof URL ? fileURLToPath(given) : given);
  return async (request) => {
    if (request.method !== 'GET' && request.method !== 'HEAD') return undefined;
    const path = filePath(new URL(request.url).pathname);
    if (path === undefined) return undefined;
    if (root === undefined) return path === 'index.html' ? notBuilt(request) : undefined;
    const type = CONTENT_TYPES[extname(path).toLowerCase()];
    if (type === undefined) return undefined;
    const file = resolve(root, path);
    if (!file.startsWith(root.endsWith(sep) ? root : root + sep)) return undefined;
    let info: Stats | undefined;
    try {
      info = await stat(file);
    } catch {
      info = undefined;
    }
    if (info === undefined || !info.isFile()) return path === 'index.html' ? notBuilt(request) : undefined;
    const etag = `"${info.size.toString(16)}-${Math.floor(info.mtimeMs).toString(16)}"`;
    const headers: Record<string, string> = {
      'content-type': type,
      'cache-control': 'no-cache',
      etag,
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
    };
    if (type.startsWith('text/html')) headers['content-security-policy'] = PLAYGROUND_CSP;
    if (request.headers.get('if-none-match') === etag) return new Response(null, { status: 304, headers });
    headers['content-length'] = String(info.size);
    if (request.method === 'HEAD') return new Response(null, { status: 200, headers });
    return new Response(new Uint8Array(await readFile(file)), { status: 200, headers });
  };
}

/** The relative file a URL path names, or undefined when it is not a plain, visible, in-root path. */
function filePath(pathname: string): string | undefined {
  let decoded: string;
  try {
    decoded = decodeURIComponent(pathname);
  } catch {
    return undefined;
  }
  if (decoded.includes('\0') || decoded.includes('\\')) return undefined;
  const parts = decoded.split('/').filter((part) => part !== '');
  // No `..`, no dot-files or dot-directories.
  if (parts.some((part) => part.startsWith('.'))) return undefined;
  if (parts.length === 0 || (parts.length === 1 && parts[0] === 'index.html')) return 'index.html';
  return parts.join('/');
}

function notBuilt(request: Request): Response {
  const body =
    '<!doctype html><meta charset="utf-8"><title>tokenwire playground not built</title>' +
    '<p>The playground page is not built. Run <code>npm run build</code> ' +
    '(or <code>node scripts/build-web.mjs</code>) in the tokenwire checkout, then reload.</p>';
  return new Response(request.method === 'HEAD' ? null : body, {
    status: 503,
    headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' },
  });
}
