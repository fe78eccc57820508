import cluster, { type Worker } from 'node:cluster';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { StreamSlots } from '../server/guard/guard-gateway.ts';
import {
  type IncomingRequest,
  markTakesIncomingRequest,
  requestTarget,
  takesIncomingRequest,
} from '../server/http/incoming-request.ts';
import { mergePrometheusText, monotonicPart } from '../server/observability/merge-prometheus.ts';
import type { MemoryResumeStore } from '../server/resume/memory-resume-store.ts';
import { type ClusterMessage, ClusterSender, unbatch } from './cluster-sender.ts';
import { PrimaryResumeStore, ResumeStoreHost } from './primary-resume-store.ts';

/** The environment variable that tells a forked process it is a `serve --workers` worker. */
const WORKER_ENV = 'TOKENWIRE_CLUSTER_WORKER';

/** The response header naming the worker that answered (`serve --workers` only): its cluster id. */
export const WORKER_HEADER = 'x-tokenwire-worker';

/**
 * Restarts allowed within `RESTART_WINDOW_MS` before the primary gives up: a worker that keeps dying
 * (a bug, no memory) would otherwise be restarted forever; past it everything stops and serve exits 1.
 */
export const MAX_RESTARTS = 5;
export const RESTART_WINDOW_MS = 60_000;

/** How long the primary waits for a worker's metrics before summing without them (a liveness bound). */
const METRICS_WAIT_MS = 2000;

/** `--workers N|auto` as a count (undefined when the text is neither). */
export function parseWorkerCount(text: string): number | undefined {
  if (text === 'auto') return availableParallelism();
  if (!/^[1-9][0-9]{0,3}$/.test(text)) return undefined;
  return Number(text);
}

export interface ClusterPrimaryOptions {
  workers: number;
  /** The arguments of the `tokenwire` command each worker runs (`serve …`). */
  args: readonly string[];
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
  /** Aborts on SIGINT/SIGTERM: every worker is then stopped (SIGTERM: its graceful shutdown). */
  signal: AbortSignal;
  /** The start-up line is JSON (`--json`): `workers` is added to it. */
  json: boolean;
  /** The store every worker's `PrimaryResumeStore` uses; undefined when the workers share Redis. */
  resumeStore: MemoryResumeStore | undefined;
  /** `--max-streams`, counted here across all workers; undefined: no limit. */
  maxStreams: number | undefined;
  /** How long a worker may take to shut down before it is killed. */
  shutdownDeadlineMs: number;
  /** The script each worker runs. Default: cluster-worker-entry.ts (the CLI's bin). */
  exec?: string | undefined;
}

interface WorkerState {
  worker: Worker;
  sender: ClusterSender;
  ready: boolean;
  /** Stream slots it holds (released when it exits). */
  slots: number;
  /** The pid of the worker it replaces (restarts). */
  replaces: number | undefined;
}

/**
 * The primary process of `tokenwire serve --workers N`: forks N workers that each run the whole serve
 * (they share the listening port through node:cluster), holds what they share — the memory resume
 * store (`ResumeStoreHost`), the stream-limit count, the `/metrics` sum — restarts a worker that dies
 * (at most MAX_RESTARTS in RESTART_WINDOW_MS), and on `signal` stops them all and resolves with the
 * exit code. Prints the first worker's start-up text, with the worker count added.
 */
export async function runClusterPrimary(options: ClusterPrimaryOptions): Promise<number> {
  const exec = options.exec ?? defaultExec();
  // JSON serialization, node:cluster's default: bench/README.md "Why the code is shaped as it is".
  cluster.setupPrimary({ exec, args: [...options.args] });
  const host = options.resumeStore === undefined ? undefined : new ResumeStoreHost(options.resumeStore);
  const states = new Map<number, WorkerState>();
  const collections = new Map<
    number,
    { waiting: Set<number>; texts: Map<number, string>; finish: () => void }
  >();
  let nextRid = 1;
  /** Each live worker's last metrics text (for a scrape it does not answer in time, and its exit). */
  const lastTexts = new Map<number, string>();
  /**
   * The counters and histograms of every worker that exited, as last seen, summed: added
   * to each scrape, so no summed counter goes down when a worker is replaced.
   */
  let retired = '';
  let totalSlots = 0;
  let stopping = false;
  const restarts: number[] = [];
  let startupText: string | undefined;
  let fatal: ((code: number) => void) | undefined;
  const fatalPromise = new Promise<number>((resolve) => {
    fatal = resolve;
  });
  /** Resolves with each worker's fate at start-up: ready (undefined) or its exit code. */
  const startups = new Map<number, (code: number | undefined) => void>();

  const collect = (asker: WorkerState, rid: unknown) => {
    const id = nextRid++;
    const targets = [...states.values()].filter((s) => s.ready && s.worker.isConnected());
    const texts = new Map<number, string>();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const finish = () => {
      if (!collections.delete(id)) return;
      clearTimeout(timer);
      // A live worker that did not answer in time counts with its last text, not as zero.
      for (const state of states.values()) {
        const last = lastTexts.get(state.worker.id);
        if (!texts.has(state.worker.id) && last !== undefined) texts.set(state.worker.id, last);
      }
      // In worker order: the sum's sample order is then the same on every scrape.
      const ordered = [...texts.entries()].sort((a, b) => a[0] - b[0]).map((entry) => entry[1]);
      if (retired !== '') ordered.push(retired);
      asker.sender.sendNow({ tw: 'metrics-text', rid, text: mergePrometheusText(ordered) });
    };
    collections.set(id, { waiting: new Set(targets.map((s) => s.worker.id)), texts, finish });
    timer = setTimeout(finish, METRICS_WAIT_MS);
    for (const target of targets) target.sender.sendNow({ tw: 'render', rid: id });
    if (targets.length === 0) finish();
  };

  const onMessage = (state: WorkerState, raw: unknown) => {
    for (const message of unbatch(raw)) {
      if (host?.receive(state.worker.id, state.sender, message)) continue;
      switch (message.tw) {
        case 'ready':
          state.ready = true;
          if (state.replaces !== undefined)
            options.stderr.write(
              `worker ${state.worker.process.pid} is serving in place of ${state.replaces}\n`,
            );
          startupText ??= String(message.text);
          startups.get(state.worker.id)?.(undefined);
          break;
        case 'slot-acquire': {
          const ok = options.maxStreams === undefined || totalSlots < options.maxStreams;
          if (ok) {
            totalSlots += 1;
            state.slots += 1;
          }
          state.sender.sendNow({ tw: 'slot', rid: message.rid, ok });
          break;
        }
        case 'slot-release':
          if (state.slots > 0) {
            state.slots -= 1;
            totalSlots -= 1;
          }
          break;
        case 'metrics':
          collect(state, message.rid);
          break;
        case 'rendered': {
          if (states.has(state.worker.id)) lastTexts.set(state.worker.id, String(message.text));
          const collection = collections.get(message.rid as number);
          if (collection === undefined) break;
          collection.texts.set(state.worker.id, String(message.text));
          collection.waiting.delete(state.worker.id);
          if (collection.waiting.size === 0) collection.finish();
          break;
        }
      }
    }
  };

  const fork = (replaces?: number): WorkerState => {
    const worker = cluster.fork({ [WORKER_ENV]: '1' });
    const state: WorkerState = {
      worker,
      ready: false,
      slots: 0,
      replaces,
      sender: new ClusterSender((message) => {
        if (worker.isConnected()) worker.send(message, undefined, ignoreError);
      }),
    };
    states.set(worker.id, state);
    worker.on('message', (message: unknown) => onMessage(state, message));
    // An IPC write to a worker that just died: its exit is handled below.
    worker.on('error', () => {});
    worker.once('exit', (code, signal) => {
      states.delete(worker.id);
      const last = lastTexts.get(worker.id);
      lastTexts.delete(worker.id);
      if (last !== undefined)
        retired = mergePrometheusText(
          retired === '' ? [monotonicPart(last)] : [retired, monotonicPart(last)],
        );
      totalSlots -= state.slots;
      host?.workerGone(
        worker.id,
        `its worker process (pid ${worker.process.pid}) died (${signal ?? `exit code ${code}`})`,
      );
      for (const collection of collections.values()) {
        // What it answered is in `retired` now: counted once.
        collection.texts.delete(worker.id);
        collection.waiting.delete(worker.id);
        if (collection.waiting.size === 0) collection.finish();
      }
      const startup = startups.get(worker.id);
      if (startup !== undefined && !state.ready) {
        startup(code ?? 1);
        return;
      }
      if (stopping) return;
      const now = Date.now();
      restarts.push(now);
      while (restarts.length > 0 && now - restarts[0]! > RESTART_WINDOW_MS) restarts.shift();
      if (restarts.length > MAX_RESTARTS) {
        options.stderr.write(
          `error: workers exited ${restarts.length} times within ${RESTART_WINDOW_MS / 1000} s: stopping\n`,
        );
        fatal?.(1);
        return;
      }
      options.stderr.write(
        `warning: worker ${worker.process.pid} exited (${signal ?? `code ${code}`}); starting another\n`,
      );
      fork(worker.process.pid);
    });
    return state;
  };

  const start = (): Promise<number | undefined> => {
    const state = fork(undefined);
    return new Promise((resolve) => {
      startups.set(state.worker.id, (code) => {
        startups.delete(state.worker.id);
        resolve(code);
      });
    });
  };

  // The first alone: a usage error or a port in use is then said once, not once per worker.
  let failed = await start();
  if (failed === undefined) {
    const rest = await Promise.all(Array.from({ length: options.workers - 1 }, start));
    failed = rest.find((code) => code !== undefined);
  }
  if (failed !== undefined) {
    await stopAll(states, options.shutdownDeadlineMs);
    return failed === 0 ? 1 : failed;
  }
  options.stdout.write(withWorkers(startupText ?? '', options.workers, options.json));

  // `stopping` at once: on Ctrl-C the whole process group gets SIGINT, and a worker that is quick to
  // exit must not be taken for one that died.
  const aborted = new Promise<number>((resolve) => {
    const stop = () => {
      stopping = true;
      resolve(0);
    };
    if (options.signal.aborted) stop();
    options.signal.addEventListener('abort', stop, { once: true });
  });
  const code = await Promise.race([aborted, fatalPromise]);
  stopping = true;
  const clean = await stopAll(states, options.shutdownDeadlineMs);
  await options.resumeStore?.shutdown();
  return code !== 0 ? code : clean ? 0 : 1;
}

/** SIGTERM to every worker (each ends its streams with its dialect's error), SIGKILL past the deadline. */
async function stopAll(states: Map<number, WorkerState>, deadlineMs: number): Promise<boolean> {
  const workers = [...states.values()].map((state) => state.worker);
  const exits = workers.map(
    (worker) =>
      new Promise<boolean>((resolve) => {
        if (worker.isDead()) resolve(worker.process.exitCode === 0);
        else worker.once('exit', (code) => resolve(code === 0));
      }),
  );
  for (const worker of workers) if (!worker.isDead()) worker.process.kill('SIGTERM');
  let timer: ReturnType<typeof setTimeout> | undefined;
  const inTime = await Promise.race([
    Promise.all(exits).then((codes) => codes.every(Boolean)),
    new Promise<undefined>((resolve) => {
      // A worker past its own deadline (bin.ts exits it 8 s after SIGTERM): killed, a little after.
      timer = setTimeout(() => resolve(undefined), deadlineMs + 2000);
    }),
  ]);
  clearTimeout(timer);
  if (inTime !== undefined) return inTime;
  for (const worker of workers) if (!worker.isDead()) worker.process.kill('SIGKILL');
  await Promise.all(exits);
  return false;
}

/** The first worker's start-up text with the worker count: a JSON field, or a line. */
function withWorkers(text: string, workers: number, json: boolean): string {
  if (json) {
    const newline = text.indexOf('\n');
    const first = newline === -1 ? text : text.slice(0, newline);
    try {
      const record = JSON.parse(first) as Record<string, unknown>;
      record.workers = workers;
      return `${JSON.stringify(record)}\n${newline === -1 ? '' : text.slice(newline + 1)}`;
    } catch {
      return text;
    }
  }
  return `${text}  workers: ${workers} processes on one port (node:cluster); resume, /metrics and --max-streams span them all\n`;
}

function defaultExec(): string {
  // Beside this module (.js built, .ts from source): it runs the CLI's bin.
  const extension = import.meta.url.endsWith('.ts') ? 'ts' : 'js';
  return fileURLToPath(new URL(`./cluster-worker-entry.${extension}`, import.meta.url));
}

function ignoreError(): void {}

/**
 * This process's part in `serve --workers` (undefined when it is not a worker): the primary-held
 * resume store, the global stream slots, the handler wrapper (summed `/metrics`, the worker header) and
 * the start-up text, sent to the primary rather than printed (it prints one worker's).
 */
export function joinCluster(): ClusterWorker | undefined {
  if (!cluster.isWorker || process.env[WORKER_ENV] !== '1' || process.send === undefined) return undefined;
  return new ClusterWorker();
}

export class ClusterWorker {
  /** The cluster's id of this worker (what `x-tokenwire-worker` says). */
  readonly id: number;
  readonly sender: ClusterSender;
  readonly resumeStore: PrimaryResumeStore;
  readonly streamSlots: StreamSlots;
  /** What the serve command writes to stdout: kept, and sent to the primary by `ready()`. */
  readonly stdout: { write(text: string): boolean; isTTY?: boolean | undefined };
  #text = '';
  #render: (() => string) | undefined;
  #nextRid = 1;
  readonly #waiting = new Map<number, (value: unknown) => void>();

  constructor() {
    this.id = cluster.worker?.id ?? 0;
    this.sender = new ClusterSender((message) => {
      if (process.connected) process.send?.(message, undefined, undefined, ignoreError);
    });
    this.resumeStore = new PrimaryResumeStore(this.sender);
    this.stdout = {
      isTTY: process.stdout.isTTY,
      write: (text) => {
        this.#text += text;
        return true;
      },
    };
    this.streamSlots = {
      acquire: () => this.#ask({ tw: 'slot-acquire' }).then((ok) => ok === true),
      release: () => this.sender.post({ tw: 'slot-release' }),
    };
    process.on('message', (raw: unknown) => {
      for (const message of unbatch(raw)) this.#receive(message);
    });
    process.on('disconnect', () => {
      for (const resolve of this.#waiting.values()) resolve(undefined);
      this.#waiting.clear();
    });
  }

  /** Start-up is over: the primary gets what would have been printed. */
  ready(): void {
    this.sender.sendNow({ tw: 'ready', text: this.#text });
  }

  /**
   * `inner` with `/metrics` answered by the primary's sum over every worker (after `inner` said yes:
   * keys and CORS are the guard's) and the answering worker in `x-tokenwire-worker`. `render`: this
   * worker's own metrics text, for the primary's collection.
   */
  handler(
    inner: (request: IncomingRequest) => Promise<Response>,
    render: () => string,
  ): (request: IncomingRequest) => Promise<Response> {
    this.#render = render;
    const id = String(this.id);
    const wrapped = async (request: IncomingRequest): Promise<Response> => {
      const response = await inner(request);
      if (
        request.method === 'GET' &&
        response.status === 200 &&
        request.url.includes('/metrics') &&
        requestTarget(request).path === '/metrics'
      ) {
        await response.body?.cancel();
        const text = await this.#ask({ tw: 'metrics' });
        const headers = new Headers(response.headers);
        headers.set(WORKER_HEADER, id);
        return new Response(typeof text === 'string' ? text : render(), { status: 200, headers });
      }
      try {
        response.headers.set(WORKER_HEADER, id);
      } catch {
        // Immutable headers (a fetched response passed on): left as they are.
      }
      return response;
    };
    return takesIncomingRequest(inner) ? markTakesIncomingRequest(wrapped) : wrapped;
  }

  /** A request to the primary and its answer (undefined if the primary is gone). */
  #ask(message: ClusterMessage): Promise<unknown> {
    if (!process.connected) return Promise.resolve(undefined);
    const rid = this.#nextRid++;
    message.rid = rid;
    return new Promise((resolve) => {
      this.#waiting.set(rid, resolve);
      this.sender.sendNow(message);
    });
  }

  #receive(message: ClusterMessage): void {
    if (this.resumeStore.receive(message)) return;
    switch (message.tw) {
      case 'slot':
        this.#settle(message.rid, message.ok);
        break;
      case 'metrics-text':
        this.#settle(message.rid, message.text);
        break;
      case 'render':
        this.sender.sendNow({ tw: 'rendered', rid: message.rid, text: this.#render?.() ?? '' });
        break;
    }
  }

  #settle(rid: unknown, value: unknown): void {
    const resolve = this.#waiting.get(rid as number);
    if (resolve === undefined) return;
    this.#waiting.delete(rid as number);
    resolve(value);
  }
}
