import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HttpError, RequestFailedError } from '../../src/client/client-errors.ts';
import { emptyMetrics, type Result } from '../../src/events/result.ts';
import { describeFailure, describeResult } from '../../web/describe-outcome.ts';

function result(fields: Partial<Result>): Result {
  return {
    text: 'partial',
    reasoning: '',
    toolCalls: [],
    complete: true,
    truncated: false,
    metrics: emptyMetrics(),
    ...fields,
  };
}

describe('describeResult', () => {
  it('only a complete stream with a normal finish is finished', () => {
    assert.equal(
      describeResult(result({ finishReason: 'stop', rawFinishReason: 'eos_token' })).kind,
      'finished',
    );
    assert.equal(describeResult(result({ finishReason: 'tool-calls' })).kind, 'finished');
    assert.match(
      describeResult(result({ finishReason: 'stop', rawFinishReason: 'eos_token' })).detail,
      /eos_token/,
    );
  });

  it('length is truncated, with the server word', () => {
    const outcome = describeResult(
      result({ finishReason: 'length', rawFinishReason: 'limit', truncated: true }),
    );
    assert.equal(outcome.kind, 'truncated');
    assert.match(outcome.title, /Truncated/);
    assert.match(outcome.detail, /length.*"limit"/);
  });

  it('incomplete streams carry the reason and the error message, never finished', () => {
    for (const [incomplete, title] of [
      ['connection-closed', /connection lost/],
      ['idle-timeout', /idle timeout/],
      ['server-error', /server error/],
      ['malformed', /malformed/],
    ] as const) {
      const outcome = describeResult(
        result({
          complete: false,
          incomplete,
          error: { code: incomplete, message: `the ${incomplete} message` },
        }),
      );
      assert.equal(outcome.kind, 'incomplete');
      assert.match(outcome.title, title);
      assert.match(outcome.detail, new RegExp(`the ${incomplete} message`));
      assert.match(outcome.detail, /partial/);
    }
    assert.equal(
      describeResult(result({ finishReason: 'error', rawFinishReason: 'abort' })).kind,
      'incomplete',
    );
  });

  it('an abort is cancelled', () => {
    const outcome = describeResult(result({ complete: false, incomplete: 'aborted' }));
    assert.equal(outcome.kind, 'cancelled');
    assert.equal(outcome.title, 'Cancelled');
  });
});

describe('describeFailure', () => {
  it('an HTTP error is a failed request with its message', () => {
    const error = new HttpError({
      method: 'POST',
      url: 'http://x/v1/chat/completions',
      status: 503,
      statusText: 'Service Unavailable',
      body: '{"error":{"message":"overloaded"}}',
      headers: {},
    });
    const outcome = describeFailure(error);
    assert.equal(outcome.kind, 'failed');
    assert.match(outcome.detail, /503.*overloaded/);
  });

  it('an abort before the response is cancelled', () => {
    assert.equal(describeFailure(new RequestFailedError('aborted', 'aborted')).kind, 'cancelled');
    assert.equal(describeFailure(new RequestFailedError('network', 'refused')).kind, 'failed');
  });
});
