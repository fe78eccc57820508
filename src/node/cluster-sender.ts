/**
 * A message of `serve --workers` between the primary and a worker (over node:cluster's IPC channel).
 * Every one has `tw`, its kind: other messages on the channel are not ours and are ignored.
 */
export interface ClusterMessage {
  tw: string;
  [field: string]: unknown;
}

/** What sends one IPC message (process.send in a worker, worker.send in the primary). */
export type SendMessage = (message: ClusterMessage) => void;

/** A batch's payload characters before it is sent at once rather than at the end of the turn. */
const BATCH_CHARS = 64 * 1024;

/**
 * Sends messages in order, batching the frequent ones: `post` queues (a resume-store append per frame
 * must not cost an IPC message each: one JSON serialization and one pipe write per batch instead),
 * flushed at the end of the event-loop turn or once about 64 KiB are queued; `sendNow` flushes the
 * queue first, then sends (opens, closes, slot requests: whoever waits on them waits no turn more).
 * Order is the channel's: one queue, one pipe.
 */
export class ClusterSender {
  readonly #send: SendMessage;
  #queue: ClusterMessage[] = [];
  #chars = 0;
  #scheduled = false;

  constructor(send: SendMessage) {
    this.#send = send;
  }

  /** Queued; sent with the rest of this turn's messages. `chars`: its payload size, for the bound. */
  post(message: ClusterMessage, chars = 0): void {
    this.#queue.push(message);
    this.#chars += chars;
    if (this.#chars >= BATCH_CHARS) {
      this.flush();
      return;
    }
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(() => {
        this.#scheduled = false;
        this.flush();
      });
    }
  }

  /** Sent now, after everything queued before it. */
  sendNow(message: ClusterMessage): void {
    this.flush();
    this.#send(message);
  }

  flush(): void {
    const queue = this.#queue;
    if (queue.length === 0) return;
    this.#queue = [];
    this.#chars = 0;
    this.#send(queue.length === 1 ? queue[0]! : { tw: 'batch', m: queue });
  }
}

/** The messages of one received message: a batch's in order, else itself. */
export function unbatch(message: unknown): ClusterMessage[] {
  if (typeof message !== 'object' || message === null) return [];
  const tw = (message as { tw?: unknown }).tw;
  if (typeof tw !== 'string') return [];
  if (tw === 'batch') {
    const inner = (message as { m?: unknown }).m;
    return Array.isArray(inner) ? (inner as ClusterMessage[]) : [];
  }
  return [message as ClusterMessage];
}
