import { type ChildProcess, fork } from 'node:child_process';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));

/** A child's memory and CPU, as it reports them over IPC. */
export interface Sample {
  cpu: { user: number; system: number };
  rss: number;
  heapUsed: number;
}

/** Sends an IPC message and waits for the child's next message that has `key`. */
export function askChild<T>(child: ChildProcess, message: object, key: string): Promise<T> {
  return new Promise((resolve) => {
    const listener = (reply: Record<string, unknown>) => {
      if (key in reply) {
        child.off('message', listener);
        resolve(reply as T);
      }
    };
    child.on('message', listener);
    child.send(message);
  });
}

/** Forks a bench script beside this one and waits until it says it listens (`{ready, url}`). */
export function startChild(
  script: string,
  args: string[],
  env: Record<string, string> = {},
  flags: readonly string[] = [],
): Promise<{ child: ChildProcess; url: string }> {
  const child = fork(`${here}${script}`, args, {
    execArgv: ['--expose-gc', ...flags],
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
    child.on('message', (message: { ready?: boolean; url?: string }) => {
      if (message.ready === true && message.url !== undefined) resolve({ child, url: message.url });
    });
  });
}

/** Asks a child to exit cleanly (so a --cpu-prof profile is written), and kills it if it does not. */
export async function stopChild(child: ChildProcess): Promise<void> {
  child.removeAllListeners('exit');
  if (child.exitCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.send({ exit: true });
  await Promise.race([exited, delay(5000)]);
  if (child.exitCode === null) child.kill();
}
