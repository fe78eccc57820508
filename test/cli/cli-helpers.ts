import type { CliIo } from '../../src/cli/cli-io.ts';
import { runCli } from '../../src/cli/run-cli.ts';
import { type ServedHandler, serve } from '../../src/node/serve.ts';
import { createSim, type Sim } from '../../src/sim/index.ts';
import type { SimOptions } from '../../src/sim/sim-options.ts';

/** A CliIo that keeps what was written, with its own Ctrl-C and a colour-free environment. */
export class FakeIo implements CliIo {
  out = '';
  err = '';
  readonly controller = new AbortController();
  readonly signal: AbortSignal;
  readonly env: Record<string, string | undefined>;
  readonly stdout: CliIo['stdout'];
  readonly stderr: CliIo['stderr'];
  #onOut: (() => void) | undefined;

  constructor(options: { tty?: boolean; env?: Record<string, string | undefined> } = {}) {
    this.signal = this.controller.signal;
    this.env = options.env ?? { NO_COLOR: '1' };
    const tty = options.tty === true;
    this.stdout = {
      isTTY: tty,
      columns: 120,
      write: (text: string) => {
        this.out += text;
        this.#onOut?.();
        return true;
      },
    };
    this.stderr = {
      isTTY: tty,
      write: (text: string) => {
        this.err += text;
        return true;
      },
    };
  }

  /** Resolves once stdout holds at least `chars` characters. */
  waitForOutput(chars = 1): Promise<void> {
    return new Promise((resolve) => {
      const check = () => {
        if (this.out.length >= chars) {
          this.#onOut = undefined;
          resolve();
        }
      };
      this.#onOut = check;
      check();
    });
  }

  /** Ctrl-C. */
  interrupt(): void {
    this.controller.abort();
  }
}

/** Runs the CLI in-process. */
export async function cli(argv: string[], io = new FakeIo()): Promise<{ code: number; io: FakeIo }> {
  const code = await runCli(argv, io);
  return { code, io };
}

export interface ServedSim {
  sim: Sim;
  served: ServedHandler;
  url: string;
  close(): Promise<void>;
}

/**
 * The simulator on 127.0.0.1 (port 0), warmed up: its first request pays the tokenizer load, and the
 * sim then catches up on its schedule in one burst, which would look like a buffering proxy.
 */
export async function serveSim(options: SimOptions = {}): Promise<ServedSim> {
  const sim = createSim({ ...options, timing: { loadMs: 0, ...options.timing } });
  const served = await serve(sim.fetch);
  const warm = await fetch(`${served.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-tokenwire-fault': 'tps=100000' },
    body: JSON.stringify({ model: 'sim', messages: [{ role: 'user', content: 'warm up' }], max_tokens: 2 }),
  });
  await warm.text();
  await sim.idle();
  return { sim, served, url: served.url, close: () => served.close() };
}

export interface Running {
  out: () => string;
  err: () => string;
  /** The first stdout line (the --json start-up record) once written. */
  started: Promise<Record<string, unknown>>;
  stop(): Promise<number>;
}

/** `tokenwire serve …` in-process, stopped like Ctrl-C. */
export function startServe(args: string[], env: Record<string, string> = {}): Running {
  const controller = new AbortController();
  let out = '';
  let err = '';
  let onLine: (line: string) => void = () => {};
  const firstLine = new Promise<string>((resolve) => {
    onLine = resolve;
  });
  const io: CliIo = {
    stdout: {
      write: (text: string) => {
        out += text;
        if (out.includes('\n')) onLine(out.split('\n')[0]!);
        return true;
      },
    },
    stderr: {
      write: (text: string) => {
        err += text;
        return true;
      },
    },
    env: { NO_COLOR: '1', ...env },
    signal: controller.signal,
  };
  const exit = runCli(['serve', '--port', '0', ...args], io);
  const started = Promise.race([
    firstLine.then((line) =>
      args.includes('--json') ? (JSON.parse(line) as Record<string, unknown>) : { line },
    ),
    exit.then((code) => {
      throw new Error(`serve exited with ${code}: ${err}`);
    }),
  ]);
  return {
    out: () => out,
    err: () => err,
    started,
    stop: async () => {
      controller.abort();
      return exit;
    },
  };
}
