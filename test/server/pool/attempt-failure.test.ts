import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HttpError, RequestFailedError } from '../../../src/client/client-errors.ts';
import type { Result } from '../../../src/events/result.ts';
import { attemptFailure } from '../../../src/server/pool/attempt-failure.ts';
import { callOutcome } from '../../../src/server/pool/call-outcome.ts';

const http = (status: number, headers: Record<string, string> = {}) =>
  new HttpError({
    method: 'POST',
    url: 'http://a.test/v1/chat/completions',
    status,
    statusText: '',
    body: '{}',
    headers,
  });

describe('attemptFailure: what a failure before the first byte says', () => {
  it('a refused or reset connection and a connect timeout go to another replica', () => {
    assert.deepEqual(attemptFailure(new RequestFailedError('network', 'ECONNREFUSED')), {
      outcome: 'unreachable',
      retryable: true,
    });
    assert.deepEqual(attemptFailure(new RequestFailedError('connect-timeout', 'no headers')), {
      outcome: 'timeout',
      retryable: true,
    });
  });

  it('429, 502, 503 and 504 go to another replica, with the Retry-After the server asked for', () => {
    for (const status of [429, 502, 503, 504]) assert.equal(attemptFailure(http(status))?.retryable, true);
    assert.equal(attemptFailure(http(429, { 'retry-after': '3' }))?.retryAfterMs, 3000);
  });

  it('a 500 counts against the replica but is not retried; a 4xx says the request is bad: the replica is fine', () => {
    assert.deepEqual(attemptFailure(http(500)), { outcome: 'server-error', retryable: false });
    assert.equal(attemptFailure(http(400)), undefined);
    assert.equal(attemptFailure(http(404)), undefined);
  });

  it("the client's own abort is nobody's failure", () => {
    assert.equal(attemptFailure(new RequestFailedError('aborted', 'the client left')), undefined);
    assert.equal(attemptFailure(new Error('something else')), undefined);
  });
});

describe('callOutcome: what a request that ended tells its replica', () => {
  const result = (complete: boolean, incomplete?: Result['incomplete']) =>
    ({ complete, incomplete }) as unknown as Result;
  it('a finished stream, a cancel and a refused request are ok; a cut, a stall, an error event are not', () => {
    assert.equal(callOutcome(200, undefined, result(true)), 'ok');
    assert.equal(callOutcome(200, undefined, result(false, 'aborted')), 'ok');
    assert.equal(callOutcome(400, undefined, undefined), 'ok');
    assert.equal(callOutcome(200, undefined, result(false, 'connection-closed')), 'unreachable');
    assert.equal(callOutcome(200, undefined, result(false, 'idle-timeout')), 'timeout');
    assert.equal(callOutcome(200, undefined, result(false, 'server-error')), 'server-error');
    assert.equal(callOutcome(502, new RequestFailedError('network', 'ECONNRESET'), undefined), 'unreachable');
    assert.equal(callOutcome(503, http(503), undefined), 'server-error');
  });
});

describe("attemptFailure: a fetch's own connection errors", () => {
  it('a refused or reset connection as fetch and undici throw it is unreachable, and retried', () => {
    const refused = new TypeError('fetch failed', {
      cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
    });
    assert.deepEqual(attemptFailure(refused), { outcome: 'unreachable', retryable: true });
    const reset = Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' });
    assert.deepEqual(attemptFailure(reset), { outcome: 'unreachable', retryable: true });
    const slow = Object.assign(new Error('Connect Timeout Error'), { code: 'UND_ERR_CONNECT_TIMEOUT' });
    assert.deepEqual(attemptFailure(slow), { outcome: 'timeout', retryable: true });
    assert.equal(attemptFailure(new DOMException('The operation was aborted.', 'AbortError')), undefined);
  });
});
