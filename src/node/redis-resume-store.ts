import { Redis } from 'ioredis';
import { errorMessage } from '../server/http/gateway-errors.ts';
import { redactUrls } from '../server/observability/request-log.ts';
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
} from '../server/resume/resume-store.ts';

export interface RedisResumeStoreOptions {
  /** `redis://[user:password@]host:port[/db]`. Default `redis://127.0.0.1:6379`. */
  url?: string | undefined;
  /** A client to use instead (RESP2 replies expected); `shutdown()` leaves it open. */
  redis?: Redis | undefined;
  /** Prefix of every key. Default `tokenwire:`. */
  keyPrefix?: string | undefined;
  /** Frames kept per stream (`XADD MAXLEN ~`): the oldest go first, and a resume that needs them gets a 410. Default 10000. */
  maxFramesPerStream?: number | undefined;
  /** How long a stream stays resumable after its last write or its end. Default 5 minutes. */
  ttlMs?: number | undefined;
  /**
   * Streams kept per client (`StreamMeta.client`: API key, else address), across replicas: past it, the
   * client's oldest go (keys deleted; a follower of a live one ends it as lost). Default: no bound.
   */
  maxStreamsPerClient?: number | undefined;
  /**
   * Streams kept in all, the oldest going first whoever opened them: set `maxStreamsPerClient` with it,
   * or one client's flood evicts everyone's. Default: no bound but the TTL (and Redis's maxmemory).
   */
  maxStreams?: number | undefined;
  /** How often this replica says it is alive. Default 1000. */
  heartbeatMs?: number | undefined;
  /** A producer silent this long is dead: its unfinished streams end as `lost`. Default 5000. */
  producerTimeoutMs?: number | undefined;
  /** A follower's `XREAD BLOCK` time; the producer is checked after each silent one. Default 1000. */
  blockMs?: number | undefined;
  /** Followers with their own blocking connection; more poll every `pollMs`. Default 64. */
  maxBlockingFollowers?: number | undefined;
  pollMs?: number | undefined;
  /** This replica's name in Redis. Default random. */
  replicaId?: string | undefined;
  /** A Redis command failed (writes are fire-and-forget, so this is where failures show). */
  onError?: ((error: unknown) => void) | undefined;
}

interface Producing {
  lastSeq: number;
  refreshedAt: number;
  /** How long the keys live after the ending: the TTL, or less for a `store: false` stream. */
  endTtlMs: number;
}

interface MetaRecord {
  /**
   * 3: as 2, and the producer keeps the set of streams it is producing (`replica:<id>:streams`), which
   * followers check; 2: frames hold the encoder's payload (`d`) and its kind (`k`), not the framed text
   * (1). A follower of another version would misread the stream: it is not resumable there.
   */
  v: 3;
  replica: string;
  meta: StreamMeta;
}

type Entry = [id: string, fields: string[]];

const READ_BATCH = 256;
const END_STATUSES = new Set<StoredStatus>(['complete', 'failed', 'cancelled', 'lost']);

/**
 * A resume store shared by gateway replicas through Redis, so a client that reconnects to another
 * replica resumes where it was. Per stream: a JSON meta key and a Redis Stream of frames whose entry ids
 * are the SSE sequence numbers (`<seq>-0`), so replay is one `XREAD` after the client's id; the producer's
 * ending is one more entry (`<lastSeq>-1`, field `e`), which followers read in order with the frames.
 * Each replica refreshes a heartbeat key with a TTL; a follower that finds the producer's heartbeat gone
 * and no ending ends the stream as `lost`, and the gateway writes an honest incomplete ending.
 *
 * Writes are fire-and-forget on one auto-pipelined connection (so their order holds): a slow or absent
 * Redis never delays a token, it only makes streams not resumable (`onError` says so).
 *
 * Following a live stream uses `XREAD BLOCK` on a connection of its own (bounded by
 * `maxBlockingFollowers`, polling beyond): a frame reaches the resumed client one Redis round trip
 * after it was written, with no per-frame publish and no polling load. Resumes are rare and short, so
 * a connection each is cheap; a blocking read cannot share the writers' connection.
 */
export class RedisResumeStore implements ResumeStore {
  readonly replicaId: string;
  /** Redis commands that failed. */
  errors = 0;
  readonly #redis: Redis;
  readonly #ownsClient: boolean;
  readonly #prefix: string;
  readonly #maxFrames: number;
  readonly #ttlMs: number;
  readonly #maxPerClient: number | undefined;
  readonly #maxStreams: number | undefined;
  /** Evictions under way (`ready()` waits for them). */
  readonly #evicting = new Set<Promise<void>>();
  readonly #heartbeatMs: number;
  readonly #producerTimeoutMs: number;
  readonly #blockMs: number;
  readonly #maxBlocking: number;
  readonly #pollMs: number;
  readonly #onError: ((error: unknown) => void) | undefined;
  readonly #producing = new Map<string, Producing>();
  readonly #blocking = new Set<Redis>();
  #heartbeat: ReturnType<typeof setInterval> | undefined;
  #closed = false;

  constructor(options: RedisResumeStoreOptions = {}) {
    this.#prefix = options.keyPrefix ?? 'tokenwire:';
    this.#maxFrames = options.maxFramesPerStream ?? 10000;
    this.#ttlMs = options.ttlMs ?? 5 * 60 * 1000;
    this.#maxPerClient = options.maxStreamsPerClient;
    this.#maxStreams = options.maxStreams;
    this.#heartbeatMs = options.heartbeatMs ?? 1000;
    this.#producerTimeoutMs = options.producerTimeoutMs ?? 5000;
    this.#blockMs = options.blockMs ?? 1000;
    this.#maxBlocking = options.maxBlockingFollowers ?? 64;
    this.#pollMs = options.pollMs ?? 100;
    this.#onError = options.onError;
    this.replicaId = options.replicaId ?? randomId();
    this.#ownsClient = options.redis === undefined;
    this.#redis =
      options.redis ??
      new Redis(options.url ?? 'redis://127.0.0.1:6379', {
        // RESP2: the reply shapes parsed below, on any Redis from 5.0.
        protocol: 2,
        enableAutoPipelining: true,
        commandTimeout: 5000,
        maxRetriesPerRequest: 3,
      });
    // Without a listener, ioredis prints every connection error; they are counted instead.
    if (this.#ownsClient) this.#redis.on('error', (error: unknown) => this.#report(error));
    this.#redis.on('ready', this.#reconnected);
  }

  /**
   * Redis came back (a restart, maybe from an older snapshot): the set of streams this replica is
   * producing is written again as it is now, so a follower of a stream that ended while Redis was away
   * (its ending lost with the snapshot) sees it is no longer produced and ends it as `lost`, not waiting
   * for frames that will never come.
   */
  readonly #reconnected = (): void => {
    if (this.#closed || this.#heartbeat === undefined) return;
    const key = this.#streamsKey(this.replicaId);
    const ids = [...this.#producing.keys()];
    const multi = this.#redis.multi().del(key);
    if (ids.length > 0) multi.sadd(key, ...ids).pexpire(key, this.#producerTimeoutMs);
    multi.set(this.#replicaKey(this.replicaId), '1', 'PX', this.#producerTimeoutMs);
    multi.exec().catch(this.#failed);
  };

  /** Streams this replica is producing now. */
  get producing(): number {
    return this.#producing.size;
  }

  /** Followers holding a blocking connection now. */
  get followers(): number {
    return this.#blocking.size;
  }

  /** Resolves once connected and the evictions started so far are done (optional: commands wait anyway). */
  async ready(): Promise<void> {
    await this.#redis.ping();
    await Promise.all([...this.#evicting]);
  }

  async open(streamId: string, meta: StreamMeta): Promise<void> {
    if (this.#closed) return;
    // The heartbeat goes out before the first meta key on the same connection: a follower never
    // sees a stream whose producer has not said it is alive.
    this.#startHeartbeat();
    // A `store: false` stream is kept for resume only: a short while after its end (NO_STORE_RETAIN_MS).
    const endTtlMs = meta.noStore === true ? Math.min(this.#ttlMs, NO_STORE_RETAIN_MS) : this.#ttlMs;
    this.#producing.set(streamId, { lastSeq: 0, refreshedAt: 0, endTtlMs });
    const streamsKey = this.#streamsKey(this.replicaId);
    this.#redis.sadd(streamsKey, streamId).catch(this.#failed);
    this.#redis.pexpire(streamsKey, this.#producerTimeoutMs).catch(this.#failed);
    const record: MetaRecord = { v: 3, replica: this.replicaId, meta };
    this.#redis.set(this.#metaKey(streamId), JSON.stringify(record), 'PX', this.#ttlMs).catch(this.#failed);
    if (meta.client !== undefined && this.#maxPerClient !== undefined)
      this.#bound(`${this.#prefix}client:${meta.client}`, this.#maxPerClient, streamId);
    if (this.#maxStreams !== undefined) this.#bound(`${this.#prefix}streams`, this.#maxStreams, streamId);
  }

  /**
   * Counts the stream in a sorted set of stream ids by open time and, past `max`, deletes the oldest
   * (one client's flood evicts its own streams first). Off the stream's path: nothing waits for it.
   * Ids older than two TTLs are dropped from the set unasked (their keys expired long ago).
   */
  #bound(key: string, max: number, streamId: string): void {
    const now = Date.now();
    this.#redis.zadd(key, now, streamId).catch(this.#failed);
    this.#redis.zremrangebyscore(key, '-inf', now - 2 * this.#ttlMs).catch(this.#failed);
    this.#redis.pexpire(key, 2 * this.#ttlMs).catch(this.#failed);
    const evicting: Promise<void> = this.#redis
      .zcard(key)
      .then(async (count) => {
        if (count <= max) return;
        // ZPOPMIN is atomic: replicas evicting at once never take the same id twice.
        const popped = await this.#redis.zpopmin(key, count - max);
        const keys: string[] = [];
        for (let i = 0; i < popped.length; i += 2) {
          const id = popped[i]!;
          keys.push(this.#metaKey(id), this.#framesKey(id));
        }
        // One DEL per key: a stream's keys share a hash slot, different streams' may not (Redis Cluster).
        await Promise.all(keys.map((k) => this.#redis.del(k)));
      })
      .catch(this.#failed)
      .finally(() => this.#evicting.delete(evicting));
    this.#evicting.add(evicting);
  }

  append(streamId: string, frame: StoredFrame): void {
    const producing = this.#producing.get(streamId);
    if (producing === undefined) return;
    producing.lastSeq = frame.seq;
    const framesKey = this.#framesKey(streamId);
    const kind = frame.kind === undefined ? [] : ['k', frame.kind];
    this.#redis
      .xadd(framesKey, 'MAXLEN', '~', this.#maxFrames, `${frame.seq}-0`, 'd', frame.data, ...kind)
      .catch(this.#failed);
    const now = Date.now();
    // The keys live ttlMs after the last write: refreshed now and then, not per frame.
    if (now - producing.refreshedAt >= this.#ttlMs / 4) {
      producing.refreshedAt = now;
      this.#redis.pexpire(framesKey, this.#ttlMs).catch(this.#failed);
      this.#redis.pexpire(this.#metaKey(streamId), this.#ttlMs).catch(this.#failed);
    }
  }

  async close(streamId: string, status: ClosingStatus): Promise<void> {
    const producing = this.#producing.get(streamId);
    if (producing === undefined) return;
    this.#producing.delete(streamId);
    // The ending first, then "no longer produced" (one connection: in this order).
    const ended = this.#writeEnd(streamId, producing.lastSeq, status, producing.endTtlMs);
    this.#redis.srem(this.#streamsKey(this.replicaId), streamId).catch(this.#failed);
    await ended;
  }

  async subscribe(
    streamId: string,
    afterSeq: number,
    signal: AbortSignal,
    owner?: string | undefined,
  ): Promise<ResumeSubscription | undefined> {
    let record = await this.#readMeta(streamId);
    if (record === undefined) {
      // A client can reconnect faster than its producer's first writes reach Redis: look once more.
      await sleep(100, signal);
      record = await this.#readMeta(streamId);
    }
    if (record === undefined) return undefined;
    // Another key's stream looks exactly like an unknown one, in its answer and in its time (the unknown
    // one waited for the second look above): its existence is not revealed.
    if (!ownerMatches(record.meta.owner, owner)) {
      await sleep(100, signal);
      return undefined;
    }
    const framesKey = this.#framesKey(streamId);
    const [firstEntries, lastEntries] = await Promise.all([
      this.#redis.xrange(framesKey, '-', '+', 'COUNT', 1),
      this.#redis.xrevrange(framesKey, '+', '-', 'COUNT', 1),
    ]);
    const first = firstEntries[0];
    if (first !== undefined) {
      const { seq, end } = parseEntryId(first[0]);
      if (!end && seq > afterSeq + 1) throw new ResumeGapError(seq);
      if (end && seq > afterSeq) throw new ResumeGapError(seq + 1);
    }
    // An id past the last frame stored: on a live stream its write may still be on the way (another
    // replica wrote it a moment ago), so look once more; then it is no event of this stream.
    let last = lastEntries[0] === undefined ? undefined : parseEntryId(lastEntries[0][0]);
    if (afterSeq > (last?.seq ?? 0) && last?.end !== true) {
      await sleep(100, signal);
      const again = (await this.#redis.xrevrange(framesKey, '+', '-', 'COUNT', 1))[0];
      last = again === undefined ? undefined : parseEntryId(again[0]);
    }
    if (afterSeq > (last?.seq ?? 0)) throw new NoSuchEventError(last?.seq ?? 0);
    let status: StoredStatus = 'live';
    let endSeq: number | undefined;
    let lostReason: string | undefined;
    const frames = this.#follow(streamId, record.replica, afterSeq, signal, (ended, seq, reason) => {
      status = ended;
      endSeq = seq;
      lostReason = reason;
    });
    return {
      meta: record.meta,
      frames,
      status: () => status,
      endSeq: () => endSeq,
      lostReason: () => lostReason,
    };
  }

  async shutdown(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#heartbeat !== undefined) clearInterval(this.#heartbeat);
    // Streams still open here will never be finished by this replica: say so now, so followers
    // elsewhere end at once instead of waiting for the heartbeat to expire.
    const open = [...this.#producing];
    this.#producing.clear();
    // Without a connection, writes would wait out the reconnection attempts: skip them.
    const connected = this.#redis.status === 'ready';
    if (connected) {
      await Promise.all(
        open.map(([id, producing]) => this.#writeEnd(id, producing.lastSeq, 'lost', producing.endTtlMs)),
      );
      await this.#redis
        .del(this.#replicaKey(this.replicaId), this.#streamsKey(this.replicaId))
        .catch(this.#failed);
    }
    this.#redis.off('ready', this.#reconnected);
    for (const connection of this.#blocking) connection.disconnect();
    this.#blocking.clear();
    if (!this.#ownsClient) return;
    if (connected) await this.#redis.quit().catch(() => this.#redis.disconnect());
    else this.#redis.disconnect();
  }

  async *#follow(
    streamId: string,
    replica: string,
    afterSeq: number,
    signal: AbortSignal,
    /** `endSeq`: the producer's last seq, from its ending entry; `reason`: why it is `lost`, if known. */
    setStatus: (status: StoredStatus, endSeq?: number, reason?: string) => void,
  ): AsyncGenerator<StoredFrame> {
    const framesKey = this.#framesKey(streamId);
    let lastId = `${afterSeq}-0`;
    let blocking: Redis | undefined;
    let producerGone = false;
    let heardAt = Date.now();
    const stopBlocking = () => blocking?.disconnect();
    signal.addEventListener('abort', stopBlocking, { once: true });
    try {
      for (;;) {
        if (signal.aborted) return;
        const block = blocking !== undefined && !producerGone;
        let entries: Entry[];
        try {
          entries = parseXread(
            block
              ? await blocking!.call(
                  'XREAD',
                  'COUNT',
                  READ_BATCH,
                  'BLOCK',
                  this.#blockMs,
                  'STREAMS',
                  framesKey,
                  lastId,
                )
              : await this.#redis.call('XREAD', 'COUNT', READ_BATCH, 'STREAMS', framesKey, lastId),
          );
        } catch (error) {
          if (signal.aborted) return;
          // Redis is unreachable: nobody can tell how the stream ends, so it is not a clean one.
          this.#report(error);
          setStatus('lost', undefined, unreachable(error));
          return;
        }
        for (const [id, fields] of entries) {
          lastId = id;
          const { seq, end } = parseEntryId(id);
          if (end) {
            const ending = field(fields, 'e') as StoredStatus;
            setStatus(END_STATUSES.has(ending) ? ending : 'lost', seq);
            return;
          }
          // Any kind the encoder gave (llama-server's legacy error line, or an SSE event name).
          const stored = field(fields, 'k');
          const kind = stored === '' ? undefined : stored;
          yield { seq, data: field(fields, 'd'), kind };
        }
        if (entries.length === READ_BATCH) continue; // still replaying
        if (producerGone) {
          // All it wrote before it died has been read, and no ending came.
          setStatus('lost');
          return;
        }
        if (entries.length > 0) {
          heardAt = Date.now();
          continue;
        }
        // Caught up and nothing new: wait for more (blocking read next, or a poll interval)...
        if (!block) {
          if (blocking === undefined && this.#blocking.size < this.#maxBlocking && !this.#closed) {
            blocking = this.#redis.duplicate({
              enableAutoPipelining: false,
              commandTimeout: this.#blockMs + 5000,
            });
            blocking.on('error', () => {});
            this.#blocking.add(blocking);
          } else {
            await sleep(this.#pollMs, signal);
          }
          if (Date.now() - heardAt < this.#blockMs) continue;
        }
        // ...and after each silent interval, check the producer is alive and the stream still there.
        heardAt = Date.now();
        let storeError: unknown;
        const [alive, present, produced] = await Promise.all([
          this.#redis.exists(this.#replicaKey(replica)),
          this.#redis.exists(this.#metaKey(streamId)),
          this.#redis.sismember(this.#streamsKey(replica), streamId),
        ]).catch((error: unknown) => {
          this.#report(error);
          storeError = error;
          return [0, 0, 0];
        });
        if (storeError !== undefined) {
          // Not the producer's death: the store itself did not answer (say what happened).
          if (signal.aborted) return;
          setStatus('lost', undefined, unreachable(storeError));
          return;
        }
        // Gone, or no longer producing this stream (its ending was lost with a Redis restart): one more
        // read (without blocking) for what it wrote just before, then `lost`.
        if (alive === 0 || present === 0 || produced === 0) producerGone = true;
      }
    } finally {
      signal.removeEventListener('abort', stopBlocking);
      if (blocking !== undefined) {
        this.#blocking.delete(blocking);
        blocking.disconnect();
      }
    }
  }

  async #readMeta(streamId: string): Promise<MetaRecord | undefined> {
    const text = await this.#redis.get(this.#metaKey(streamId));
    if (text === null) return undefined;
    try {
      const record = JSON.parse(text) as MetaRecord;
      // Another version's frames would be framed wrongly: such a stream is not resumable here.
      if (record.v !== 3) return undefined;
      // JSON drops undefined fields; the meta type has them.
      return { ...record, meta: { ...record.meta, flavor: record.meta.flavor ?? undefined } };
    } catch {
      return undefined;
    }
  }

  async #writeEnd(streamId: string, lastSeq: number, status: StoredStatus, ttlMs: number): Promise<void> {
    const framesKey = this.#framesKey(streamId);
    await Promise.all([
      this.#redis.xadd(framesKey, 'MAXLEN', '~', this.#maxFrames, `${lastSeq}-1`, 'e', status),
      this.#redis.pexpire(framesKey, ttlMs),
      this.#redis.pexpire(this.#metaKey(streamId), ttlMs),
    ]).catch(this.#failed);
  }

  #startHeartbeat(): void {
    if (this.#heartbeat !== undefined || this.#closed) return;
    const key = this.#replicaKey(this.replicaId);
    const streamsKey = this.#streamsKey(this.replicaId);
    const beat = () => {
      this.#redis.set(key, '1', 'PX', this.#producerTimeoutMs).catch(this.#failed);
      if (this.#producing.size > 0)
        this.#redis.pexpire(streamsKey, this.#producerTimeoutMs).catch(this.#failed);
    };
    beat();
    this.#heartbeat = setInterval(beat, this.#heartbeatMs);
    this.#heartbeat.unref();
  }

  // Hash tags ({id}) keep a stream's keys in one slot on Redis Cluster.
  #metaKey(streamId: string): string {
    return `${this.#prefix}{${streamId}}:meta`;
  }

  #framesKey(streamId: string): string {
    return `${this.#prefix}{${streamId}}:frames`;
  }

  #replicaKey(replica: string): string {
    return `${this.#prefix}replica:${replica}`;
  }

  /** The ids of the streams a replica is producing now (a set). */
  #streamsKey(replica: string): string {
    return `${this.#prefix}replica:${replica}:streams`;
  }

  readonly #failed = (error: unknown): void => {
    this.#report(error);
  };

  #report(error: unknown): void {
    this.errors += 1;
    this.#onError?.(error);
  }
}

/** Why a followed stream is `lost` when Redis fails under it (the URL's credentials redacted). */
function unreachable(error: unknown): string {
  return `the resume store (Redis) is unreachable: ${redactUrls(errorMessage(error))}`;
}

/** `<seq>-0` is a frame, `<seq>-1` the ending written after frame `seq`. */
function parseEntryId(id: string): { seq: number; end: boolean } {
  const dash = id.indexOf('-');
  return { seq: Number(id.slice(0, dash)), end: id.slice(dash + 1) !== '0' };
}

function field(fields: string[], name: string): string {
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) return fields[i + 1]!;
  return '';
}

/** RESP2 `XREAD` reply for one key: null, or `[[key, [[id, [field, value, ...]], ...]]]`. */
function parseXread(reply: unknown): Entry[] {
  if (!Array.isArray(reply) || reply.length === 0) return [];
  const stream = reply[0] as unknown;
  if (!Array.isArray(stream) || !Array.isArray(stream[1])) return [];
  return stream[1] as Entry[];
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) {
      resolve();
      return;
    }
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

function randomId(): string {
  const bytes = new Uint8Array(8);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}
