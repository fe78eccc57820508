import { clientBlock } from '../http/client-identity.ts';
import {
  type ClosingStatus,
  NO_STORE_RETAIN_MS,
  NoSuchEventError,
  ownerMatches,
  ResumeGapError,
  type ResumeStore,
  type ResumeSubscription,
  type StoredFrame,
  type StoredStatus,
  type StreamMeta,
} from './resume-store.ts';

export interface MemoryResumeStoreOptions {
  /**
   * Streams kept at most. When full, the client (API key, else address: `StreamMeta.client`) holding
   * the most streams loses its oldest, finished ones first: one client's flood evicts its own streams,
   * never a quiet client's. Addresses are weighed by block first (a /24 of IPv4, a /64 of IPv6:
   * `clientBlock`): the block holding the most streams gives one up, from its address holding the most,
   * so a client rotating through its block's addresses still evicts its own. Default 1000.
   */
  maxStreams?: number | undefined;
  /** Streams kept at most per client; past it, the client's own oldest go. Default: `maxStreams`. */
  maxStreamsPerClient?: number | undefined;
  /** Payload characters (UTF-16 units) kept per stream; the oldest frames go first. Default 4 Mi. */
  maxBytesPerStream?: number | undefined;
  /**
   * Payload characters kept in all: past it, streams go as when the store is full (the client holding
   * the most loses its oldest, finished ones first). Default 256 Mi — far above the default 1000
   * streams of ordinary answers (about 20 KiB each), so only very long streams meet it.
   */
  maxBytes?: number | undefined;
  /**
   * How long a finished stream stays resumable. Default 5 minutes; a `store: false` stream's
   * (`StreamMeta.noStore`) is at most `NO_STORE_RETAIN_MS`.
   */
  ttlMs?: number | undefined;
  now?: (() => number) | undefined;
}

/**
 * A finished stream in the close-ordered expiry queue: its id and when it closed, not its entry, so a
 * stream evicted to make room (its frames) is freed at once, not when the queue's front reaches it.
 */
interface ClosedStream {
  id: string;
  closedAt: number;
}

interface Entry {
  meta: StreamMeta;
  /** The bucket of the per-client bounds ('' for streams of no known client). */
  client: string;
  /** Its address block (`clientBlock`). */
  block: string;
  frames: StoredFrame[];
  bytes: number;
  status: StoredStatus;
  /** Why it is `lost`, when known (`ResumeSubscription.lostReason`). */
  lostReason: string | undefined;
  closedAt: number | undefined;
  /** Who waits for the next frame or the end: made by the first resuming reader, not per stream. */
  waiters: Set<() => void> | undefined;
}

/** The default resume store: one process, bounded in streams, bytes and time. */
export class MemoryResumeStore implements ResumeStore {
  readonly #entries = new Map<string, Entry>();
  /** Finished streams, oldest first (entries may be stale: checked against the map). */
  #closed: ClosedStream[] = [];
  #closedHead = 0;
  /** Finished `store: false` streams, oldest first: one shorter retention, so their own queue. */
  #closedNoStore: ClosedStream[] = [];
  #closedNoStoreHead = 0;
  /** Each client's streams, oldest first (Map order). */
  readonly #byClient = new Map<string, Map<string, Entry>>();
  /** Each address block's clients (`clientBlock`) and how many streams they hold together. */
  readonly #byBlock = new Map<string, { size: number; clients: Set<string> }>();
  readonly #maxStreams: number;
  readonly #maxTotalBytes: number;
  /** Payload characters held by every stream together. */
  #totalBytes = 0;
  readonly #maxPerClient: number;
  readonly #maxBytes: number;
  readonly #ttlMs: number;
  readonly #noStoreTtlMs: number;
  readonly #now: () => number;

  constructor(options: MemoryResumeStoreOptions = {}) {
    this.#maxStreams = options.maxStreams ?? 1000;
    this.#maxPerClient = options.maxStreamsPerClient ?? this.#maxStreams;
    this.#maxBytes = options.maxBytesPerStream ?? 4 * 1024 * 1024;
    this.#maxTotalBytes = options.maxBytes ?? 256 * 1024 * 1024;
    this.#ttlMs = options.ttlMs ?? 5 * 60 * 1000;
    this.#noStoreTtlMs = Math.min(this.#ttlMs, NO_STORE_RETAIN_MS);
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
    // Streams of no known client share one bucket.
    const client = meta.client ?? '';
    this.#expire();
    const own = this.#byClient.get(client);
    if (own !== undefined && own.size >= this.#maxPerClient) this.#evictOwn(own);
    this.#makeRoom(client);
    let bucket = this.#byClient.get(client);
    if (bucket === undefined) {
      bucket = new Map();
      this.#byClient.set(client, bucket);
    }
    const blockId = clientBlock(client);
    let block = this.#byBlock.get(blockId);
    if (block === undefined) {
      block = { size: 0, clients: new Set() };
      this.#byBlock.set(blockId, block);
    }
    block.size += 1;
    block.clients.add(client);
    const entry: Entry = {
      meta,
      client,
      block: blockId,
      frames: [],
      bytes: 0,
      status: 'live',
      lostReason: undefined,
      closedAt: undefined,
      waiters: undefined,
    };
    this.#entries.set(streamId, entry);
    bucket.set(streamId, entry);
  }

  append(streamId: string, frame: StoredFrame): void {
    const entry = this.#entries.get(streamId);
    if (entry === undefined) return;
    entry.frames.push(frame);
    entry.bytes += frame.data.length;
    this.#totalBytes += frame.data.length;
    while (entry.bytes > this.#maxBytes && entry.frames.length > 1) {
      const dropped = entry.frames.shift()!.data.length;
      entry.bytes -= dropped;
      this.#totalBytes -= dropped;
    }
    if (this.#totalBytes > this.#maxTotalBytes) this.#makeRoom(entry.client, true);
    wake(entry);
  }

  async close(streamId: string, status: ClosingStatus): Promise<void> {
    const entry = this.#entries.get(streamId);
    if (entry === undefined) return;
    const closedAt = this.#now();
    entry.status = status;
    entry.closedAt = closedAt;
    (entry.meta.noStore === true ? this.#closedNoStore : this.#closed).push({ id: streamId, closedAt });
    wake(entry);
  }

  async subscribe(
    streamId: string,
    afterSeq: number,
    signal: AbortSignal,
    owner?: string | undefined,
  ): Promise<ResumeSubscription | undefined> {
    this.#expire();
    const entry = this.#entries.get(streamId);
    // Another key's stream looks exactly like an unknown one: its existence is not revealed.
    if (entry === undefined || !ownerMatches(entry.meta.owner, owner)) return undefined;
    const first = entry.frames[0];
    if (first !== undefined && first.seq > afterSeq + 1) throw new ResumeGapError(first.seq);
    // Frames are stored as they are written, so an id past the last one was never written (yet).
    const lastSeq = entry.frames.at(-1)?.seq ?? 0;
    if (afterSeq > lastSeq) throw new NoSuchEventError(lastSeq);
    return {
      meta: entry.meta,
      frames: follow(entry, afterSeq, signal),
      status: () => entry.status,
      lostReason: () => entry.lostReason,
    };
  }

  /**
   * A live stream whose producer is gone without writing its ending (its `serve --workers` worker
   * died): it ends as `lost`, `reason` saying why, and is kept as a closed one.
   */
  lose(streamId: string, reason: string): void {
    const entry = this.#entries.get(streamId);
    if (entry === undefined || entry.status !== 'live') return;
    const closedAt = this.#now();
    entry.status = 'lost';
    entry.lostReason = reason;
    entry.closedAt = closedAt;
    (entry.meta.noStore === true ? this.#closedNoStore : this.#closed).push({ id: streamId, closedAt });
    wake(entry);
  }

  async shutdown(): Promise<void> {
    for (const entry of this.#entries.values()) {
      if (entry.status === 'live') {
        entry.status = 'lost';
        entry.lostReason = 'the gateway shut down';
      }
      wake(entry);
    }
  }

  /**
   * Cheap enough to run on every open: finished streams wait in close order, so expiry looks only at
   * the front of that queue.
   */
  #expire(): void {
    const now = this.#now();
    this.#closedHead = this.#expireFront(this.#closed, this.#closedHead, now, this.#ttlMs);
    if (this.#closedHead > 1024 && this.#closedHead * 2 > this.#closed.length) {
      this.#closed = this.#closed.slice(this.#closedHead);
      this.#closedHead = 0;
    }
    const noStore = this.#closedNoStore;
    if (noStore.length === 0) return;
    this.#closedNoStoreHead = this.#expireFront(noStore, this.#closedNoStoreHead, now, this.#noStoreTtlMs);
    if (this.#closedNoStoreHead > 1024 && this.#closedNoStoreHead * 2 > noStore.length) {
      this.#closedNoStore = noStore.slice(this.#closedNoStoreHead);
      this.#closedNoStoreHead = 0;
    }
  }

  /** Drops the expired streams at the front of a close-ordered queue; returns the new head. */
  #expireFront(closed: ClosedStream[], head: number, now: number, ttlMs: number): number {
    while (head < closed.length) {
      const next = closed[head]!;
      const entry = this.#entries.get(next.id);
      if (entry === undefined || entry.closedAt !== next.closedAt) {
        head += 1; // already gone (evicted to make room)
        continue;
      }
      if (now - next.closedAt <= ttlMs) break;
      this.#drop(next.id, entry);
      head += 1;
    }
    return head;
  }

  /**
   * Full (in streams, or `forBytes` in payload characters): the address block holding the most streams,
   * then its client holding the most, loses its oldest (finished first), so a flood evicts the
   * flooder's own streams and never a quiet client's, even from many addresses of one block. The
   * opener's block (and the opener in it) at or past its fair share is that one without a search (the
   * flood case); otherwise the blocks (and the block's clients) are scanned.
   */
  #makeRoom(opener: string, forBytes = false): void {
    const openerBlock = clientBlock(opener);
    while (
      forBytes
        ? this.#totalBytes > this.#maxTotalBytes && this.#entries.size > 1
        : this.#entries.size >= this.#maxStreams
    ) {
      let blockId = openerBlock;
      let block = this.#byBlock.get(openerBlock);
      if (block === undefined || block.size * this.#byBlock.size < this.#entries.size) {
        for (const [id, candidate] of this.#byBlock)
          if (block === undefined || candidate.size > block.size) {
            block = candidate;
            blockId = id;
          }
      }
      if (block === undefined || block.size === 0) return;
      let victim = blockId === openerBlock ? this.#byClient.get(opener) : undefined;
      if (victim === undefined || victim.size * block.clients.size < block.size) {
        for (const client of block.clients) {
          const bucket = this.#byClient.get(client);
          if (bucket !== undefined && (victim === undefined || bucket.size > victim.size)) victim = bucket;
        }
      }
      if (victim === undefined || victim.size === 0) return;
      this.#evictOwn(victim);
    }
  }

  /** A client at its bound: its oldest finished stream goes, else its oldest live one. */
  #evictOwn(bucket: Map<string, Entry>): void {
    let victim: [string, Entry] | undefined;
    for (const pair of bucket) {
      if (pair[1].status !== 'live') {
        victim = pair;
        break;
      }
      victim ??= pair;
    }
    if (victim === undefined) return;
    const [id, entry] = victim;
    if (entry.status === 'live') {
      entry.status = 'lost';
      entry.lostReason = 'the resume store evicted it to make room for newer streams';
    }
    wake(entry);
    this.#drop(id, entry);
  }

  #drop(id: string, entry: Entry): void {
    this.#entries.delete(id);
    this.#totalBytes -= entry.bytes;
    const bucket = this.#byClient.get(entry.client);
    if (bucket === undefined || !bucket.delete(id)) return;
    const blockId = entry.block;
    const block = this.#byBlock.get(blockId);
    if (block !== undefined) block.size -= 1;
    if (bucket.size > 0) return;
    this.#byClient.delete(entry.client);
    if (block === undefined) return;
    block.clients.delete(entry.client);
    if (block.clients.size === 0) this.#byBlock.delete(blockId);
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
