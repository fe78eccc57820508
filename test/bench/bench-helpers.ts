import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { DialectId } from '../../src/dialects/dialect.ts';
import { getDialect } from '../../src/dialects/registry.ts';
import { type ServedHandler, serve } from '../../src/node/serve.ts';
import { createSim, type Sim } from '../../src/sim/index.ts';
import type { SimTiming } from '../../src/sim/timing.ts';

export interface ServedSim {
  sim: Sim;
  served: ServedHandler;
  /** The endpoint of a dialect on this simulator. */
  url(dialect?: DialectId): string;
  close(): Promise<void>;
}

/** The simulator with exact timing (no jitter, no cold start), served on 127.0.0.1 port 0. */
export async function serveSim(timing: Partial<SimTiming> = {}): Promise<ServedSim> {
  const sim = createSim({ timing: { jitter: 0, loadMs: 0, ...timing } });
  const served = await serve(sim.fetch, { host: '127.0.0.1', port: 0 });
  return {
    sim,
    served,
    url: (dialect = 'openai-chat') => `${served.url}${getDialect(dialect).paths[0]}`,
    close: () => served.close(),
  };
}

export interface SimProcess {
  url(dialect?: DialectId): string;
  close(): Promise<void>;
}

/**
 * The simulator in a child process (its own core on a 2-core machine), so a bench test measures the
 * bench and not a simulator fighting it for the same event loop. Killed by its pid on close.
 */
export async function spawnSim(timing: Partial<SimTiming> = {}): Promise<SimProcess> {
  const script = fileURLToPath(new URL('./sim-process.js', import.meta.url));
  const child = spawn(process.execPath, [script, JSON.stringify(timing)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const base = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (data: Buffer) => {
      out += data.toString();
      const line = out.indexOf('\n');
      if (line !== -1) resolve(out.slice(0, line).trim());
    });
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`the simulator process exited (${code})`)));
  });
  return {
    url: (dialect = 'openai-chat') => `${base}${getDialect(dialect).paths[0]}`,
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.stdin.end();
        setTimeout(() => child.kill(), 2000).unref();
      }),
  };
}
