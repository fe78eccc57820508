import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { DIALECT_IDS } from '../src/dialects/dialect.ts';
import { RedisResumeStore, type RedisResumeStoreOptions } from '../src/node/redis-resume-store.ts';
import { serve } from '../src/node/serve.ts';
import { createGateway, type Gateway } from '../src/server/create-gateway.ts';
import { createSim } from '../src/sim/create-sim.ts';
import { freePort, requireRedisServer } from './redis-process.ts';

/** A redis-server with an RDB file that can be stopped and started again on the same port and data. */
export interface PersistentRedis {
  url: string;
  port: number;
  /** `SAVE`: the snapshot a later restart comes back from. */
  save(): Promise<void>;
  /** SIGTERM (it writes its snapshot as it goes: `save` is configured) or SIGKILL (no snapshot). */
  stop(signal: 'SIGTERM' | 'SIGKILL'): Promise<void>;
  /** Starts it again from its RDB file; resolves once it answers PING (the data loaded). */
  start(): Promise<void>;
  /** Stops it for good and removes its directory. */
  close(): Promise<void>;
}

/**
 * A private redis-server on 127.0.0.1 that persists to an RDB file in a temporary directory (a save
 * point it never reaches on its own, so only SAVE and a SIGTERM shutdown write it), for what a restart
 * from a snapshot does to the resume data (test/node/redis-resume-restart.test.ts and `npm run soak`).
 * Throws (a test fails, never skips) without redis-server.
 */
export async function startPersistentRedis(): Promise<PersistentRedis> {
  requireRedisServer('the Redis restart checks');
  const dir = mkdtempSync(join(tmpdir(), 'tokenwire-redis-'));
  const port = await freePort();
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  const url = `redis://127.0.0.1:${port}`;

  async function start(): Promise<void> {
    const started = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        dir,
        '--dbfilename',
        'dump.rdb',
        '--save',
        '86400 1000000',
        '--appendonly',
        'no',
        '--loglevel',
        'warning',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child = started;
    let output = '';
    started.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    started.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    exited = new Promise<void>((resolve) => started.once('exit', () => resolve()));
    const deadline = Date.now() + 15000;
    for (;;) {
      if (started.exitCode !== null)
        throw new Error(`redis-server exited at start-up: ${output.slice(-500)}`);
      if (await answers(url)) return;
      if (Date.now() > deadline)
        throw new Error(`redis-server did not answer on port ${port}: ${output.slice(-500)}`);
      await new Promise((resolve) => setTimeout(resolve, 30));
    }
  }

  async function stop(signal: 'SIGTERM' | 'SIGKILL'): Promise<void> {
    if (child !== undefined && child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exited;
  }

  await start();
  return {
    url,
    port,
    save: async () => {
      const client = new Redis(url, { maxRetriesPerRequest: 0 });
      try {
        await client.save();
      } finally {
        client.disconnect();
      }
    },
    stop,
    start,
    close: async () => {
      await stop('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** PING answered with PONG (not LOADING: the data is in). */
async function answers(url: string): Promise<boolean> {
  const client = new Redis(url, { maxRetriesPerRequest: 0, retryStrategy: () => null, lazyConnect: true });
  client.on('error', () => {});
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

/** One gateway replica on the Redis resume store, in front of its own simulator. */
export interface RedisReplica {
  url: string;
  gateway: Gateway;
  store: RedisResumeStore;
  close(): Promise<void>;
}

/**
 * A replica as the restart checks run it (the soak's and the test's): the Redis store with the given
 * heartbeat and follow timings, streams kept on disconnect (a client comes back), no keepalives.
 */
export async function startRedisReplica(
  redisUrl: string,
  tokensPerSecond: number,
  timings: Pick<RedisResumeStoreOptions, 'heartbeatMs' | 'producerTimeoutMs' | 'blockMs'>,
): Promise<RedisReplica> {
  const store = new RedisResumeStore(Object.assign({ url: redisUrl }, timings));
  await store.ready();
  const sim = createSim({ timing: { tokensPerSecond, loadMs: 0 } });
  const gateway = createGateway({
    upstreams: [
      { name: 'sim', url: 'http://sim.internal', dialects: DIALECT_IDS, fetch: sim.fetch, models: ['sim'] },
    ],
    resumeStore: store,
    keepStreamOnDisconnect: true,
    keepaliveMs: 0,
  });
  const served = await serve(gateway.fetch);
  return {
    url: served.url,
    gateway,
    store,
    close: async () => {
      await gateway.close();
      await served.close();
    },
  };
}
