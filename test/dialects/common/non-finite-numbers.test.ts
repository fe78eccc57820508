import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RequestError } from '../../../src/dialects/dialect.ts';
import { DIALECTS } from '../../../src/dialects/registry.ts';
import { startGateway } from '../../helpers/gateway.ts';

const CHAT = { model: 'sim', messages: [{ role: 'user' as const, content: 'hi' }], maxTokens: 4 };

/** A valid body of `dialect` with `raw` (JSON text) spliced in as its last top-level field. */
function bodyWith(id: string, key: string, raw: string): unknown {
  const dialect = DIALECTS[id]!;
  const text = JSON.stringify(dialect.toRequestBody(CHAT));
  return JSON.parse(`${text.slice(0, -1)},${JSON.stringify(key)}:${raw}}`);
}

function refusal(id: string, body: unknown): RequestError {
  try {
    DIALECTS[id]!.fromRequestBody(body);
  } catch (error) {
    assert.ok(error instanceof RequestError, `${id}: ${String(error)}`);
    return error;
  }
  assert.fail(`${id} accepted the body`);
}

describe('numbers JSON cannot carry (1e400 parses as Infinity)', () => {
  for (const id of Object.keys(DIALECTS)) {
    it(`${id}: a 400 naming the field, also for fields it only passes on`, () => {
      // `n` is read by no dialect: forwarded untouched it became `null` upstream.
      for (const [key, raw, field] of [
        ['n', '1e400', 'n'],
        ['n', '-1e400', 'n'],
        ['extra_options', '{"a":[1,{"b":1e999}]}', 'extra_options.a[1].b'],
      ] as const) {
        const error = refusal(id, bodyWith(id, key, raw));
        assert.equal(error.status, 400);
        assert.equal(error.field, field);
        assert.match(
          error.message,
          new RegExp(`^${field.replace(/[[\].]/g, '\\$&')} must be a finite number`),
        );
      }
      // Large but finite numbers are numbers.
      assert.doesNotThrow(() => DIALECTS[id]!.fromRequestBody(bodyWith(id, 'n', '1e300')));
    });
  }

  it('the gateway answers 400 naming `n` before anything reaches the upstream', async () => {
    const gw = await startGateway();
    try {
      const before = gw.sim.stats.requests;
      const response = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"model":"sim","stream":true,"n":1e400,"messages":[{"role":"user","content":"hi"}]}',
      });
      assert.equal(response.status, 400);
      const body = (await response.json()) as { error: { message: string } };
      assert.match(body.error.message, /^n must be a finite number/);
      assert.equal(gw.sim.stats.requests, before, 'nothing reached the upstream');
    } finally {
      await gw.close();
    }
  });
});
