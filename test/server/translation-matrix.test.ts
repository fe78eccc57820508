import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { complete } from '../../src/client/token-stream.ts';
import { DIALECT_IDS, type DialectId } from '../../src/dialects/dialect.ts';
import { getDialect } from '../../src/dialects/registry.ts';
import type { ChatRequest } from '../../src/events/chat-request.ts';
import type { Result } from '../../src/events/result.ts';
import { type ServedHandler, serve } from '../../src/node/serve.ts';
import { createGateway, type Gateway } from '../../src/server/create-gateway.ts';
import { createSim } from '../../src/sim/index.ts';

/**
 * All 36 (client dialect x upstream dialect) pairs: the upstream is the simulator served over HTTP
 * speaking only that dialect; what a client of each dialect gets through the gateway must equal the
 * direct stream — the same text, finish reason and token counts.
 */
describe('translation matrix: every client dialect over every upstream dialect', () => {
  const sim = createSim({ seed: 7, timing: { tokensPerSecond: 5000, loadMs: 0 } });
  let simServer: ServedHandler;
  const gateways = new Map<DialectId, { gateway: Gateway; served: ServedHandler }>();
  const direct = new Map<DialectId, Result>();
  const request: ChatRequest = {
    model: 'sim',
    prompt: 'Tell me about Reykjavík and Tokyo',
    maxTokens: 20,
    includeUsage: true,
  };

  before(async () => {
    simServer = await serve(sim.fetch);
    for (const upstream of DIALECT_IDS) {
      const gateway = createGateway({
        upstreams: [{ name: `sim-${upstream}`, url: simServer.url, dialects: [upstream], models: ['sim'] }],
      });
      gateways.set(upstream, { gateway, served: await serve(gateway.fetch) });
      const dialect = getDialect(upstream);
      direct.set(
        upstream,
        await complete({ url: `${simServer.url}${dialect.paths[0]}`, dialect: upstream, request }),
      );
    }
  });

  after(async () => {
    for (const { gateway, served } of gateways.values()) {
      await gateway.close();
      await served.close();
    }
    await simServer?.close();
  });

  for (const upstream of DIALECT_IDS) {
    for (const client of DIALECT_IDS) {
      it(`${client} client, ${upstream} upstream`, async () => {
        const expected = direct.get(upstream)!;
        assert.equal(
          expected.complete,
          true,
          `direct ${upstream} stream incomplete: ${expected.error?.message}`,
        );
        assert.ok(expected.text.length > 0);
        const { served } = gateways.get(upstream)!;
        const dialect = getDialect(client);
        const got = await complete({ url: `${served.url}${dialect.paths[0]}`, dialect: client, request });
        assert.equal(got.complete, true, got.error?.message);
        assert.equal(got.dialect, client);
        assert.equal(got.text, expected.text);
        assert.equal(got.finishReason, expected.finishReason);
        assert.equal(got.finishReason, 'length');
        assert.equal(got.usage?.outputTokens, expected.usage?.outputTokens);
        assert.equal(got.usage?.outputTokens, 20);
        assert.equal(got.usage?.inputTokens, expected.usage?.inputTokens);
      });
    }
  }
});
