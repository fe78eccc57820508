import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import type { DialectId } from '../../src/dialects/dialect.ts';
import { getDialect } from '../../src/dialects/registry.ts';
import { type ServedHandler, serve } from '../../src/node/serve.ts';
import { createGateway, type Gateway } from '../../src/server/create-gateway.ts';
import type { Frame } from '../../src/wire/frame.ts';
import { NdjsonDecoder } from '../../src/wire/ndjson-decoder.ts';
import { SseDecoder } from '../../src/wire/sse-decoder.ts';
import { fixturePath, readFixture } from '../helpers/paths.ts';
import { type ScriptServer, scriptServer } from '../helpers/script-server.ts';

/**
 * The fidelity suite: every real capture and wire example of the older dialects, served by a
 * scripted upstream of its own dialect, reaches a client of that dialect through the gateway with the
 * same JSON values the upstream sent — every field, every choice, every logprob, the server's extras.
 *
 * What the gateway owns, and so may differ (the one list of exceptions):
 * - the SSE framing around each payload: `id:` lines (its own resume ids), `retry:`, keepalive comments;
 * - after a stream that ended without its dialect's terminal event and without an error event of its own,
 *   the error event the gateway appends in the dialect's shape (an incomplete answer is marked).
 */
const FIXTURES: [DialectId, string][] = [];
const prefixes: readonly [DialectId, RegExp][] = [
  ['openai-chat', /^(vllm|llamacpp|tgi|ollama-openai)-chat/],
  ['openai-completions', /^(vllm|tgi|ollama-openai)-completions|^llamacpp-completions/],
  ['ollama-chat', /^ollama-chat/],
  ['ollama-generate', /^ollama-generate/],
  ['llamacpp', /^llamacpp-completion-native/],
  ['tgi', /^tgi-generate/],
];
for (const folder of ['wire-examples', 'extra']) {
  for (const name of readdirSync(fixturePath(folder)).sort()) {
    if (!/\.(sse|ndjson)$/.test(name)) continue;
    const match = prefixes.find(([, pattern]) => pattern.test(name));
    if (match !== undefined) FIXTURES.push([match[0], `${folder}/${name}`]);
  }
}
for (const name of readdirSync(fixturePath('real-captures/llamacpp-b10108')).sort()) {
  if (!name.endsWith('.sse')) continue;
  const dialect: DialectId | undefined = name.startsWith('n')
    ? 'llamacpp'
    : name.startsWith('o')
      ? 'openai-completions'
      : /^[cxt]\d/.test(name)
        ? 'openai-chat'
        : /^a\d/.test(name) && !name.includes('bad-request')
          ? 'anthropic-messages'
          : /^p\d/.test(name) && !name.includes('bad-request')
            ? 'openai-responses'
            : undefined;
  if (dialect !== undefined) FIXTURES.push([dialect, `real-captures/llamacpp-b10108/${name}`]);
}
FIXTURES.push(
  ['openai-chat', 'real-captures/llamacpp-b4747/v1-chat.sse'],
  ['openai-completions', 'real-captures/llamacpp-b4747/v1-completions.sse'],
  ['llamacpp', 'real-captures/llamacpp-b4747/completion-native.sse'],
);

function frames(dialectId: DialectId, bytes: Uint8Array): Frame[] {
  const out: Frame[] = [];
  const decoder =
    getDialect(dialectId).framing === 'sse'
      ? new SseDecoder({ onFrame: (frame) => out.push(frame) })
      : new NdjsonDecoder({ onFrame: (frame) => out.push(frame) });
  decoder.feed(bytes);
  decoder.end();
  return out;
}

/** A payload as a value: JSON parsed, a sentinel kept as its text. */
function value(frame: Frame): unknown {
  try {
    return { event: frame.event ?? null, data: JSON.parse(frame.data) };
  } catch {
    return { event: frame.event ?? null, data: frame.data.trim() };
  }
}

const BODIES: Record<DialectId, Record<string, unknown>> = {
  'openai-chat': {
    model: 'm',
    stream: true,
    messages: [{ role: 'user', content: 'hi' }],
    stream_options: { include_usage: true },
  },
  'openai-completions': { model: 'm', stream: true, prompt: 'hi', stream_options: { include_usage: true } },
  'ollama-chat': { model: 'm', messages: [{ role: 'user', content: 'hi' }] },
  'ollama-generate': { model: 'm', prompt: 'hi' },
  llamacpp: { prompt: 'hi', stream: true },
  tgi: { inputs: 'hi', parameters: { max_new_tokens: 5 } },
  'anthropic-messages': {
    model: 'm',
    max_tokens: 8,
    stream: true,
    messages: [{ role: 'user', content: 'hi' }],
  },
  'openai-responses': { model: 'm', input: 'hi', stream: true },
};

describe('fidelity: a same-dialect relay gives the client what the upstream sent', () => {
  let upstream: ScriptServer;
  const gateways = new Map<DialectId, { gateway: Gateway; served: ServedHandler }>();
  let current: Uint8Array = new Uint8Array();
  let currentType = 'text/event-stream';

  before(async () => {
    upstream = await scriptServer(() => ({
      headers: { 'content-type': currentType },
      steps: [{ write: current }],
    }));
    for (const id of new Set(FIXTURES.map(([dialect]) => dialect))) {
      const gateway = createGateway({
        upstreams: [{ name: 'scripted', url: upstream.url, dialects: [id] }],
        keepaliveMs: 0,
        // Messages and Responses are re-encoded by default; verbatim is the relay that loses nothing.
        sameDialectRelay: 'verbatim',
      });
      gateways.set(id, { gateway, served: await serve(gateway.fetch) });
    }
  });

  after(async () => {
    for (const { gateway, served } of gateways.values()) {
      await gateway.close();
      await served.close();
    }
    await upstream?.close();
  });

  it('covers every fixture of every dialect', () => {
    assert.ok(new Set(FIXTURES.map(([dialect]) => dialect)).size === 8);
    assert.ok(FIXTURES.length >= 75, `only ${FIXTURES.length} fixtures`);
  });

  for (const [dialectId, fixture] of FIXTURES) {
    it(`${dialectId}: ${fixture}`, async () => {
      const dialect = getDialect(dialectId);
      current = readFixture(fixture);
      currentType = dialect.framing === 'sse' ? 'text/event-stream' : 'application/x-ndjson';
      const sent = frames(dialectId, current).map(value);
      const { served } = gateways.get(dialectId)!;
      const response = await fetch(`${served.url}${dialect.paths[0]}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(BODIES[dialectId]),
      });
      assert.equal(response.status, 200);
      const received = frames(dialectId, new Uint8Array(await response.arrayBuffer())).map(value);
      assert.deepEqual(received.slice(0, sent.length), sent, 'the upstream payloads, in order, unchanged');
      if (received.length > sent.length) {
        // Only the gateway's own marking of an unfinished stream may follow.
        const tail = JSON.stringify(received.slice(sent.length));
        assert.match(tail, /error|\[DONE\]/i, `unexpected frames after the upstream's: ${tail}`);
      }
    });
  }
});

describe('fidelity: the openai SDK through the gateway sees every choice and logprob', () => {
  let upstream: ScriptServer;
  let gateway: Gateway;
  let served: ServedHandler;
  let fixture = '';

  before(async () => {
    upstream = await scriptServer(() => ({
      headers: { 'content-type': 'text/event-stream' },
      steps: [{ write: readFixture(fixture) }],
    }));
    gateway = createGateway({ upstreams: [{ name: 'llama', url: upstream.url, dialects: ['openai-chat'] }] });
    served = await serve(gateway.fetch);
  });

  after(async () => {
    await gateway?.close();
    await served?.close();
    await upstream?.close();
  });

  it('n: 2 (llama-server b10108): both choices, each with its finish', async () => {
    fixture = 'real-captures/llamacpp-b10108/c13-chat-stream-n2.sse';
    const client = new OpenAI({ baseURL: `${served.url}/v1`, apiKey: 'none' });
    const stream = await client.chat.completions.create({
      model: 'm',
      stream: true,
      n: 2,
      messages: [{ role: 'user', content: 'hello' }],
    });
    const text = ['', ''];
    const finishes: (string | null)[] = [null, null];
    for await (const chunk of stream) {
      for (const choice of chunk.choices) {
        text[choice.index] += choice.delta.content ?? '';
        if (choice.finish_reason !== null) finishes[choice.index] = choice.finish_reason;
      }
    }
    assert.ok(text[0]!.length > 0 && text[1]!.length > 0, JSON.stringify(text));
    assert.deepEqual(finishes, ['length', 'length']);
  });

  it('logprobs with top_logprobs (llama-server b10108): on every content chunk', async () => {
    fixture = 'real-captures/llamacpp-b10108/c06-chat-stream-logprobs.sse';
    const client = new OpenAI({ baseURL: `${served.url}/v1`, apiKey: 'none' });
    const stream = await client.chat.completions.create({
      model: 'm',
      stream: true,
      logprobs: true,
      top_logprobs: 2,
      messages: [{ role: 'user', content: 'hello' }],
    });
    let withLogprobs = 0;
    for await (const chunk of stream) {
      const entries = chunk.choices[0]?.logprobs?.content;
      if (entries !== undefined && entries !== null && entries.length > 0) {
        withLogprobs += 1;
        assert.equal(entries[0]!.top_logprobs.length, 2);
      }
    }
    assert.ok(withLogprobs >= 5, `only ${withLogprobs} chunks carried logprobs`);
  });
});

describe('fidelity: a non-stream request to an upstream of its own dialect', () => {
  let upstream: ScriptServer;
  let fixture = '';

  before(async () => {
    upstream = await scriptServer(() => ({
      headers: { 'content-type': 'application/json; charset=utf-8' },
      steps: [{ write: readFixture(fixture) }],
    }));
  });

  after(async () => {
    await upstream?.close();
  });

  for (const [dialectId, file, body] of [
    [
      'openai-chat',
      'real-captures/llamacpp-b10108/c03-chat-nostream.json',
      { model: 'm', max_tokens: 16, messages: [{ role: 'user', content: 'hello' }] },
    ],
    [
      'llamacpp',
      'real-captures/llamacpp-b10108/n03-completion-nostream.json',
      { prompt: 'Once', n_predict: 16 },
    ],
  ] as const) {
    it(`${dialectId}: goes upstream as non-stream, and its whole answer comes back as it was (${file})`, async () => {
      fixture = file;
      const gateway = createGateway({
        upstreams: [{ name: 'llama', url: upstream.url, dialects: [dialectId] }],
      });
      const served = await serve(gateway.fetch);
      try {
        const response = await fetch(`${served.url}${getDialect(dialectId).paths[0]}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        assert.equal(response.status, 200);
        assert.deepEqual(await response.json(), JSON.parse(new TextDecoder().decode(readFixture(file))));
        const sent = JSON.parse(upstream.requests.at(-1)!.body) as Record<string, unknown>;
        assert.equal(sent.stream, false, 'asked upstream as a non-stream request');
      } finally {
        await gateway.close();
        await served.close();
      }
    });
  }
});
