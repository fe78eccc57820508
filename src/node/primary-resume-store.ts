import type { MemoryResumeStore } from '../server/resume/memory-resume-store.ts';
import {
  type ClosingStatus,
  NoSuchEventError,
  ResumeGapError,
  type ResumeStore,
  type ResumeSubscription,
  type StoredFrame,
  type StoredStatus,
  type StreamMeta,
} from '../server/resume/resume-store.ts';
import type { ClusterMessage, ClusterSender } from './cluster-sender.ts';

/** A frame on the channel: `[seq, data]` or `[seq, data, kind]` (short: one per relayed event). */
type WireFrame = [number, string] | [number, string, string];

function toWire(frame: StoredFrame): WireFrame {
  return frame.kind === undefined ? [frame.seq, frame.data] : [frame.seq, frame.data, frame.kind];
}

function fromWire(frame: WireFrame): StoredFrame {
  return frame.length === 2
    ? { seq: frame[0], data: frame[1] }
    : { seq: frame[0], data: frame[1], kind: frame[2] as StoredFrame['kind'] };
}

/**
 * Payload characters the primary sends a subscription ahead of what its worker's reader has taken:
 * a follower that stops reading holds at most this much in its worker (and the channel),
 * the rest waiting in the primary's store. The worker gives credit back in halves of it (`rs-more`).
 */
export const SUBSCRIPTION_WINDOW_CHARS = 256 * 1024;

interface Subscriber {
  sid: number;
  /** Payload characters read by the body since the last credit given back. */
  taken: number;
  frames: StoredFrame[];
  ended: boolean;
  status: StoredStatus;
  endSeq: number | undefined;
  lostReason: string | undefined;
  wake: (() => void) | undefined;
}

/**
 * The resume store of a `serve --workers` worker without Redis: every call goes to the primary
 * process, which holds one `MemoryResumeStore` for all workers (`ResumeStoreHost`), so a stream opened
 * on one worker resumes on any. `open`, `append` and `close` are fire-and-forget, batched per
 * event-loop turn (`ClusterSender`): `open` and `close` resolve without waiting for an answer; the
 * channel keeps them in order with the appends, and the primary applies them in that order. A
 * subscription's frames (the stored ones, then live ones) stream back as the primary reads them.
 * Appends leave at the end of the turn that wrote the frames to the client's socket, so they reach the
 * primary before any resume from an id the client was sent (that needs the client's round trip).
 */
export class PrimaryResumeStore implements ResumeStore {
  readonly #sender: ClusterSender;
  #nextSid = 1;
  readonly #pending = new Map<
    number,
    { resolve: (value: ResumeSubscription | undefined) => void; reject: (error: Error) => void }
  >();
  readonly #subscribers = new Map<number, Subscriber>();

  constructor(sender: ClusterSender) {
    this.#sender = sender;
  }

  async open(streamId: string, meta: StreamMeta): Promise<void> {
    // Batched too (one IPC message per turn for all of a worker's streams): a resume of this stream
    // needs the client's round trip first, by when the turn's batch has long left.
    this.#sender.post({ tw: 'rs-open', id: streamId, meta }, 256);
  }

  append(streamId: string, frame: StoredFrame): void {
    this.#sender.post({ tw: 'rs-append', id: streamId, f: toWire(frame) }, frame.data.length);
  }

  async close(streamId: string, status: ClosingStatus): Promise<void> {
    this.#sender.post({ tw: 'rs-close', id: streamId, status });
  }

  subscribe(
    streamId: string,
    afterSeq: number,
    signal: AbortSignal,
    owner?: string | undefined,
  ): Promise<ResumeSubscription | undefined> {
    const sid = this.#nextSid++;
    return new Promise((resolve, reject) => {
      this.#pending.set(sid, { resolve, reject });
      const message: ClusterMessage = { tw: 'rs-sub', sid, id: streamId, after: afterSeq };
      if (owner !== undefined) message.owner = owner;
      this.#sender.sendNow(message);
      signal.addEventListener(
        'abort',
        () => {
          const waiting = this.#pending.get(sid);
          this.#pending.delete(sid);
          waiting?.resolve(undefined);
          const subscriber = this.#subscribers.get(sid);
          if (subscriber !== undefined) {
            this.#subscribers.delete(sid);
            subscriber.ended = true;
            subscriber.wake?.();
          }
          this.#sender.sendNow({ tw: 'rs-unsub', sid });
        },
        { once: true },
      );
    });
  }

  async shutdown(): Promise<void> {
    this.#sender.flush();
    for (const subscriber of this.#subscribers.values()) {
      subscriber.ended = true;
      subscriber.status = 'lost';
      subscriber.lostReason = 'the gateway shut down';
      subscriber.wake?.();
    }
    this.#subscribers.clear();
  }

  /** A message from the primary; true when it was one of the store's. */
  receive(message: ClusterMessage): boolean {
    switch (message.tw) {
      case 'rs-sub-ok':
      case 'rs-sub-none':
      case 'rs-sub-gap':
      case 'rs-sub-nse':
        this.#answer(message);
        return true;
      case 'rs-frames': {
        const subscriber = this.#subscribers.get(message.sid as number);
        if (subscriber === undefined) return true;
        for (const frame of message.f as WireFrame[]) subscriber.frames.push(fromWire(frame));
        subscriber.wake?.();
        return true;
      }
      case 'rs-end': {
        const sid = message.sid as number;
        const subscriber = this.#subscribers.get(sid);
        if (subscriber === undefined) return true;
        this.#subscribers.delete(sid);
        subscriber.ended = true;
        subscriber.status = message.status as StoredStatus;
        subscriber.endSeq = message.endSeq as number | undefined;
        subscriber.lostReason = message.reason as string | undefined;
        subscriber.wake?.();
        return true;
      }
      default:
        return false;
    }
  }

  #answer(message: ClusterMessage): void {
    const sid = message.sid as number;
    const waiting = this.#pending.get(sid);
    if (waiting === undefined) return;
    this.#pending.delete(sid);
    if (message.tw === 'rs-sub-none') waiting.resolve(undefined);
    else if (message.tw === 'rs-sub-gap') waiting.reject(new ResumeGapError(message.first as number));
    else if (message.tw === 'rs-sub-nse') waiting.reject(new NoSuchEventError(message.last as number));
    else {
      const subscriber: Subscriber = {
        sid,
        taken: 0,
        frames: [],
        ended: false,
        status: 'live',
        endSeq: undefined,
        lostReason: undefined,
        wake: undefined,
      };
      this.#subscribers.set(sid, subscriber);
      const meta = message.meta as StreamMeta;
      // JSON drops undefined fields: the meta keeps the shape the gateway wrote.
      meta.flavor ??= undefined;
      waiting.resolve({
        meta,
        frames: drain(subscriber, this.#sender),
        status: () => subscriber.status,
        endSeq: () => subscriber.endSeq,
        lostReason: () => subscriber.lostReason,
      });
    }
  }
}

/** A subscription's flow control on the primary's side. */
interface Credit {
  inFlight: number;
  wake: (() => void) | undefined;
}

async function* drain(subscriber: Subscriber, sender: ClusterSender): AsyncGenerator<StoredFrame> {
  let index = 0;
  for (;;) {
    if (index < subscriber.frames.length) {
      const frame = subscriber.frames[index]!;
      index += 1;
      // Read by the body: credit for more, given back in halves of the window (one message each).
      subscriber.taken += frame.data.length;
      if (subscriber.taken >= SUBSCRIPTION_WINDOW_CHARS / 2 && !subscriber.ended) {
        sender.post({ tw: 'rs-more', sid: subscriber.sid, chars: subscriber.taken });
        subscriber.taken = 0;
      }
      // Let go of what was read, in bulk (a shift per frame would copy the array each time).
      if (index > 1024) {
        subscriber.frames = subscriber.frames.slice(index);
        index = 0;
      }
      yield frame;
      continue;
    }
    if (subscriber.ended) return;
    await new Promise<void>((resolve) => {
      subscriber.wake = () => {
        subscriber.wake = undefined;
        resolve();
      };
    });
  }
}

/**
 * The primary's side of `PrimaryResumeStore`: applies each worker's calls, in the order they came, to
 * one `MemoryResumeStore`, and streams subscriptions back. When a worker dies, its subscriptions stop and
 * the streams it was still writing end as `lost`, "its worker process died" (no ending was written: a
 * resuming reader writes an honest one, saying so), so nobody waits forever on a producer that is gone.
 */
export class ResumeStoreHost {
  readonly #store: MemoryResumeStore;
  /** Per worker: streams it opened and has not closed, and its subscriptions' aborts. */
  readonly #workers = new Map<
    number,
    {
      live: Set<string>;
      subscriptions: Map<number, AbortController>;
      /** Per subscription: characters sent and not yet credited back, and who waits for credit. */
      credits: Map<number, Credit>;
      sender: ClusterSender;
    }
  >();

  constructor(store: MemoryResumeStore) {
    this.#store = store;
  }

  #worker(worker: number, sender: ClusterSender) {
    let state = this.#workers.get(worker);
    if (state === undefined) {
      state = { live: new Set(), subscriptions: new Map(), credits: new Map(), sender };
      this.#workers.set(worker, state);
    }
    return state;
  }

  /** A message from `worker`; true when it was one of the store's. */
  receive(worker: number, sender: ClusterSender, message: ClusterMessage): boolean {
    const store = this.#store;
    switch (message.tw) {
      case 'rs-append':
        store.append(message.id as string, fromWire(message.f as WireFrame));
        return true;
      case 'rs-open': {
        const id = message.id as string;
        this.#worker(worker, sender).live.add(id);
        void store.open(id, message.meta as StreamMeta);
        return true;
      }
      case 'rs-close': {
        const id = message.id as string;
        this.#workers.get(worker)?.live.delete(id);
        void store.close(id, message.status as ClosingStatus);
        return true;
      }
      case 'rs-sub':
        void this.#subscribe(this.#worker(worker, sender), message);
        return true;
      case 'rs-unsub': {
        const state = this.#workers.get(worker);
        const sid = message.sid as number;
        state?.subscriptions.get(sid)?.abort();
        state?.subscriptions.delete(sid);
        return true;
      }
      case 'rs-more': {
        const credit = this.#workers.get(worker)?.credits.get(message.sid as number);
        if (credit !== undefined) {
          credit.inFlight -= Number(message.chars) || 0;
          credit.wake?.();
        }
        return true;
      }
      default:
        return false;
    }
  }

  /** A worker exited: its subscriptions end, its unfinished streams are lost, saying why. */
  workerGone(worker: number, how = 'its worker process died'): void {
    const state = this.#workers.get(worker);
    if (state === undefined) return;
    this.#workers.delete(worker);
    for (const controller of state.subscriptions.values()) controller.abort();
    for (const id of state.live) this.#store.lose(id, how);
  }

  async #subscribe(
    state: {
      subscriptions: Map<number, AbortController>;
      credits: Map<number, Credit>;
      sender: ClusterSender;
    },
    message: ClusterMessage,
  ): Promise<void> {
    const sid = message.sid as number;
    const sender = state.sender;
    const controller = new AbortController();
    state.subscriptions.set(sid, controller);
    let subscription: ResumeSubscription | undefined;
    try {
      subscription = await this.#store.subscribe(
        message.id as string,
        message.after as number,
        controller.signal,
        message.owner as string | undefined,
      );
    } catch (error) {
      state.subscriptions.delete(sid);
      if (error instanceof ResumeGapError)
        sender.sendNow({ tw: 'rs-sub-gap', sid, first: error.firstAvailableSeq });
      else if (error instanceof NoSuchEventError)
        sender.sendNow({ tw: 'rs-sub-nse', sid, last: error.lastSeq });
      else sender.sendNow({ tw: 'rs-sub-none', sid });
      return;
    }
    if (subscription === undefined) {
      state.subscriptions.delete(sid);
      sender.sendNow({ tw: 'rs-sub-none', sid });
      return;
    }
    sender.sendNow({ tw: 'rs-sub-ok', sid, meta: subscription.meta });
    const credit: Credit = { inFlight: 0, wake: undefined };
    state.credits.set(sid, credit);
    const aborted = () => credit.wake?.();
    controller.signal.addEventListener('abort', aborted, { once: true });
    // Frames of a turn go in one message (the sender batches; one frame per entry, in order), as far
    // as the window allows: past it, the rest is read from the store as the worker's reader takes it.
    try {
      for await (const frame of subscription.frames) {
        if (controller.signal.aborted) break;
        sender.post({ tw: 'rs-frames', sid, f: [toWire(frame)] }, frame.data.length);
        credit.inFlight += frame.data.length;
        while (credit.inFlight >= SUBSCRIPTION_WINDOW_CHARS && !controller.signal.aborted)
          await new Promise<void>((resolve) => {
            credit.wake = () => {
              credit.wake = undefined;
              resolve();
            };
          });
      }
    } finally {
      controller.signal.removeEventListener('abort', aborted);
      state.credits.delete(sid);
    }
    state.subscriptions.delete(sid);
    if (controller.signal.aborted) return;
    const end: ClusterMessage = { tw: 'rs-end', sid, status: subscription.status() };
    const endSeq = subscription.endSeq?.();
    if (endSeq !== undefined) end.endSeq = endSeq;
    const reason = subscription.lostReason?.();
    if (reason !== undefined) end.reason = reason;
    sender.sendNow(end);
  }
}
