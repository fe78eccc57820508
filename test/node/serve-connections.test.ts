import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, describe, it } from 'node:test';
import { DIALECT_IDS } from '../../src/dialects/dialect.ts';
import { type ServedHandler, type ServeOptions, serve } from '../../src/node/serve.ts';
import {
  createGuardedGateway,
  type GuardedGateway,
  type GuardOptions,
} from '../../src/server/guard/guard-gateway.ts';
import { createSim, type Sim } from '../../src/sim/index.ts';

// What the node adapter does with a connection's requests when it goes, and
// with connections when the cap is reached. Raw sockets against a real serve()d, guarded gateway.

const closers: (() => Promise<void>)[] = [];
after(() => Promise.all(closers.map((close) => close())));

interface Started {
  sim: Sim;
  guarded: GuardedGateway;
  served: ServedHandler;
  port: number;
}

/** A gateway on a slow simulator (2 tokens/s: its answers, 24 tokens or more, take 12 s or more) behind its guard. */
async function start(guard: GuardOptions = {}, serveOptions: ServeOptions = {}): Promise<Started> {
  const sim = createSim({ timing: { tokensPerSecond: 2, loadMs: 0 } });
  const guarded = createGuardedGateway({
    upstreams: [
      { name: 'sim', url: 'http://sim.internal', dialects: DIALECT_IDS, fetch: sim.fetch, models: ['sim'] },
    ],
    ...guard,
  });
  const served = await serve(guarded.fetch, serveOptions);
  closers.push(async () => {
    await guarded.gateway.close();
    await served.close();
  });
  return { sim, guarded, served, port: served.port };
}

/** A raw connection: what the server sent and whether it closed. */
class Raw {
  readonly socket: Socket;
  text = '';
  closed = false;
  readonly #waiters: (() => void)[] = [];

  constructor(port: number) {
    this.socket = connect(port, '127.0.0.1');
    this.socket.setEncoding('latin1');
    this.socket.on('data', (chunk: string) => {
      this.text += chunk;
      this.#wake();
    });
    this.socket.on('error', () => {});
    this.socket.on('close', () => {
      this.closed = true;
      this.#wake();
    });
    closers.push(async () => {
      this.socket.destroy();
    });
  }

  /** Resolves once connected (the server may still close it right after). */
  connected(): Promise<void> {
    return new Promise((resolve) => {
      if (!this.socket.connecting) resolve();
      else this.socket.once('connect', () => resolve());
      this.socket.once('close', () => resolve());
    });
  }

  #wake(): void {
    for (const waiter of this.#waiters.splice(0)) waiter();
  }

  /** Resolves once `check` holds (checked on every read and on close). */
  until(check: (raw: Raw) => boolean): Promise<void> {
    return new Promise((resolve) => {
      const test = () => {
        if (check(this)) resolve();
        else this.#waiters.push(test);
      };
      test();
    });
  }
}

/** Polls `check` (every 10 ms) until it holds; fails with `describe()` after a generous 20 s. */
async function eventually(check: () => boolean, describe: () => string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`still not so after 20 s: ${describe()}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function chatBody(maxTokens: number): string {
  return JSON.stringify({
    model: 'sim',
    stream: true,
    messages: [{ role: 'user', content: 'tell me a long story' }],
    max_tokens: maxTokens,
  });
}

function rawPost(port: number, body: string): string {
  return [
    'POST /v1/chat/completions HTTP/1.1',
    `Host: 127.0.0.1:${port}`,
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    '',
    body,
  ].join('\r\n');
}

function counts(s: Started): string {
  return JSON.stringify({
    gatewayActive: s.guarded.gateway.activeStreams(),
    guardInFlight: s.guarded.fetch.inFlight(),
    simActive: s.sim.stats.active,
    simCancelled: s.sim.stats.cancelled,
    simCompleted: s.sim.stats.completed,
    simFailed: s.sim.stats.failed,
    connections: s.served.connections(),
  });
}

/** The sum of a Prometheus counter's samples whose labels include `labelPart`. */
function metricSum(text: string, name: string, labelPart = ''): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (!line.includes(labelPart)) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

/** A whole streamed answer read by a normal client. */
async function normalStream(port: number): Promise<{ status: number; body: string }> {
  const response = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', connection: 'close' },
    body: chatBody(2),
  });
  return { status: response.status, body: await response.text() };
}

describe('serve: pipelined streams end with their connection', { timeout: 60_000 }, () => {
  it('ends every queued stream, aborts its upstream and frees its slot when the connection closes', async () => {
    const s = await start({ maxStreams: 4 });
    const raw = new Raw(s.port);
    // Four slow streams pipelined on one connection: the first is answered, three wait behind it.
    raw.socket.write([1, 2, 3, 4].map(() => rawPost(s.port, chatBody(2000))).join(''));
    await raw.until((r) => r.text.includes('data: '));
    await eventually(
      () => s.guarded.gateway.activeStreams() === 4 && s.sim.stats.active === 4,
      () => counts(s),
    );
    assert.equal(s.guarded.fetch.inFlight(), 4, 'the four streams hold the four slots');
    raw.socket.destroy();
    await eventually(
      () =>
        s.served.connections() === 0 &&
        s.guarded.gateway.activeStreams() === 0 &&
        s.guarded.fetch.inFlight() === 0 &&
        s.sim.stats.active === 0,
      () => counts(s),
    );
    assert.equal(s.sim.stats.cancelled, 4, 'every upstream generation was aborted');
    assert.equal(s.sim.stats.completed, 0);

    // A normal client gets a stream, not a 429.
    const normal = await normalStream(s.port);
    assert.equal(normal.status, 200, normal.body);
    assert.match(normal.body, /data: \[DONE\]/);

    const metrics = await (await fetch(`http://127.0.0.1:${s.port}/metrics`)).text();
    assert.equal(metricSum(metrics, 'tokenwire_active_streams'), 0);
    assert.equal(metricSum(metrics, 'tokenwire_streams_total', 'outcome="cancelled"'), 4);
    assert.equal(metricSum(metrics, 'tokenwire_streams_total', 'outcome="completed"'), 1);
    assert.equal(metricSum(metrics, 'tokenwire_rejected_total'), 0, 'nobody was refused');
  });

  it('aborts queued requests of a handler that takes a standard Request (the simulator served alone)', async () => {
    const sim = createSim({ timing: { tokensPerSecond: 2, loadMs: 0 } });
    const served = await serve(sim.fetch);
    closers.push(() => served.close());
    const raw = new Raw(served.port);
    raw.socket.write([1, 2, 3, 4].map(() => rawPost(served.port, chatBody(2000))).join(''));
    await raw.until((r) => r.text.includes('data: '));
    await eventually(
      () => sim.stats.active === 4,
      () => JSON.stringify(sim.stats),
    );
    raw.socket.destroy();
    await eventually(
      () => sim.stats.active === 0,
      () => JSON.stringify({ active: sim.stats.active, cancelled: sim.stats.cancelled }),
    );
    assert.equal(sim.stats.cancelled, 4, 'every generation was aborted');
    assert.equal(sim.stats.completed, 0);
  });

  it('ends queued streams that have already written their whole answer into the queue', async () => {
    // Short answers finish while queued behind a slow one: their bytes wait in node:http's queue. Gone
    // with the connection, they hold nothing either.
    const s = await start({ maxStreams: 4 });
    const raw = new Raw(s.port);
    const requests = [rawPost(s.port, chatBody(2000))];
    for (let i = 0; i < 3; i += 1) requests.push(rawPost(s.port, chatBody(2)));
    raw.socket.write(requests.join(''));
    await raw.until((r) => r.text.includes('data: '));
    await eventually(
      () => s.sim.stats.completed === 3,
      () => counts(s),
    );
    raw.socket.destroy();
    await eventually(
      () =>
        s.served.connections() === 0 &&
        s.guarded.gateway.activeStreams() === 0 &&
        s.guarded.fetch.inFlight() === 0 &&
        s.sim.stats.active === 0,
      () => counts(s),
    );
    const normal = await normalStream(s.port);
    assert.equal(normal.status, 200, normal.body);
  });
});

const healthz = (port: number) => `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`;

/** Opens `count` connections that send nothing, and waits until the server holds them all. */
async function silentConnections(s: Started, count: number): Promise<Raw[]> {
  const raws: Raw[] = [];
  for (let i = 0; i < count; i += 1) {
    const raw = new Raw(s.port);
    raws.push(raw);
    // One at a time, so the server's order (oldest first) is the order here.
    await eventually(
      () => s.served.connections() === i + 1,
      () => counts(s),
    );
  }
  return raws;
}

describe('serve: the connection cap and silent connections', { timeout: 60_000 }, () => {
  it('answers a real client when silent connections fill the cap: the oldest silent one makes room', async () => {
    const s = await start({}, { maxConnections: 20 });
    const silent = await silentConnections(s, 20);
    const normal = await normalStream(s.port);
    assert.equal(normal.status, 200, normal.body);
    assert.match(normal.body, /data: \[DONE\]/);
    await silent[0]!.until((r) => r.closed);
    assert.equal(silent[0]!.text, '', 'the silent connection was closed unanswered');
    assert.deepEqual(
      silent.map((raw) => raw.closed),
      silent.map((_, i) => i === 0),
      'only the oldest silent connection was closed',
    );
  });

  it('closes silent connections first, then idle ones oldest first, never one holding a request', async () => {
    const s = await start({}, { maxConnections: 3 });
    // node:http's own idle timeout (5 s) must not close A first, however slow the machine.
    s.served.server.keepAliveTimeout = 120_000;
    // A: answered, now idle between requests (keep-alive).
    const a = new Raw(s.port);
    a.socket.write(healthz(s.port));
    await a.until((r) => r.text.includes('"status":"ok"'));
    // B: silent. C: a slow stream in flight.
    const b = new Raw(s.port);
    await eventually(
      () => s.served.connections() === 2,
      () => counts(s),
    );
    const c = new Raw(s.port);
    c.socket.write(rawPost(s.port, chatBody(2000)));
    await c.until((r) => r.text.includes('data: '));

    // D takes B's place (silent goes before idle, though A is older), and is answered.
    const d = new Raw(s.port);
    d.socket.write(healthz(s.port));
    await d.until((r) => r.text.includes('"status":"ok"'));
    await b.until((r) => r.closed);
    assert.equal(b.text, '');
    assert.equal(a.closed, false, 'the idle connection stays while a silent one can go');

    // E: A and D are both idle between requests now; A, the older, goes.
    const e = new Raw(s.port);
    e.socket.write(healthz(s.port));
    await e.until((r) => r.text.includes('"status":"ok"'));
    await a.until((r) => r.closed);
    assert.equal(d.closed, false);
    assert.equal(c.closed, false, 'the connection with a stream in flight is never the one closed');

    // Every connection holds a request: a newcomer is closed unanswered, the others keep theirs.
    d.socket.write(rawPost(s.port, chatBody(2000)));
    e.socket.write(rawPost(s.port, chatBody(2000)));
    await d.until((r) => r.text.includes('data: '));
    await e.until((r) => r.text.includes('data: '));
    const f = new Raw(s.port);
    f.socket.write(healthz(s.port));
    await f.until((r) => r.closed);
    assert.equal(f.text, '', 'the connection over the cap got no answer');
    assert.deepEqual([c.closed, d.closed, e.closed], [false, false, false]);
  });

  it('closes a connection that sends nothing within silentConnectionTimeoutMs, not one sending its head', async () => {
    const s = await start({}, { silentConnectionTimeoutMs: 2000 });
    // The slow one opens first: its timer fires first, and finds bytes.
    const slow = new Raw(s.port);
    slow.socket.write('GET /healthz HTTP/1.1\r\n');
    await eventually(
      () => s.served.connections() === 1,
      () => counts(s),
    );
    const silent = new Raw(s.port);
    await silent.until((r) => r.closed);
    assert.equal(silent.text, '', 'closed unanswered');
    assert.equal(
      slow.closed,
      false,
      'a connection that has sent part of its head is left to the header timeout',
    );
    slow.socket.write(`Host: 127.0.0.1:${s.port}\r\n\r\n`);
    await slow.until((r) => r.text.includes('"status":"ok"'));
    assert.match(slow.text, /^HTTP\/1\.1 200 OK\r\n/);
  });
});
