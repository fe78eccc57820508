import { HttpError, RequestFailedError } from '../client/client-errors.ts';
import { runStream, type StreamOptions } from '../client/run-stream.ts';
import type { TimeoutOptions } from '../client/timeouts.ts';
import type { DialectId } from '../dialects/dialect.ts';
import type { Result } from '../events/result.ts';
import { ArrivalSchedule } from './arrivals.ts';
import { LevelRecorder, type LevelResult } from './level-recorder.ts';
import type { LoadSpec } from './load.ts';
import type { Slo } from './slo.ts';
import type { Workload } from './workload.ts';

/** Where the load goes. */
export interface BenchTarget {
  /** The streaming endpoint, e.g. `http://127.0.0.1:8000/v1/chat/completions`. */
  url: string;
  dialect: DialectId;
  /** Sent with every request (credentials, routing). */
  headers?: Record<string, string> | undefined;
  /** Any `(Request) => Response` handler (the simulator in-process); default the global fetch. */
  fetch?: StreamOptions['fetch'];
}

export interface LevelOptions {
  target: BenchTarget;
  load: LoadSpec;
  workload: Workload;
  /** Stop sending after this many requests. */
  requests?: number | undefined;
  /** Stop sending this long after the start; requests in flight then run to their end. */
  durationMs?: number | undefined;
  timeouts?: TimeoutOptions | undefined;
  slo?: Slo | undefined;
  /** Seeds the open-loop arrivals. */
  seed?: number | undefined;
  /** Stops sending and aborts the requests in flight (they end incomplete, `aborted`). */
  signal?: AbortSignal | undefined;
  /** Clock in ms; default `performance.now`. */
  now?: (() => number) | undefined;
  /** Keep one row per request in the result (default true). */
  keepRequests?: boolean | undefined;
  /** The workload index of this level's first request (so a sweep's levels send different prompts). */
  firstIndex?: number | undefined;
}

/** A snapshot for a progress display: plain counters, cheap to read at any time. */
export interface LevelProgress {
  sent: number;
  finished: number;
  ok: number;
  notOk: number;
  inFlight: number;
  elapsedMs: number;
  /** What ends the level: a request count, a duration, or both (whichever comes first). */
  requests?: number | undefined;
  durationMs?: number | undefined;
}

export interface LevelRun {
  progress(): LevelProgress;
  readonly done: Promise<LevelResult>;
}

/**
 * Runs one load level against a streaming endpoint and measures every request from its intended
 * send time (the open-loop arrival, or the moment its closed-loop slot freed), with the bench's own
 * lateness (actual - intended send) reported as the `lag` distribution.
 *
 * Per stream the bench adds nothing to the client's work while bytes arrive: the client's own
 * recorder takes the arrival times, and this folds its metrics into histograms once, at the end.
 */
export function runLevel(options: LevelOptions): LevelRun {
  const runner = new LevelRunner(options);
  return { progress: () => runner.progress(), done: runner.start() };
}

class LevelRunner {
  readonly #options: LevelOptions;
  readonly #now: () => number;
  readonly #recorder: LevelRecorder;
  readonly #streamOptions: StreamOptions;
  readonly #firstIndex: number;
  #t0 = 0;
  #startedAt = new Date();
  /** Requests handed out (sent, or waiting for a slot under `maxConcurrency`). */
  #issued = 0;
  #sent = 0;
  #inFlight = 0;
  #stopped = false;
  #done = false;
  #idleSlots = 0;
  #arrivalsDone = false;
  /** Open loop over `maxConcurrency`: intended send times waiting for a slot, with their indexes. */
  readonly #waiting: number[] = [];
  #waitingHead = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #resolve!: (result: LevelResult) => void;

  constructor(options: LevelOptions) {
    if (options.requests === undefined && options.durationMs === undefined)
      throw new RangeError('a level needs a request count or a duration');
    if (
      options.load.kind === 'closed' &&
      !(Number.isInteger(options.load.concurrency) && options.load.concurrency > 0)
    )
      throw new RangeError(`concurrency must be a positive whole number, got ${options.load.concurrency}`);
    this.#options = options;
    this.#now = options.now ?? (() => performance.now());
    this.#firstIndex = options.firstIndex ?? 0;
    this.#recorder = new LevelRecorder({ slo: options.slo, keepRequests: options.keepRequests !== false });
    // One options object for every request: nothing is built per request beyond what runStream needs.
    this.#streamOptions = { now: this.#now };
    if (options.target.fetch !== undefined) this.#streamOptions.fetch = options.target.fetch;
    if (options.timeouts !== undefined) this.#streamOptions.timeouts = options.timeouts;
    if (options.signal !== undefined) this.#streamOptions.signal = options.signal;
  }

  progress(): LevelProgress {
    const progress: LevelProgress = {
      sent: this.#sent,
      finished: this.#recorder.finished,
      ok: this.#recorder.ok,
      notOk: this.#recorder.notOk,
      inFlight: this.#inFlight,
      elapsedMs: this.#t0 === 0 ? 0 : this.#now() - this.#t0,
    };
    if (this.#options.requests !== undefined) progress.requests = this.#options.requests;
    if (this.#options.durationMs !== undefined) progress.durationMs = this.#options.durationMs;
    return progress;
  }

  start(): Promise<LevelResult> {
    return new Promise<LevelResult>((resolve) => {
      this.#resolve = resolve;
      const signal = this.#options.signal;
      signal?.addEventListener('abort', () => this.#stop(), { once: true });
      this.#startedAt = new Date();
      this.#t0 = this.#now();
      if (signal?.aborted === true) this.#stopped = true;
      const load = this.#options.load;
      if (load.kind === 'closed') this.#startClosed(load.concurrency, load.rampUpMs ?? 0);
      else this.#startOpen(load.rate, load.burstiness);
      this.#maybeDone();
    });
  }

  /** May another request be issued now (or at `atMs` from the start, for open-loop arrivals)? */
  #mayIssue(atMs: number): boolean {
    if (this.#stopped) return false;
    const { requests, durationMs } = this.#options;
    if (requests !== undefined && this.#issued >= requests) return false;
    if (durationMs !== undefined && atMs >= durationMs) return false;
    return true;
  }

  #stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#arrivalsDone = true;
    this.#waiting.length = 0;
    this.#waitingHead = 0;
    this.#maybeDone();
  }

  // Closed loop: one slot per stream; a slot sends again when its stream ends.

  #startClosed(concurrency: number, rampUpMs: number): void {
    this.#arrivalsDone = true;
    for (let slot = 0; slot < concurrency; slot++) {
      const due = concurrency > 1 ? (rampUpMs * slot) / concurrency : 0;
      if (due <= 0) this.#slot(this.#t0);
      else setTimeout(() => this.#slot(this.#t0 + due), due);
    }
  }

  /** A free slot: send its next request, intended at `intended` (clock ms), or retire. */
  #slot(intended: number): void {
    if (!this.#mayIssue(this.#now() - this.#t0)) {
      this.#idleSlots += 1;
      this.#maybeDone();
      return;
    }
    this.#issued += 1;
    this.#send(this.#issued - 1, intended);
  }

  // Open loop: arrivals on their own schedule; one timer, re-armed for the next arrival.

  #schedule: ArrivalSchedule | undefined;
  #nextArrival = 0;

  #startOpen(rate: number, burstiness: number): void {
    this.#schedule = new ArrivalSchedule(rate, burstiness, this.#options.seed ?? 1);
    this.#nextArrival = this.#schedule.next();
    this.#tick();
  }

  #tick(): void {
    this.#timer = undefined;
    if (this.#stopped) return;
    const schedule = this.#schedule!;
    const max = this.#options.load.kind === 'open' ? this.#options.load.maxConcurrency : undefined;
    const elapsed = this.#now() - this.#t0;
    while (this.#nextArrival <= elapsed) {
      if (!this.#mayIssue(this.#nextArrival)) {
        this.#arrivalsDone = true;
        this.#maybeDone();
        return;
      }
      const index = this.#issued;
      this.#issued += 1;
      const intended = this.#t0 + this.#nextArrival;
      if (max !== undefined && this.#inFlight >= max) this.#waiting.push(index, intended);
      else this.#send(index, intended);
      this.#nextArrival = schedule.next();
    }
    if (!this.#mayIssue(this.#nextArrival)) {
      this.#arrivalsDone = true;
      this.#maybeDone();
      return;
    }
    const delay = this.#nextArrival - (this.#now() - this.#t0);
    // Node timers have 1 ms granularity; an arrival due within it goes on the next loop turn.
    if (delay < 1) this.#timer = setTimeout(() => this.#tick(), 0);
    else this.#timer = setTimeout(() => this.#tick(), delay);
  }

  // Sending and ending.

  #send(index: number, intended: number): void {
    const request = this.#options.workload.request(this.#firstIndex + index);
    const target = this.#options.target;
    this.#inFlight += 1;
    this.#sent += 1;
    const sentAt = this.#now();
    this.#recorder.sent(sentAt - this.#t0);
    runStream(
      { url: target.url, dialect: target.dialect, request, headers: target.headers },
      this.#streamOptions,
    ).then(
      (result) => this.#ended(index, intended, sentAt, result, undefined),
      (error: unknown) => this.#ended(index, intended, sentAt, undefined, error),
    );
  }

  #ended(index: number, intended: number, sentAt: number, result: Result | undefined, error: unknown): void {
    this.#inFlight -= 1;
    const t0 = this.#t0;
    let freedAt: number;
    if (result !== undefined) {
      this.#recorder.result(index, intended - t0, sentAt - t0, result);
      // The slot freed when the client saw the stream end, not when this continuation ran.
      freedAt = sentAt + (result.metrics.totalMs ?? this.#now() - sentAt);
    } else {
      freedAt = this.#now();
      const { code, message } = describeFailure(error);
      this.#recorder.failure(index, intended - t0, sentAt - t0, freedAt - t0, code, message);
    }
    const load = this.#options.load;
    if (load.kind === 'closed') this.#slot(freedAt);
    else if (this.#waitingHead < this.#waiting.length) {
      const next = this.#waiting[this.#waitingHead] as number;
      const nextIntended = this.#waiting[this.#waitingHead + 1] as number;
      this.#waitingHead += 2;
      if (this.#waitingHead > 1024 && this.#waitingHead * 2 > this.#waiting.length) {
        this.#waiting.splice(0, this.#waitingHead);
        this.#waitingHead = 0;
      }
      this.#send(next, nextIntended);
    }
    this.#maybeDone();
  }

  #maybeDone(): void {
    if (this.#done || this.#inFlight > 0) return;
    if (this.#waitingHead < this.#waiting.length) return;
    const load = this.#options.load;
    if (load.kind === 'closed' ? this.#idleSlots < load.concurrency : !this.#arrivalsDone) return;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#done = true;
    this.#resolve(this.#recorder.summary(load, this.#options.workload.description, this.#startedAt));
  }
}

/** A stable code and a message for a request that got no stream. */
export function describeFailure(error: unknown): { code: string; message: string } {
  if (error instanceof HttpError) return { code: `http-${error.status}`, message: error.message };
  if (error instanceof RequestFailedError) return { code: error.code, message: error.message };
  if (error instanceof Error) return { code: 'error', message: error.message };
  return { code: 'error', message: String(error) };
}
