/**
 * The middle process of the gateway bench: `bare` (a few lines of node:http piping, the baseline any
 * proxy is measured against) or `gateway` (createGuardedGateway served by src/node/serve.ts, as
 * `tokenwire serve` runs it, defaults unchanged: per-event flush, SSE ids, the in-memory resume store,
 * keepalives).
 * Usage: `node gateway-proxy.js bare|gateway <upstream url>` (forked with IPC).
 *
 * Over IPC it answers `{ sample: true }` with its CPU time and memory, `{ gc: true }` with a full
 * collection first (started with --expose-gc), so the bench reads what this process spent.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import v8 from 'node:v8';
import { serve } from '../src/node/serve.ts';
import { createUndiciFetch } from '../src/node/undici-fetch.ts';
import { createGateway } from '../src/server/create-gateway.ts';
import { createGuardedGateway } from '../src/server/guard/guard-gateway.ts';
import { DEFAULT_UPSTREAM_TIMEOUT_MS, type Upstream } from '../src/server/upstream/upstream.ts';

const [mode, upstreamUrl] = process.argv.slice(2);
if ((mode !== 'bare' && mode !== 'gateway') || upstreamUrl === undefined) {
  console.error('usage: gateway-proxy.js bare|gateway <upstream url>');
  process.exit(2);
}

/** The baseline: pipe the request up and the response down, nothing else. */
function startBare(target: URL): Promise<string> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });
  const server = http.createServer({ noDelay: true }, (req, res) => {
    const upstream = http.request(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: req.headers,
        agent,
      },
      (upstreamRes) => {
        res.writeHead(upstreamRes.statusCode ?? 502, upstreamRes.headers);
        res.flushHeaders();
        upstreamRes.pipe(res);
      },
    );
    upstream.on('socket', (socket) => socket.setNoDelay(true));
    upstream.on('error', () => res.destroy());
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
    req.pipe(upstream);
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const address = server.address() as AddressInfo;
      resolve(`http://127.0.0.1:${address.port}`);
    });
  });
}

async function startGateway(target: string): Promise<string> {
  // As `tokenwire serve --upstream` does: undici's dispatch to the upstream. BENCH_UPSTREAM_FETCH=global
  // measures the global fetch instead (what Request, Response and Web Streams cost).
  const fetch = process.env.BENCH_UPSTREAM_FETCH === 'global' ? undefined : createUndiciFetch();
  // What `tokenwire serve` runs: the gateway behind its guard (keys, limits, CORS, redaction), with the
  // CLI's defaults (none of the guard's set; the upstream timeout on).
  // BENCH_GATEWAY=unguarded measures createGateway alone (what the guard costs).
  const timeouts = { connectMs: DEFAULT_UPSTREAM_TIMEOUT_MS, idleMs: DEFAULT_UPSTREAM_TIMEOUT_MS };
  const upstreams: Upstream[] = [
    { name: 'sim', url: target, dialects: ['openai-chat'], models: ['sim'], fetch, timeouts },
  ];
  const handler =
    process.env.BENCH_GATEWAY === 'unguarded'
      ? createGateway({ upstreams }).fetch
      : createGuardedGateway({ upstreams }).fetch;
  const served = await serve(handler);
  return served.url;
}

const url = mode === 'bare' ? await startBare(new URL(upstreamUrl)) : await startGateway(upstreamUrl);

declare const gc: (() => void) | undefined;

process.on('message', (message: { sample?: boolean; gc?: boolean; exit?: boolean; snapshot?: string }) => {
  // A heap snapshot for bench/heap-snapshot-top.ts (diagnosis, not part of the figures).
  if (message.snapshot !== undefined)
    process.send?.({ snapshotFile: v8.writeHeapSnapshot(message.snapshot) });
  // A clean exit, so a --cpu-prof profile gets written.
  if (message.exit === true) process.exit(0);
  if (message.gc === true && typeof gc === 'function') {
    gc();
    gc();
  }
  if (message.sample === true || message.gc === true) {
    const memory = process.memoryUsage();
    process.send?.({ cpu: process.cpuUsage(), rss: memory.rss, heapUsed: memory.heapUsed });
  }
});
process.send?.({ ready: true, url });
