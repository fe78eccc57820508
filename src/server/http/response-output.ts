/**
 * Where a streamed response's text goes. In-process consumers read `body`, a ReadableStream of UTF-8
 * bytes. A server adapter that owns a socket can instead `attach` a writer through the DIRECT_BODY
 * symbol on `body`: text then goes straight to the socket (no Web Streams queue, no TextEncoder copy),
 * which is the gateway's hot path under `tokenwire serve` (node/serve.ts; measured in bench/RESULTS.md).
 * Text written before either consumer arrives is held and flushed to whichever comes first.
 */
import { LightHeaders, lightResponse } from './light-headers.ts';

export const DIRECT_BODY: unique symbol = Symbol.for('tokenwire.direct-body') as never;

export interface DirectWriter {
  /** Writes text; false when the socket's buffer is full (wait for `drained`). */
  write(text: string): boolean;
  /** The clean end, after `text` when given (one write for the last text and the end). */
  end(text?: string): void;
  /** Ends the response abruptly: the client sees a cut, never a clean end. */
  destroy(): void;
}

export interface DirectAttachment {
  /** The socket's buffer emptied. */
  drained(): void;
  /** The client went away before the end. */
  closed(): void;
}

export interface DirectBody {
  attach(writer: DirectWriter): DirectAttachment;
}

export function directBodyOf(body: ReadableStream<Uint8Array> | Response | null): DirectBody | undefined {
  if (body === null) return undefined;
  const direct = (body as unknown as Record<symbol, unknown>)[DIRECT_BODY];
  return typeof direct === 'object' && direct !== null ? (direct as DirectBody) : undefined;
}

/**
 * Set on a request by a server adapter that takes a *direct-only* response: `body` null and DIRECT_BODY
 * on the Response itself (node/serve.ts does). The gateway then builds no ReadableStream for the body
 * (cost: bench/README.md "Why the code is shaped as it is", Response bodies only when read).
 */
export const TAKES_DIRECT_RESPONSE: unique symbol = Symbol.for('tokenwire.takes-direct-response') as never;

export function takesDirectResponse(request: object): boolean {
  return (request as Record<symbol, unknown>)[TAKES_DIRECT_RESPONSE] === true;
}

/** A streamed body's writer, from its ReadableStream or, for a direct-only response, the Response. */
export function directBodyOfResponse(response: Response): DirectBody | undefined {
  return directBodyOf(response.body) ?? directBodyOf(response);
}

export interface DirectResponseInit {
  status?: number | undefined;
  statusText?: string | undefined;
  headers?: Record<string, string> | Iterable<readonly [string, string]> | undefined;
}

/**
 * A Response whose body only a direct writer reads (see TAKES_DIRECT_RESPONSE): a stand-in, not an
 * undici Response (light-headers.ts); only the adapter that asked for it, and the guard on the way, read it.
 */
export function directOnlyResponse(direct: DirectBody, init: DirectResponseInit): Response {
  const headers = init.headers instanceof LightHeaders ? init.headers : new LightHeaders(init.headers);
  return lightResponse(
    { status: init.status ?? 200, statusText: init.statusText ?? '', headers },
    DIRECT_BODY,
    direct,
  );
}

const encoder = new TextEncoder();

/** Chunks a slow in-process reader may fall behind before the upstream read waits. */
const QUEUE_LIMIT = 64;

export class ResponseOutput {
  /** Released once a direct writer attaches: an idle stream then holds no Web Streams objects. */
  #body: ReadableStream<Uint8Array> | undefined;
  #direct: DirectBody | undefined;
  #mode: 'pending' | 'stream' | 'direct' = 'pending';
  #held: string[] = [];
  #heldEnding: 'end' | 'error' | undefined;
  #controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  #writer: DirectWriter | undefined;
  #socketFull = false;
  /** Direct text written in this tick, not yet handed to the writer (see `write`). */
  #pending = '';
  readonly #flush = () => {
    const text = this.#pending;
    if (text === '') return;
    this.#pending = '';
    if (!this.#gone && !this.#writer!.write(text)) this.#socketFull = true;
  };
  #waiting: (() => void) | undefined;
  #gone = false;
  #ended = false;
  readonly #onGone: () => void;

  /** `onGone`: the client stopped reading (disconnect or cancel), before the end. */
  constructor(onGone: () => void) {
    this.#onGone = onGone;
  }

  /**
   * The body for the Response; taken once, before anyone reads it. Built on first use, not in the
   * constructor: the gateway takes the body only after the upstream request has left (this object is
   * made before it, on the path to the TTFT; bench/README.md, Response bodies only when read).
   */
  get body(): ReadableStream<Uint8Array> {
    if (this.#mode === 'direct') throw new TypeError('this response body was already taken directly');
    this.#body ??= this.#createBody();
    return this.#body;
  }

  #createBody(): ReadableStream<Uint8Array> {
    const body = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          this.#controller = controller;
        },
        pull: () => {
          if (this.#mode === 'pending') this.#takeAsStream();
          this.#wake();
        },
        cancel: () => this.#leave(),
      },
      // Nothing is pulled until someone reads: an adapter can take the body directly instead.
      { highWaterMark: 0 },
    );
    (body as unknown as Record<symbol, unknown>)[DIRECT_BODY] = this.direct;
    return body;
  }

  /** The writer's way in: attach a socket writer instead of reading `body`. */
  get direct(): DirectBody {
    this.#direct ??= {
      attach: (writer) => {
        if (this.#mode !== 'pending') throw new TypeError('this response body is already being read');
        this.#mode = 'direct';
        this.#writer = writer;
        // The Response and its stream are no longer read by anyone: let them go (they would stay with
        // every open stream).
        this.#body = undefined;
        this.#controller = undefined;
        const held = this.#held.join('');
        this.#held = [];
        if (this.#heldEnding === 'end') writer.end(held);
        else {
          if (held !== '' && !writer.write(held)) this.#socketFull = true;
          if (this.#heldEnding === 'error') writer.destroy();
        }
        return {
          drained: () => {
            this.#socketFull = false;
            this.#wake();
          },
          closed: () => this.#leave(),
        };
      },
    };
    return this.#direct;
  }

  /** The client is gone: nothing written reaches anyone. */
  get gone(): boolean {
    return this.#gone;
  }

  /** The client went away in a way the body did not see (its request signal fired). */
  leave(): void {
    this.#leave();
  }

  write(text: string): void {
    if (this.#gone || this.#ended) return;
    switch (this.#mode) {
      case 'direct':
        // The events of one upstream read leave in one write, in a microtask queued now: it runs once
        // every piece of that read is handled. One string per socket write instead of one per event (or
        // per HTTP chunk of the upstream's), each of which node:http frames and writes on its own.
        if (this.#pending === '') queueMicrotask(this.#flush);
        this.#pending += text;
        return;
      case 'stream':
        this.#controller!.enqueue(encoder.encode(text));
        return;
      case 'pending':
        this.#held.push(text);
        return;
    }
  }

  /** The clean end of the response. */
  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    if (this.#gone) return;
    if (this.#mode === 'direct') {
      const text = this.#pending;
      this.#pending = '';
      this.#writer!.end(text);
    } else if (this.#mode === 'stream') this.#controller!.close();
    else this.#heldEnding = 'end';
  }

  /** An abrupt end: the client sees the connection cut. */
  destroy(): void {
    if (this.#ended) return;
    this.#ended = true;
    if (this.#gone) return;
    if (this.#mode === 'direct') {
      this.#flush();
      this.#writer!.destroy();
    } else if (this.#mode === 'stream') this.#controller!.error(new Error('stream aborted'));
    else this.#heldEnding = 'error';
  }

  /** A promise while the client is behind, so the upstream read can wait; undefined otherwise. */
  backpressure(): Promise<void> | undefined {
    if (this.#gone || this.#ended) return undefined;
    // No flush here: the text of every piece of one upstream read leaves in the write `write` queued,
    // once that read's pieces are all handled (a read under load carries several: one write per piece
    // was one syscall each). A socket found full then pauses the read after it.
    const behind =
      this.#mode === 'direct'
        ? this.#socketFull
        : this.#mode === 'stream' && (this.#controller!.desiredSize ?? 0) < -QUEUE_LIMIT;
    if (!behind) return undefined;
    return new Promise((resolve) => {
      this.#waiting = resolve;
    });
  }

  #takeAsStream(): void {
    this.#mode = 'stream';
    const controller = this.#controller!;
    for (const text of this.#held) controller.enqueue(encoder.encode(text));
    this.#held = [];
    if (this.#heldEnding === 'end') controller.close();
    else if (this.#heldEnding === 'error') controller.error(new Error('stream aborted'));
  }

  #wake(): void {
    const waiting = this.#waiting;
    this.#waiting = undefined;
    waiting?.();
  }

  #leave(): void {
    if (this.#gone) return;
    this.#gone = true;
    this.#held = [];
    this.#pending = '';
    this.#wake();
    if (!this.#ended) this.#onGone();
  }
}
