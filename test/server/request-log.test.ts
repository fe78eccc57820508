import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { runCli } from '../../src/cli/run-cli.ts';
import { complete } from '../../src/client/token-stream.ts';
import { DIALECT_IDS } from '../../src/dialects/dialect.ts';
import { serve } from '../../src/node/serve.ts';
import { createGateway, type GatewayOptions, type RequestLog } from '../../src/server/create-gateway.ts';
import { redactUrls } from '../../src/server/observability/request-log.ts';
import { createSim } from '../../src/sim/create-sim.ts';

const SECRET = 'sk-SECRET-4242';
const PASSWORD = 'hunter2';
const PROMPT = 'PROMPT-MARKER tell me something private';

const closers: (() => Promise<void>)[] = [];
after(() => Promise.all(closers.map((close) => close())));

/** A gateway whose upstream needs a credential, plus one whose URL carries a password. */
async function loggingGateway(options: Partial<GatewayOptions> = {}) {
  const sim = createSim({ timing: { tokensPerSecond: 2000, loadMs: 0 } });
  const records: RequestLog[] = [];
  const gateway = createGateway({
    upstreams: [
      {
        name: 'sim',
        url: 'http://sim.internal',
        dialects: DIALECT_IDS,
        models: ['sim'],
        headers: { authorization: `Bearer ${SECRET}` },
        fetch: sim.fetch,
      },
      {
        name: 'leaky',
        url: `http://admin:${PASSWORD}@127.0.0.1:9`,
        dialects: ['openai-chat'],
        models: ['leaky'],
      },
    ],
    onLog: (record) => records.push(record),
    ...options,
  });
  const served = await serve(gateway.fetch);
  closers.push(async () => {
    await gateway.close();
    await served.close();
  });
  const chat = (model: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
    complete({
      url: `${served.url}/v1/chat/completions`,
      body: {
        model,
        messages: [{ role: 'user', content: PROMPT }],
        stream_options: { include_usage: true },
        ...extra,
      },
      headers,
    });
  return { sim, records, url: served.url, chat };
}

async function settle(records: RequestLog[], count: number): Promise<void> {
  const deadline = Date.now() + 5000;
  while (records.length < count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
}

describe('request logs', () => {
  it('one record per request at its end, with the figures and the request id; no prompt, answer or credentials', async () => {
    const g = await loggingGateway();
    const result = await g.chat('sim', { max_tokens: 400 }, { 'x-request-id': 'log-1' });
    await settle(g.records, 1);
    assert.equal(g.records.length, 1);
    const record = g.records[0]!;
    assert.equal(record.level, 'info');
    assert.equal(record.requestId, 'log-1');
    assert.equal(record.route, 'openai-chat');
    assert.equal(record.upstream, 'sim');
    assert.equal(record.status, 200);
    assert.equal(record.outcome, 'completed');
    assert.equal(record.endState, 'completed');
    assert.equal(record.finishReason, 'stop');
    assert.equal(record.model, 'sim');
    assert.equal(record.outputTokens, result.usage?.outputTokens);
    assert.equal(record.inputTokens, result.usage?.inputTokens);
    assert.equal(record.outputTokensEstimated, false);
    assert.ok((record.ttftMs ?? 0) > 0 && record.durationMs >= (record.ttftMs ?? 0));
    assert.ok((record.tpotMs ?? -1) >= 0);
    // A stream id replays the stream, so info lines carry only its start.
    assert.match(record.streamId ?? '', /^[0-9a-f]{6}…$/);
    assert.equal(record.error, undefined);
    assert.equal('prompt' in record, false);
    assert.equal('answer' in record, false);
    assert.equal('debug' in record, false);
    const line = JSON.stringify(record);
    assert.ok(!line.includes('PROMPT-MARKER'), 'no prompt');
    assert.ok(!line.includes(result.text.slice(0, 12)), 'no answer');
    assert.ok(!line.includes(SECRET), 'no credential');
  });

  it('puts the prompt and the answer in only when asked (logContent)', async () => {
    const g = await loggingGateway({ logContent: true });
    const result = await g.chat('sim', { max_tokens: 20 });
    await settle(g.records, 1);
    assert.equal(g.records[0]?.prompt, PROMPT);
    assert.equal(g.records[0]?.answer, result.text);
    assert.ok(!JSON.stringify(g.records[0]).includes(SECRET));
  });

  it('filters by level: errors and warnings at warn; a cut stream is an error, a truncation and a 400 warnings', async () => {
    const g = await loggingGateway({ logLevel: 'warn' });
    await g.chat('sim', { max_tokens: 400 }); // info: not written
    await g.chat('sim', { max_tokens: 3 }); // truncated: warn
    await g.chat('sim@cut-after=2', { max_tokens: 400 }); // incomplete: error
    await fetch(`${g.url}/v1/chat/completions`, { method: 'POST', body: '{"messages":3}' }); // 400: warn
    await settle(g.records, 3);
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(
      g.records.map((r) => [r.level, r.endState ?? r.outcome]),
      [
        ['warn', 'truncated'],
        ['error', 'incomplete'],
        ['warn', 'rejected'],
      ],
    );
    assert.match(g.records[1]?.error ?? '', /connection/);
    const errorsOnly = await loggingGateway({ logLevel: 'error' });
    await errorsOnly.chat('sim', { max_tokens: 3 });
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(errorsOnly.records.length, 0);
  });

  it('adds the upstream details at level debug', async () => {
    const g = await loggingGateway({ logLevel: 'debug' });
    const result = await g.chat('sim', { max_tokens: 10 });
    await settle(g.records, 1);
    const debug = g.records[0]?.debug;
    assert.equal(debug?.upstreamDialect, 'openai-chat');
    assert.equal(debug?.chunks, result.metrics.chunkCount);
    assert.ok((debug?.upstreamBytes ?? 0) > 0);
    assert.match(g.records[0]?.streamId ?? '', /^[0-9a-f]{18}$/, 'the whole stream id at debug level');
  });

  it('never writes a credential from an upstream URL, in the log or the client error', async () => {
    const g = await loggingGateway();
    const response = await fetch(`${g.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'leaky', stream: true, messages: [{ role: 'user', content: 'x' }] }),
    });
    assert.equal(response.status, 502);
    const body = await response.text();
    await settle(g.records, 1);
    const record = g.records[0]!;
    assert.equal(record.level, 'error');
    assert.equal(record.upstream, 'leaky');
    assert.ok(record.error !== undefined && record.error.length > 0);
    for (const text of [body, JSON.stringify(record)]) {
      assert.ok(!text.includes(PASSWORD), text);
      assert.ok(!text.includes(SECRET), text);
    }
  });

  it('redacts user:password and query strings from URLs in messages', () => {
    assert.equal(
      redactUrls('GET https://bob:pw@api.example.com:8443/v1/x?api_key=abc failed; see http://h/p'),
      'GET https://***@api.example.com:8443/v1/x?*** failed; see http://h/p',
    );
    assert.equal(
      redactUrls('store redis://:s3cret@10.0.0.5:6379/0 is down'),
      'store redis://***@10.0.0.5:6379/0 is down',
    );
  });

  it('tokenwire serve refuses an unknown --log-level', async () => {
    let stderr = '';
    const code = await runCli(['serve', '--log-level', 'loud'], {
      stdout: { write: () => true },
      stderr: { write: (text: string) => (stderr += text) },
      env: {},
      signal: new AbortController().signal,
    });
    assert.equal(code, 2);
    assert.match(stderr, /--log-level must be one of error, warn, info, debug/);
  });
});
