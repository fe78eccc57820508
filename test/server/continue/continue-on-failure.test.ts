import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { DIALECT_IDS, type DialectId } from '../../../src/dialects/dialect.ts';
import { getDialect } from '../../../src/dialects/registry.ts';
import type { ChatRequest } from '../../../src/events/chat-request.ts';
import { serve } from '../../../src/node/serve.ts';
import { createGateway, type GatewayOptions } from '../../../src/server/create-gateway.ts';
import type { RequestLog } from '../../../src/server/observability/request-log.ts';
import type { Upstream } from '../../../src/server/upstream/upstream.ts';
import { createSim, type Sim } from '../../../src/sim/index.ts';
import type { SimOptions } from '../../../src/sim/sim-options.ts';
import { decodeChunks } from '../../helpers/decode.ts';

const open: { close(): Promise<void> }[] = [];
after(async () => {
  for (const server of open.reverse()) await server.close();
});

const TIMING = { tokensPerSecond: 4000, loadMs: 0, jitter: 0 };

async function replica(
  name: string,
  dialects: readonly DialectId[],
  options: SimOptions = {},
): Promise<{ upstream: Upstream; sim: Sim }> {
  const sim = createSim(Object.assign({ timing: TIMING }, options));
  const served = await serve(sim.fetch);
  open.push(served);
  return { sim, upstream: { name, url: served.url, dialects, models: ['sim'] } };
}

async function gateway(upstreams: Upstream[], options: Partial<GatewayOptions> = {}) {
  const logs: RequestLog[] = [];
  const g = createGateway(
    Object.assign(
      {
        upstreams,
        healthIntervalMs: 0,
        balance: 'round-robin' as const,
        onLog: (r: RequestLog) => logs.push(r),
      },
      options,
    ),
  );
  const served = await serve(g.fetch);
  open.push({
    close: async () => {
      await g.close();
      await served.close();
    },
  });
  return { url: served.url, logs, gateway: g };
}

const ASK: ChatRequest = {
  model: 'sim',
  messages: [{ role: 'user', content: 'Tell me about the rivers of Europe.' }],
  maxTokens: 40,
  temperature: 0,
};

async function ask(
  url: string,
  id: DialectId,
  chat: ChatRequest = ASK,
  headers: Record<string, string> = {},
) {
  const dialect = getDialect(id);
  const body = Object.assign(dialect.toRequestBody(Object.assign({}, chat, { stream: true })), {
    stream: true,
  });
  const response = await fetch(`${url}${dialect.paths[0]}`, {
    method: 'POST',
    headers: Object.assign({ 'content-type': 'application/json' }, headers),
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, text };
}

/** The bytes a client reads, less what differs between any two runs: ids, clocks, durations, the seam's comment. */
function normalized(text: string): string {
  return text
    .split('\n')
    .filter((line) => !line.startsWith(':'))
    .join('\n')
    .replace(/^id: [^.\n]+\./gm, 'id: S.')
    .replace(/"(id|item_id|response_id|system_fingerprint)":"[^"]*"/g, '"$1":"X"')
    .replace(/"(created|created_at|completed_at)":("[^"]*"|\d+(\.\d+)?)/g, '"$1":0')
    .replace(/"(\w*_duration|\w*_ms|\w*_per_second|\w*_per_token_ms)":\d+(\.\d+(e-?\d+)?)?/g, '"$1":0')
    .replace(/\n{3,}/g, '\n\n');
}

const textOf = (id: DialectId, raw: string) => {
  const decoded = decodeChunks(getDialect(id), [new TextEncoder().encode(raw)]);
  return decoded;
};

for (const path of ['tokens', 'prefill'] as const) {
  const upstreamDialects: readonly DialectId[] = path === 'tokens' ? ['llamacpp'] : ['openai-chat'];
  describe(`continuation on a sibling (${path} path): the client's bytes are an uninterrupted answer's`, () => {
    for (const id of DIALECT_IDS) {
      it(`${id} client`, async () => {
        const dying = await replica('dying', upstreamDialects, { faults: 'die-after=6' });
        const sibling = await replica('sibling', upstreamDialects);
        const pool = await gateway([dying.upstream, sibling.upstream], { continueOnFailure: true });
        const alone = await gateway([sibling.upstream]);
        const continued = await ask(pool.url, id);
        const whole = await ask(alone.url, id);
        assert.equal(continued.status, 200);
        assert.equal(dying.sim.stats.log.length, 1, 'the first attempt went to the dying replica');
        assert.equal(dying.sim.stats.log[0]?.outcome, 'cut');
        const decoded = textOf(id, continued.text);
        assert.equal(decoded.complete, true, `complete: ${continued.text.slice(-400)}`);
        assert.equal(normalized(continued.text), normalized(whole.text));
        const log = pool.logs.at(-1)!;
        assert.equal(log.continuations?.length, 1);
        assert.equal(log.continuations?.[0]?.result, 'continued');
        assert.equal(log.continuations?.[0]?.path, path);
        assert.equal(log.upstream, 'sibling');
        if (getDialect(id).framing === 'sse')
          assert.match(continued.text, /^: continued on sibling after \d+ tokens$/m);
        else assert.doesNotMatch(continued.text, /continued on/);
      });
    }
  });
}
