/**
 * The bare pipe of `bench/gateway-vs-pipe.ts`: a node:http server that forwards each request
 * with `http.request` on a keep-alive agent and pipes the response back, nothing else. It imports
 * nothing but node:http, so its RSS is what a pipe needs, not what tokenwire's modules take.
 * Usage: `node bare-pipe.js <upstream url>`; prints its own URL on the first line of stdout and serves
 * until it is sent SIGTERM (or its stdin closes, so it never outlives the bench that started it).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

const upstreamUrl = process.argv[2];
if (upstreamUrl === undefined) {
  console.error('usage: bare-pipe.js <upstream url>');
  process.exit(2);
}
const target = new URL(upstreamUrl);
const agent = new http.Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });

const server = http.createServer((req, res) => {
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
      upstreamRes.pipe(res);
    },
  );
  upstream.on('error', () => res.destroy());
  res.on('close', () => {
    if (!res.writableFinished) upstream.destroy();
  });
  req.pipe(upstream);
});

server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`http://127.0.0.1:${port}\n`);
});
process.on('SIGTERM', () => process.exit(0));
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
