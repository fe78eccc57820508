import type { DialectId, FrameKind } from '../../dialects/dialect.ts';

/**
 * One written SSE event: its sequence number and what the dialect's encoder wrote (the payload, and its
 * kind). Its wire text, `id: <stream>.<seq>` line included, is built again from these when the frame is
 * read back (`frameText`): stored as the payload, a frame keeps the encoder's own string, not the flat
 * copy of the whole event that writing it to the socket makes (that copy was most of what a stream's
 * frames held: bench/README.md).
 */
export interface StoredFrame {
  seq: number;
  data: string;
  /** How the payload is framed: an SSE event name, or the legacy `error:` line (`FrameKind`). */
  kind?: FrameKind | undefined;
}

/** What a resuming request needs to continue a stream it did not start. */
export interface StreamMeta {
  dialect: DialectId;
  flavor: string | undefined;
  headers: Record<string, string>;
  model: string | undefined;
  createdAt: number;
  /**
   * Who opened the stream, when API keys are configured: the hex SHA-256 of the key it presented (what
   * the guard compares keys by; it cannot be presented as a key). A resume must come with the same key.
   */
  owner?: string | undefined;
  /**
   * Whose share of the store's bounds the stream takes: its owner, else the client's address (when the
   * server adapter knows it). One client's streams are evicted before anyone else's.
   */
  client?: string | undefined;
  /**
   * The request said `store: false` (OpenAI Responses): the stream is no retrievable response
   * (`GET /v1/responses/{id}` answers 404: responses-cursor.ts), and its frames are kept for
   * `Last-Event-ID` resume only while it runs and for `NO_STORE_RETAIN_MS` after its end, not the
   * store's TTL.
   */
  noStore?: boolean | undefined;
}

/**
 * How long a `store: false` stream stays resumable after its end: long enough for a client cut just
 * before the end to reconnect (the gateway's `retry:` advice is 3 s), short enough that the answer is
 * not kept as a stored response would be.
 */
export const NO_STORE_RETAIN_MS = 30_000;

/**
 * How a stream ended, as far as the store knows: `live` while its producer writes; `complete` (it ended
 * with its terminator) or `failed` (it ended with its dialect's error shape) when the producer wrote the
 * ending; `cancelled` (its client left and the upstream was stopped) or `lost` (the producer died or the
 * store dropped it) when no ending was written, so a resuming reader must write an honest one itself.
 */
export type StoredStatus = 'live' | 'complete' | 'failed' | 'cancelled' | 'lost';

export type ClosingStatus = 'complete' | 'failed' | 'cancelled';

export interface ResumeSubscription {
  meta: StreamMeta;
  /** Frames with seq > the requested one, then live frames, ending when the stream ends. */
  frames: AsyncIterable<StoredFrame>;
  /** How the stream ended (call after `frames` is exhausted). */
  status(): StoredStatus;
  /**
   * The seq of the last frame the producer wrote, when the store recorded it with the ending (Redis):
   * a reader that got fewer knows frames were lost on the way (call after `frames` is exhausted).
   */
  endSeq?(): number | undefined;
  /**
   * Why a `lost` stream stopped, when the store knows, in words a resumed stream's error ends with
   * ("its worker process died", "the resume store is unreachable: ..."): undefined for a producer that
   * is simply gone (call after `frames` is exhausted).
   */
  lostReason?(): string | undefined;
}

/**
 * Where the gateway keeps each stream's written events so a reconnecting client (`Last-Event-ID`) gets
 * exactly what it missed, then the live rest. Asynchronous throughout, so a shared store (Redis) fits
 * the same shape; `append` is fire-and-forget so the relay never waits on the store per event.
 */
export interface ResumeStore {
  open(streamId: string, meta: StreamMeta): Promise<void>;
  append(streamId: string, frame: StoredFrame): void;
  close(streamId: string, status: ClosingStatus): Promise<void>;
  /**
   * Frames after `afterSeq`. Resolves undefined when the stream is unknown or expired, or was opened by
   * another owner than `owner` (told apart from an unknown stream by nothing); throws a
   * `ResumeGapError` when frames the client needs were already dropped by the store's bounds, and a
   * `NoSuchEventError` when `afterSeq` is past the last frame written.
   */
  subscribe(
    streamId: string,
    afterSeq: number,
    signal: AbortSignal,
    owner?: string | undefined,
  ): Promise<ResumeSubscription | undefined>;
  /** Frees resources (timers, connections). */
  shutdown(): Promise<void>;
}

export class ResumeGapError extends Error {
  readonly firstAvailableSeq: number;
  constructor(firstAvailableSeq: number) {
    super(`the events after the requested id are no longer stored (the oldest kept is ${firstAvailableSeq})`);
    this.name = 'ResumeGapError';
    this.firstAvailableSeq = firstAvailableSeq;
  }
}

/** A resume from an id the stream never wrote (past its last frame, finished or live). */
export class NoSuchEventError extends Error {
  readonly lastSeq: number;
  constructor(lastSeq: number) {
    super(`no such event: the stream's last event is number ${lastSeq}`);
    this.name = 'NoSuchEventError';
    this.lastSeq = lastSeq;
  }
}

/**
 * Whether a stream opened by `stored` may be resumed by `presented` (both undefined without keys). The
 * strings are hex digests of equal length: compared without an early exit all the same.
 */
export function ownerMatches(stored: string | undefined, presented: string | undefined): boolean {
  if (stored === undefined || presented === undefined) return stored === presented;
  if (stored.length !== presented.length) return false;
  let diff = 0;
  for (let i = 0; i < stored.length; i++) diff |= stored.charCodeAt(i) ^ presented.charCodeAt(i);
  return diff === 0;
}

/** SSE ids the gateway writes: `<streamId>.<seq>`. */
export function formatEventId(streamId: string, seq: number): string {
  return `${streamId}.${seq}`;
}

/**
 * The parts of an id the gateway wrote. The sequence number is plain decimal as written (`0`, or digits
 * not starting with 0, at most 15 of them): `Number()` would take `''`, `0x5`, `1e3` and ` 5` too.
 */
export function parseEventId(id: string): { streamId: string; seq: number } | undefined {
  const dot = id.lastIndexOf('.');
  if (dot <= 0) return undefined;
  const digits = id.slice(dot + 1);
  const streamId = id.slice(0, dot);
  if (!/^(?:0|[1-9][0-9]{0,14})$/.test(digits) || !/^[A-Za-z0-9_-]{1,64}$/.test(streamId)) return undefined;
  return { streamId, seq: Number(digits) };
}
