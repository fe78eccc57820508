import { type ChildProcess, spawn } from 'node:child_process';
import { connect } from 'node:net';
import { freePort, requireRedisServer } from '../../bench/redis-process.ts';

export interface TestRedis {
  url: string;
  port: number;
  process: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Starts a private `redis-server` on 127.0.0.1 and a free port, with no persistence (`--save ''
 * --appendonly no`), and stops it on `stop()`. Throws (the test fails, never skips) when redis-server is
 * not installed.
 */
export async function startRedis(): Promise<TestRedis> {
  requireRedisServer('the Redis resume tests');
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    try {
      return await launch(port);
    } catch (error) {
      // Another process took the port between the probe and the start: try another.
      if (attempt >= 3) throw error;
    }
  }
}

async function launch(port: number): Promise<TestRedis> {
  const child = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--loglevel',
      'warning',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const deadline = Date.now() + 10000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`redis-server exited at start-up: ${output.slice(-500)}`);
    if (await answersPing(port)) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`redis-server did not answer on port ${port}: ${output.slice(-500)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    process: child,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}

async function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let reply = '';
    socket.setTimeout(500, () => {
      socket.destroy();
      resolve(false);
    });
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      reply += chunk.toString();
      if (reply.includes('\r\n')) {
        socket.destroy();
        resolve(reply.startsWith('+PONG'));
      }
    });
    socket.on('error', () => resolve(false));
  });
}
