import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { DIALECT_IDS, type DialectId } from '../../../src/dialects/dialect.ts';
import { getDialect } from '../../../src/dialects/registry.ts';
import type { ChatRequest } from '../../../src/events/chat-request.ts';
import { ContinuePool } from '../../helpers/continue-pool.ts';
import { decodeChunks } from '../../helpers/decode.ts';

const pool = new ContinuePool();
after(() => pool.close());

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

/** Each path and the upstream dialect that takes it: llama.cpp's ids, a chat prefill, a text prompt. */
const PATHS: Record<'tokens' | 'prefill' | 'text', readonly DialectId[]> = {
  tokens: ['llamacpp'],
  prefill: ['openai-chat'],
  text: ['openai-completions'],
};

for (const [path, upstreamDialects] of Object.entries(PATHS)) {
  describe(`continuation on a sibling (${path} path, upstreams speak ${upstreamDialects.join(', ')}): the client's bytes are an uninterrupted answer's`, () => {
    for (const id of DIALECT_IDS) {
      it(`${id} client`, async () => {
        const dying = await pool.replica('dying', { faults: 'die-after=6' }, upstreamDialects);
        const sibling = await pool.replica('sibling', {}, upstreamDialects);
        const gateway = await pool.gateway([dying.upstream, sibling.upstream], { continueOnFailure: true });
        const alone = await pool.gateway([sibling.upstream]);
        const continued = await ask(gateway.url, id);
        const whole = await ask(alone.url, id);
        assert.equal(continued.status, 200);
        assert.equal(dying.sim.stats.log.length, 1, 'the first attempt went to the dying replica');
        assert.equal(dying.sim.stats.log[0]?.outcome, 'cut');
        const decoded = textOf(id, continued.text);
        assert.equal(decoded.complete, true, `complete: ${continued.text.slice(-400)}`);
        assert.equal(normalized(continued.text), normalized(whole.text));
        const log = gateway.logs.at(-1)!;
        assert.equal(log.continuations?.length, 1);
        assert.equal(log.continuations?.[0]?.result, 'continued');
        assert.equal(log.continuations?.[0]?.path, path === 'tokens' ? 'tokens' : 'prefill');
        assert.equal(log.upstream, 'sibling');
        if (getDialect(id).framing === 'sse')
          assert.match(continued.text, /^: continued on sibling after \d+ tokens$/m);
        else assert.doesNotMatch(continued.text, /continued on/);
      });
    }
  });
}
