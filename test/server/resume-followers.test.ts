import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, describe, it } from 'node:test';
import { serve } from '../../src/node/serve.ts';
import { createGuardedGateway } from '../../src/server/guard/guard-gateway.ts';
import { MemoryResumeStore } from '../../src/server/resume/memory-resume-store.ts';
import type {
  ClosingStatus,
  ResumeStore,
  ResumeSubscription,
  StoredFrame,
  StreamMeta,
} from '../../src/server/resume/resume-store.ts';
import { FOLLOWER_QUEUE_BYTES, followerQueuedBytes } from '../../src/server/resume/resumed-body.ts';

// A follower of a live stream (a `Last-Event-ID` resume, or the Responses cursor
// `GET /v1/responses/{id}?stream=true`) that stops reading held the whole live stream in the gateway
// (+869 MiB with 20 idle followers of a 33.6 MiB stream). It must hold a bounded amount, pull from the
// store as it drains, and leave the producer and the other readers alone.

const closers: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const close of closers.reverse()) await close();
});

const CHUNK_TEXT = 'x'.repeat(8192);
const CHUNKS = 2400; // about 19 MiB of SSE: several times what a paused loopback socket's buffers take

/** An OpenAI chat upstream writing `chunks` long chunks, as fast as it is read (its own backpressure). */
async function longUpstream(chunks: number): Promise<Response> {
  const encoder = new TextEncoder();
  let i = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (i < chunks)
        controller.enqueue(
          encoder.encode(
            `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"${CHUNK_TEXT}"},"finish_reason":null}]}\n\n`,
          ),
        );
      else if (i === chunks)
        controller.enqueue(
          encoder.encode(
            'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n',
          ),
        );
      else controller.close();
      i += 1;
    },
  });
  return new Response(body, { headers: { 'content-type': 'text/event-stream' } });
}

/** The store, with how many payload characters each subscription has taken from it. */
class CountingStore implements ResumeStore {
  readonly inner = new MemoryResumeStore({ maxBytesPerStream: 64 * 1024 * 1024 });
  readonly taken: { chars: number }[] = [];
  open(streamId: string, meta: StreamMeta): Promise<void> {
    return this.inner.open(streamId, meta);
  }
  append(streamId: string, frame: StoredFrame): void {
    this.inner.append(streamId, frame);
  }
  close(streamId: string, status: ClosingStatus): Promise<void> {
    return this.inner.close(streamId, status);
  }
  async subscribe(
    streamId: string,
    afterSeq: number,
    signal: AbortSignal,
    owner?: string | undefined,
  ): Promise<ResumeSubscription | undefined> {
    const subscription = await this.inner.subscribe(streamId, afterSeq, signal, owner);
    if (subscription === undefined) return undefined;
    const count = { chars: 0 };
    this.taken.push(count);
    const frames = subscription.frames;
    return Object.assign({}, subscription, {
      frames: (async function* () {
        for await (const frame of frames) {
          count.chars += frame.data.length;
          yield frame;
        }
      })(),
    });
  }
  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }
}

async function gateway(chunks: number): Promise<{ port: number; store: CountingStore }> {
  const store = new CountingStore();
  const { gateway: g, fetch } = createGuardedGateway({
    upstreams: [
      {
        name: 'long',
        url: 'http://long.internal',
        dialects: ['openai-chat'],
        fetch: () => longUpstream(chunks),
        models: ['m'],
      },
    ],
    keepaliveMs: 0,
    resumeStore: store,
  });
  const served = await serve(fetch);
  closers.push(async () => {
    await g.close();
    await served.close();
  });
  return { port: served.port, store };
}

/** A raw HTTP/1.1 exchange on a socket of its own (`connection: close`: the body ends with it). */
interface Exchange {
  socket: Socket;
  /** Everything read so far (head and chunked body). */
  bytes: () => Buffer;
  ended: Promise<void>;
}

function exchange(port: number, head: string, body = ''): Exchange {
  const socket = connect(port, '127.0.0.1');
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  closers.push(async () => socket.destroy());
  const ended = new Promise<void>((resolve, reject) => {
    socket.on('end', () => resolve());
    socket.on('error', reject);
  });
  socket.write(
    `${head}\r\nhost: gateway\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  return { socket, bytes: () => Buffer.concat(chunks), ended };
}

/** The body of a complete chunked response, de-chunked, as text. */
function bodyOf(raw: Buffer): { status: number; headers: string; text: string } {
  const split = raw.indexOf('\r\n\r\n');
  const headers = raw.subarray(0, split).toString('latin1');
  const parts: Buffer[] = [];
  let at = split + 4;
  for (;;) {
    const line = raw.indexOf('\r\n', at);
    const size = Number.parseInt(raw.subarray(at, line).toString('latin1'), 16);
    if (!(size > 0)) break;
    parts.push(raw.subarray(line + 2, line + 2 + size));
    at = line + 2 + size + 2;
  }
  return { status: Number(headers.split(' ')[1]), headers, text: Buffer.concat(parts).toString('utf8') };
}

/** SSE events as `id data` (retry lines and comments dropped). */
function events(text: string): string[] {
  const out: string[] = [];
  for (const block of text.split('\n\n')) {
    const data = /^data: (.*)$/m.exec(block)?.[1];
    if (data !== undefined) out.push(`${/^id: (.*)$/m.exec(block)?.[1] ?? ''} ${data}`);
  }
  return out;
}

async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 20));
}

/**
 * Opens the long stream with `path` and a producer that pauses after its first events; `follow` opens
 * the followers (the first idle: never read, the second reading), then the producer reads on.
 */
async function scenario(
  chunks: number,
  path: string,
  requestBody: string,
  follow: (port: number, streamId: string) => [idle: Exchange, reading: Exchange],
) {
  const { port, store } = await gateway(chunks);
  const producer = exchange(port, `POST ${path} HTTP/1.1`, requestBody);
  let streamId = '';
  await until(() => {
    const seen = producer.bytes().toString('latin1');
    streamId = /x-tokenwire-stream-id: (\S+)/i.exec(seen)?.[1] ?? '';
    return streamId !== '' && seen.includes(`id: ${streamId}.3\n`);
  });
  // Paused: the stream stays live (the upstream is read at the producer's pace) while followers join.
  producer.socket.pause();
  const [idle, reading] = follow(port, streamId);
  idle.socket.pause();
  await until(() => store.taken.length === 2);
  let peakQueued = 0;
  const sampler = setInterval(() => {
    peakQueued = Math.max(peakQueued, followerQueuedBytes());
  }, 5);
  producer.socket.resume();
  await producer.ended;
  await reading.ended;
  clearInterval(sampler);
  peakQueued = Math.max(peakQueued, followerQueuedBytes());
  const produced = bodyOf(producer.bytes());
  const read = bodyOf(reading.bytes());
  assert.equal(produced.status, 200);
  assert.equal(read.status, 200);
  const streamBytes = Buffer.byteLength(produced.text);
  assert.ok(streamBytes > 16 * 1024 * 1024, `a long stream: ${streamBytes} bytes`);

  // The gateway's own account: what each follower's body queues stays at its mark, plus a frame (the
  // Responses events that end a stream repeat its whole text: one such frame is as long).
  const longestFrame = Math.max(...produced.text.split('\n\n').map((block) => Buffer.byteLength(block) + 2));
  const bound = 2 * (FOLLOWER_QUEUE_BYTES + longestFrame);
  assert.ok(peakQueued <= bound, `queued for the two followers at most ${bound} bytes: ${peakQueued}`);
  // And what it took from the store: what its socket's buffers hold (a few MiB on loopback), not the
  // whole stream.
  const idleTaken = store.taken[0]!.chars;
  assert.ok(idleTaken < streamBytes / 2, `the idle follower took ${idleTaken} of ${streamBytes}`);

  // Then it reads: the rest comes from the store, to the end, the same events the reader got.
  idle.socket.resume();
  await idle.ended;
  const late = bodyOf(idle.bytes());
  assert.equal(late.status, 200);
  assert.deepEqual(events(late.text), events(read.text), 'the idle follower gets every event, late');
  assert.equal(followerQueuedBytes(), 0, 'nothing left queued');
  return { streamId, produced: events(produced.text), read: events(read.text) };
}

const chatBody = JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'go' }] });

describe('followers of a live stream keep to backpressure', { timeout: 120_000 }, () => {
  it('an idle Last-Event-ID follower holds a bounded queue; producer and reader unaffected', async () => {
    const { streamId, produced, read } = await scenario(
      CHUNKS,
      '/v1/chat/completions',
      chatBody,
      (port, id) => {
        const resume = (extra: string) =>
          exchange(port, `POST /v1/chat/completions HTTP/1.1\r\nlast-event-id: ${id}.1${extra}`, chatBody);
        return [resume(''), resume('')];
      },
    );
    assert.equal(produced.at(-1), `${streamId}.${CHUNKS + 2} [DONE]`);
    assert.equal(produced.length, CHUNKS + 2);
    assert.deepEqual(read, produced.slice(1), 'the reading follower: every event after id 1');
  });

  it('an idle GET /v1/responses/{id}?stream=true reader holds a bounded queue too', async () => {
    const responsesBody = JSON.stringify({ model: 'm', stream: true, input: 'go' });
    // The Responses events that end the text repeat it whole (the done events and the `response`):
    // fewer chunks make as long a stream, kept whole by the store (64 Mi characters per stream here).
    const { produced, read } = await scenario(600, '/v1/responses', responsesBody, (port, id) => {
      const cursor = () => exchange(port, `GET /v1/responses/resp_${id}?stream=true HTTP/1.1`);
      return [cursor(), cursor()];
    });
    assert.deepEqual(read, produced, 'the cursor reads the stream from its start');
    assert.match(produced.at(-1)!, /"type":"response.completed"/);
  });
});
