import { spawnSync } from 'node:child_process';
import { createServer } from 'node:net';

/**
 * Throws, naming the package and how to install it, when redis-server is not on the PATH (what needs it
 * fails, never skips). `purpose` says what needs it, for the message.
 */
export function requireRedisServer(purpose: string): void {
  const found = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
  if (found.error !== undefined || found.status !== 0) {
    throw new Error(
      `redis-server is not installed: ${purpose} need it (apt-get install redis-server; .ci/run installs it)`,
    );
  }
}

/** A port on 127.0.0.1 that was free a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
