// The system under test of the soak (`npm run soak`), in a process of its own so its RSS and its
// unhandled errors are its own: the simulator served over HTTP (so its sockets can be counted) and the
// guarded gateway in front of it, on 127.0.0.1. Driven by the parent over IPC (see soak-run.ts).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { DIALECT_IDS } from '../src/dialects/dialect.ts';
import { serve } from '../src/node/serve.ts';
import { createGuardedGateway } from '../src/server/guard/guard-gateway.ts';
import { createSim } from '../src/sim/create-sim.ts';

export interface SoakServerConfig {
  tokensPerSecond: number;
  apiKey: string;
  maxStreams: number | undefined;
}

export type SoakCommand =
  | { cmd: 'memory' }
  | { cmd: 'rss' }
  | { cmd: 'settle'; timeoutMs: number }
  | { cmd: 'close' };

export interface SoakMemory {
  rssBytes: number;
  heapUsedBytes: number;
  /** V8 heap committed (used plus pages V8 keeps). */
  heapTotalBytes: number;
}

export interface SoakSettled {
  /** Gateway streams still being relayed. */
  gatewayActive: number;
  /** Upstream requests the simulator is still serving. */
  simActive: number;
  /** HTTP requests on the simulator's server whose response has not closed. */
  simOpenResponses: number;
  /** Client requests whose response has not closed. */
  gatewayOpenResponses: number;
  /** Client connections open on the gateway (idle keep-alive ones included). */
  gatewaySockets: number;
  /** Sockets open on the simulator's server before idle keep-alive ones were closed (a client pool). */
  simSocketsIdleIncluded: number;
  /** Sockets still open after closing the idle ones: upstream connections left open. */
  simSocketsLeft: number;
  simStats: { requests: number; completed: number; cancelled: number; failed: number };
  /** Event-loop delay of the gateway process since the last settle, ms: how loaded it was. */
  loopDelayP99Ms: number;
  loopDelayMaxMs: number;
  uncaught: string[];
  waitedMs: number;
}

const config = JSON.parse(process.env.SOAK_CONFIG ?? '{}') as SoakServerConfig;
const uncaught: string[] = [];
process.on('uncaughtException', (error) => uncaught.push(`uncaughtException: ${error.stack ?? error}`));
process.on('unhandledRejection', (error) =>
  uncaught.push(`unhandledRejection: ${(error as Error)?.stack ?? error}`),
);

const loopDelay = monitorEventLoopDelay({ resolution: 20 });
loopDelay.enable();
const sim = createSim({ timing: { tokensPerSecond: config.tokensPerSecond, loadMs: 0 } });
const simServed = await serve(sim.fetch);
let simOpenResponses = 0;
simServed.server.on('request', (_req: IncomingMessage, res: ServerResponse) => {
  simOpenResponses += 1;
  res.once('close', () => {
    simOpenResponses -= 1;
  });
});
const { gateway, fetch } = createGuardedGateway({
  upstreams: [{ name: 'sim', url: simServed.url, dialects: DIALECT_IDS, models: ['sim'] }],
  apiKeys: [config.apiKey],
  maxStreams: config.maxStreams,
  keepaliveMs: 5000,
});
const gatewayServed = await serve(fetch);
let gatewayOpenResponses = 0;
gatewayServed.server.on('request', (_req: IncomingMessage, res: ServerResponse) => {
  gatewayOpenResponses += 1;
  res.once('close', () => {
    gatewayOpenResponses -= 1;
  });
});

type Gc = (options?: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

function memory(): SoakMemory {
  const gc = (globalThis as { gc?: Gc }).gc;
  // The measuring GC compacts: after a burst, V8 keeps old-space pages that hold a few live objects each
  // (and plain full GCs rarely compact them), so RSS would show the burst's high-water mark rather than
  // what is alive. Compacting only here leaves the load itself untouched. The last-resort flavor (a
  // low-memory notification) also gives freed pages back to the system.
  setFlagsFromString('--compact-on-every-full-gc');
  try {
    gc?.();
    gc?.({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  } finally {
    setFlagsFromString('--no-compact-on-every-full-gc');
  }
  const usage = process.memoryUsage();
  return { rssBytes: usage.rss, heapUsedBytes: usage.heapUsed, heapTotalBytes: usage.heapTotal };
}

async function settle(timeoutMs: number): Promise<SoakSettled> {
  const started = Date.now();
  while (
    (gateway.activeStreams() > 0 ||
      sim.stats.active > 0 ||
      simOpenResponses > 0 ||
      gatewayOpenResponses > 0) &&
    Date.now() - started < timeoutMs
  ) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const waitedMs = Date.now() - started;
  const delays = { p99: loopDelay.percentile(99) / 1e6, max: loopDelay.max / 1e6 };
  loopDelay.reset();
  const simSocketsIdleIncluded = simServed.connections();
  simServed.server.closeIdleConnections();
  // Sockets the gateway's HTTP pool opened for a request that another connection then served carry no
  // request at all; its keep-alive timeout (4 s) closes them. Anything open after that is a leak.
  const idleDeadline = Date.now() + 6000;
  while (simServed.connections() > 0 && Date.now() < idleDeadline)
    await new Promise((resolve) => setTimeout(resolve, 50));
  return {
    gatewayActive: gateway.activeStreams(),
    gatewayOpenResponses,
    gatewaySockets: gatewayServed.connections(),
    simActive: sim.stats.active,
    simOpenResponses,
    simSocketsIdleIncluded,
    simSocketsLeft: simServed.connections(),
    simStats: {
      requests: sim.stats.requests,
      completed: sim.stats.completed,
      cancelled: sim.stats.cancelled,
      failed: sim.stats.failed,
    },
    uncaught,
    waitedMs,
    loopDelayP99Ms: delays.p99,
    loopDelayMaxMs: delays.max,
  };
}

process.on('message', (message: SoakCommand & { id: number }) => {
  void (async () => {
    let result: unknown;
    if (message.cmd === 'rss') {
      result = { rssBytes: process.memoryUsage.rss(), heapUsedBytes: 0, heapTotalBytes: 0 };
    } else if (message.cmd === 'memory') {
      await new Promise((resolve) => setTimeout(resolve, 200));
      result = memory();
    } else if (message.cmd === 'settle') {
      result = await settle(message.timeoutMs);
    } else {
      await gateway.close();
      await gatewayServed.close();
      await simServed.close();
      result = { closed: true };
    }
    process.send?.({ id: message.id, result });
    if (message.cmd === 'close') process.disconnect();
  })();
});

process.send?.({ id: 0, result: { url: gatewayServed.url } });
