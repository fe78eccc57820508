import { DIALECT_IDS, type DialectId } from '../../src/dialects/dialect.ts';
import { serve } from '../../src/node/serve.ts';
import { createGateway, type GatewayOptions } from '../../src/server/create-gateway.ts';
import type { RequestLog } from '../../src/server/observability/request-log.ts';
import type { Upstream } from '../../src/server/upstream/upstream.ts';
import { createSim, type Sim } from '../../src/sim/index.ts';
import type { SimOptions } from '../../src/sim/sim-options.ts';

/**
 * Pools of simulator replicas over HTTP behind a gateway, for the continuation tests: each file makes
 * its own `ContinuePool` and closes it with `after(() => pool.close())`.
 */
export class ContinuePool {
  readonly #open: { close(): Promise<void> }[] = [];

  /** Keeps a server to close with the pool. */
  hold(server: { close(): Promise<void> }): void {
    this.#open.push(server);
  }

  /** A simulator over HTTP (fast, no jitter) as an upstream named `name` serving model `sim`. */
  async replica(
    name: string,
    options: SimOptions = {},
    dialects: readonly DialectId[] = DIALECT_IDS,
    extra: Partial<Upstream> = {},
  ): Promise<{ upstream: Upstream; sim: Sim }> {
    const sim = createSim(
      Object.assign({ timing: { tokensPerSecond: 4000, loadMs: 0, jitter: 0 } }, options),
    );
    const served = await serve(sim.fetch);
    this.hold(served);
    return { sim, upstream: Object.assign({ name, url: served.url, dialects, models: ['sim'] }, extra) };
  }

  /** A gateway over HTTP in front of `upstreams` (round-robin, no health checks), its log records kept. */
  async gateway(
    upstreams: Upstream[],
    options: Partial<GatewayOptions> = {},
  ): Promise<{ url: string; logs: RequestLog[] }> {
    const logs: RequestLog[] = [];
    const g = createGateway(
      Object.assign(
        {
          upstreams,
          healthIntervalMs: 0,
          balance: 'round-robin' as const,
          onLog: (record: RequestLog) => logs.push(record),
        },
        options,
      ),
    );
    const served = await serve(g.fetch);
    this.hold({
      close: async () => {
        await g.close();
        await served.close();
      },
    });
    return { url: served.url, logs };
  }

  async close(): Promise<void> {
    for (const server of this.#open.reverse()) await server.close();
  }
}

/** An OpenAI chat or completions stream's text, finish reason and mid-stream error message. */
export function openAiStreamText(raw: string): {
  text: string;
  finish: string | undefined;
  error: string | undefined;
} {
  let text = '';
  let finish: string | undefined;
  let error: string | undefined;
  for (const line of raw.split('\n')) {
    if (!line.startsWith('data: {')) continue;
    const chunk = JSON.parse(line.slice(6)) as {
      choices?: { delta?: { content?: string }; text?: string; finish_reason?: string | null }[];
      error?: { message: string };
    };
    if (chunk.error !== undefined) error = chunk.error.message;
    for (const choice of chunk.choices ?? []) {
      text += choice.delta?.content ?? choice.text ?? '';
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  return { text, finish, error };
}
