import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { getDialect } from '../../src/dialects/registry.ts';
import { UpstreamPool } from '../../src/server/pool/upstream-pool.ts';
import type { Upstream } from '../../src/server/upstream/upstream.ts';
import { forwardedHeaders, upstreamBody } from '../../src/server/upstream/upstream-request.ts';

const upstream = (name: string, models?: string[]): Upstream => ({
  name,
  url: `http://${name}.test`,
  dialects: ['openai-chat'],
  models,
});

describe('upstream request', () => {
  it('a call beside generation goes to an upstream serving the model, by name or its base before @, else the first; one cooling down is passed over', () => {
    const pool = new UpstreamPool([
      upstream('a', ['m1']),
      upstream('b', ['m2', 'm3']),
      upstream('c', ['m3']),
    ]);
    assert.equal(pool.pickFor('m3').name, 'b');
    assert.equal(pool.pickFor('m2@fast').name, 'b');
    assert.equal(pool.pickFor('unknown').name, 'a');
    assert.equal(pool.pickFor(undefined).name, 'a');
    pool.lease(pool.replicas[1]!).release('unreachable');
    assert.equal(pool.pickFor('m3').name, 'c');
  });

  it('sends the client body on the same dialect, streaming and asking for usage, keys kept as keys', () => {
    const chat = getDialect('openai-chat');
    const body = JSON.parse(
      '{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":false,"stream_options":{"x":1},"__proto__":{"polluted":true}}',
    ) as Record<string, unknown>;
    const sent = upstreamBody(chat, chat, body, chat.fromRequestBody(body));
    assert.equal(sent.stream, true);
    assert.deepEqual(sent.stream_options, { x: 1, include_usage: true });
    assert.ok(Object.hasOwn(sent, '__proto__'), "a client's __proto__ key stays a key");
    assert.equal((sent as { polluted?: unknown }).polluted, undefined);
    assert.equal(body.stream, false, 'the client body is not changed');
  });

  it("maps the normalized request into another dialect's body, with usage asked for", () => {
    const request = getDialect('openai-chat').fromRequestBody({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
    });
    const sent = upstreamBody(getDialect('ollama-chat'), getDialect('openai-chat'), {}, request);
    assert.equal(sent.stream, true);
    assert.deepEqual(sent.stream_options, { include_usage: true });
    assert.deepEqual(sent.messages, [{ role: 'user', content: 'hi' }]);
  });

  it('forwards tracing and fault headers only, with the request id the gateway settled on', () => {
    const request = new Request('http://gw.test/v1/chat/completions', {
      headers: {
        traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
        'x-request-id': 'from-client',
        'x-tokenwire-fault': 'cut-after=2',
        authorization: 'Bearer client-secret',
        cookie: 'a=b',
      },
    });
    assert.deepEqual(forwardedHeaders(request, 'req-1'), {
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      'x-request-id': 'req-1',
      'x-tokenwire-fault': 'cut-after=2',
    });
  });
});
