import {
  type ClosingStatus,
  ResumeGapError,
  type ResumeStore,
  type ResumeSubscription,
  type StoredFrame,
  type StoredStatus,
  type StreamMeta,
} from './resume-store.ts';

export interface MemoryResumeStoreOptions {
  /** Streams kept at most; the oldest finished ones go first. Default 1000. */
  maxStreams?: number | undefined;
  /** Payload characters (UTF-16 units) kept per stream; the oldest frames go first. Default 4 Mi. */
  maxBytesPerStream?: number | undefined;
  /** How long a finished stream stays resumable. Default 5 minutes. */
  ttlMs?: number | undefined;
  now?: (() => number) | undefined;
}

interface Entry {
  meta: StreamMeta;
  frames: StoredFrame[];
  bytes: number;
  status: StoredStatus;
  closedAt: number | undefined;
  /** Who waits for the next frame or the end: made by the first resuming reader, not per stream. */
  waiters: Set<() => void> | undefined;
}

/** The default resume store: one process, bounded in streams, bytes and time. */
export class MemoryResumeStore implements ResumeStore {
  readonly #entries = new Map<string, Entry>();
  /** Finished streams, oldest first (entries may be stale: checked against the map). */
  #closed: { id: string; entry: Entry }[] = [];
  #closedHead = 0;
  readonly #maxStreams: number;
  readonly #maxBytes: number;
  readonly #ttlMs: number;
  readonly #now: () => number;

  constructor(options: MemoryResumeStoreOptions = {}) {
    this.#maxStreams = options.maxStreams ?? 1000;
    this.#maxBytes = options.maxBytesPerStream ?? 4 * 1024 * 1024;
    this.#ttlMs = options.ttlMs ?? 5 * 60 * 1000;
    this.#now = options.now ?? Date.now;
  }

  /** Streams held now (for tests and metrics). */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * Registers the stream at once, before the returned promise settles: the gateway counts on that to
   * open it only when the upstream has answered, with the relay (create-gateway.ts).
   */
  async open(streamId: string, meta: StreamMeta): Promise<void> {
    this.#evict();
    this.#entries.set(streamId, {
      meta,
      frames: [],
      bytes: 0,
      status: 'live',
      closedAt: undefined,
      waiters: undefined,
    });
  }

  append(streamId: string, frame: StoredFrame): void {
    const entry = this.#entries.get(streamId);
    if (entry === undefined) return;
    entry.frames.push(frame);
    entry.bytes += frame.data.length;
    while (entry.bytes > this.#maxBytes && entry.frames.length > 1) {
      entry.bytes -= entry.frames.shift()!.data.length;
    }
    wake(entry);
  }

  async close(streamId: string, status: ClosingStatus): Promise<void> {
    const entry = this.#entries.get(streamId);
    if (entry === undefined) return;
    entry.status = status;
    entry.closedAt = this.#now();
    this.#closed.push({ id: streamId, entry });
    wake(entry);
  }

  async subscribe(
    streamId: string,
    afterSeq: number,
    signal: AbortSignal,
  ): Promise<ResumeSubscription | undefined> {
    this.#evict();
    const entry = this.#entries.get(streamId);
    if (entry === undefined) return undefined;
    const first = entry.frames[0];
    if (first !== undefined && first.seq > afterSeq + 1) throw new ResumeGapError(first.seq);
    return {
      meta: entry.meta,
      frames: follow(entry, afterSeq, signal),
      status: () => entry.status,
    };
  }

  async shutdown(): Promise<void> {
    for (const entry of this.#entries.values()) {
      if (entry.status === 'live') entry.status = 'lost';
      wake(entry);
    }
  }

  /**
   * Cheap enough to run on every open: finished streams wait in close order, so expiry looks only at
   * the front of that queue, and the capacity bound removes from the front as well.
   */
  #evict(): void {
    const now = this.#now();
    const closed = this.#closed;
    while (this.#closedHead < closed.length) {
      const next = closed[this.#closedHead]!;
      if (this.#entries.get(next.id) !== next.entry) {
        this.#closedHead += 1; // already gone
        continue;
      }
      const expired = now - next.entry.closedAt! > this.#ttlMs;
      if (!expired && this.#entries.size < this.#maxStreams) break;
      this.#entries.delete(next.id);
      this.#closedHead += 1;
    }
    if (this.#closedHead > 1024 && this.#closedHead * 2 > closed.length) {
      this.#closed = closed.slice(this.#closedHead);
      this.#closedHead = 0;
    }
    if (this.#entries.size < this.#maxStreams) return;
    // Still full with live streams only: the oldest live one goes (Map keeps insertion order).
    for (const [id, entry] of this.#entries) {
      if (this.#entries.size < this.#maxStreams) return;
      entry.status = 'lost';
      wake(entry);
      this.#entries.delete(id);
    }
  }
}

function wake(entry: Entry): void {
  if (entry.waiters === undefined || entry.waiters.size === 0) return;
  const waiters = [...entry.waiters];
  entry.waiters.clear();
  for (const waiter of waiters) waiter();
}

async function* follow(entry: Entry, afterSeq: number, signal: AbortSignal): AsyncGenerator<StoredFrame> {
  let last = afterSeq;
  for (;;) {
    if (signal.aborted) return;
    // Search again after each yield: the bounds may have dropped frames from the front meanwhile.
    const next = entry.frames[indexAfter(entry.frames, last)];
    if (next !== undefined) {
      last = next.seq;
      yield next;
      continue;
    }
    if (entry.status !== 'live') return;
    await new Promise<void>((resolve) => {
      const done = () => {
        signal.removeEventListener('abort', done);
        entry.waiters?.delete(done);
        resolve();
      };
      entry.waiters ??= new Set();
      entry.waiters.add(done);
      signal.addEventListener('abort', done, { once: true });
    });
  }
}

/** Index of the first frame with seq > `seq` (frames are in seq order). */
function indexAfter(frames: StoredFrame[], seq: number): number {
  let low = 0;
  let high = frames.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (frames[mid]!.seq > seq) high = mid;
    else low = mid + 1;
  }
  return low;
}
