import { DIALECT_IDS, type DialectId } from '../../src/dialects/dialect.ts';
import { type ServedHandler, serve } from '../../src/node/serve.ts';
import { createGateway, type Gateway, type GatewayOptions } from '../../src/server/create-gateway.ts';
import type { Upstream } from '../../src/server/upstream/upstream.ts';
import { createSim, type Sim } from '../../src/sim/index.ts';
import type { SimOptions } from '../../src/sim/sim-options.ts';

export interface TestGateway {
  url: string;
  gateway: Gateway;
  sim: Sim;
  /** Where the simulator listens when it is reached over HTTP. */
  simUrl: string | undefined;
  served: ServedHandler;
  close(): Promise<void>;
}

/**
 * A gateway on 127.0.0.1 (port 0) in front of a simulator — in-process by default, or over real HTTP
 * (`simOverHttp`), speaking only `upstreamDialects` when given.
 */
export async function startGateway(
  options: {
    sim?: SimOptions;
    gateway?: Partial<GatewayOptions>;
    simOverHttp?: boolean;
    upstreamDialects?: readonly DialectId[];
    /** With simOverHttp: the fetch that reaches it (default the global fetch). */
    upstreamFetch?: Upstream['fetch'];
    upstreamTimeouts?: Upstream['timeouts'];
  } = {},
): Promise<TestGateway> {
  const sim = createSim({ timing: { tokensPerSecond: 2000, loadMs: 0 }, ...options.sim });
  let simServed: ServedHandler | undefined;
  if (options.simOverHttp === true) simServed = await serve(sim.fetch);
  const gateway = createGateway({
    upstreams: [
      {
        name: 'sim',
        url: simServed?.url ?? 'http://sim.internal',
        dialects: options.upstreamDialects ?? DIALECT_IDS,
        fetch: simServed === undefined ? sim.fetch : options.upstreamFetch,
        models: ['sim'],
        // A simulator given no model list serves any name, as llama-server does.
        anyModelName: options.sim?.models === undefined,
        timeouts: options.upstreamTimeouts,
      },
    ],
    ...options.gateway,
  });
  const served = await serve(gateway.fetch);
  return {
    url: served.url,
    gateway,
    sim,
    simUrl: simServed?.url,
    served,
    close: async () => {
      await gateway.close();
      await served.close();
      await simServed?.close();
    },
  };
}
