import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Agent, Pool } from 'undici';
import { createUndiciFetch, type UndiciDispatcher } from '../../src/node/undici-fetch.ts';

/**
 * `UndiciFetchOptions.dispatcher` is declared by shape (undici is an optional peer dependency: its types
 * must not be needed by tokenwire's declarations). undici's own dispatchers must still fit: checked by
 * the compiler here.
 */
describe('UndiciDispatcher', () => {
  it("accepts undici's Agent and Pool", async () => {
    const agent: UndiciDispatcher = new Agent();
    const pool: UndiciDispatcher = new Pool('http://127.0.0.1:9');
    assert.equal(typeof createUndiciFetch({ dispatcher: agent }), 'function');
    await Promise.all([agent.close(), pool.close()]);
  });
});
