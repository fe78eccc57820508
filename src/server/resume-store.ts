import type { DialectId } from '../dialects/dialect.ts';

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
  kind?: 'legacy-error-field' | undefined;
}

/** What a resuming request needs to continue a stream it did not start. */
export interface StreamMeta {
  dialect: DialectId;
  flavor: string | undefined;
  headers: Record<string, string>;
  model: string | undefined;
  createdAt: number;
}

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
   * Frames after `afterSeq`. Resolves undefined when the stream is unknown or expired, and throws a
   * `ResumeGapError` when frames the client needs were already dropped by the store's bounds.
   */
  subscribe(streamId: string, afterSeq: number, signal: AbortSignal): Promise<ResumeSubscription | undefined>;
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

/** SSE ids the gateway writes: `<streamId>.<seq>`. */
export function formatEventId(streamId: string, seq: number): string {
  return `${streamId}.${seq}`;
}

export function parseEventId(id: string): { streamId: string; seq: number } | undefined {
  const dot = id.lastIndexOf('.');
  if (dot <= 0) return undefined;
  const seq = Number(id.slice(dot + 1));
  const streamId = id.slice(0, dot);
  if (!Number.isInteger(seq) || seq < 0 || !/^[A-Za-z0-9_-]{1,64}$/.test(streamId)) return undefined;
  return { streamId, seq };
}
