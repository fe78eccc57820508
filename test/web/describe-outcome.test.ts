import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HttpError, RequestFailedError } from '../../src/client/client-errors.ts';
import { emptyMetrics, type Result } from '../../src/events/result.ts';
import { describeEnding, describeFailure, describeResult } from '../../web/describe-outcome.ts';

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

describe('describeEnding: one verdict for every place that says how a stream ended', () => {
  const words = 'a finish_reason, then data: [DONE]';

  it('a complete Result is a terminal event, with or without [DONE] after it', () => {
    const withDone = describeEnding(result({ finishReason: 'stop' }), words, true);
    assert.equal(withDone.terminal, true);
    assert.equal(withDone.wire, `terminal event: ${words}`);
    assert.equal(withDone.summary, 'complete: terminal event received');
    assert.equal(withDone.note, '[DONE] came');
    const withoutDone = describeEnding(result({ finishReason: 'stop' }), 'a finish_reason', false);
    assert.equal(withoutDone.terminal, true);
    assert.equal(withoutDone.wire, 'terminal event: a finish_reason');
    assert.equal(withoutDone.note, 'no [DONE] (optional after the finish)');
    // Whatever the banner says is what the wire says: both read `complete`.
    assert.equal(describeResult(result({ finishReason: 'stop' })).kind, 'finished');
  });

  it('an incomplete Result is never "terminal event received", even when [DONE] came', () => {
    for (const incomplete of ['connection-closed', 'idle-timeout', 'aborted'] as const) {
      const ending = describeEnding(result({ complete: false, incomplete }), words, true);
      assert.equal(ending.terminal, false);
      assert.match(ending.wire, /^no terminal event \(a finish_reason, then data: \[DONE\] never came\)$/);
      assert.match(ending.summary, /^incomplete \(.+\): no terminal event$/);
      assert.equal(describeResult(result({ complete: false, incomplete })).kind === 'finished', false);
    }
    const error = describeEnding(result({ complete: false, incomplete: 'server-error' }), words, true);
    assert.equal(error.wire, 'ended by server error: not a terminal event');
    assert.equal(error.note, '[DONE] came');
    const ollama = describeEnding(
      result({ complete: false, incomplete: 'connection-closed' }),
      'a line with "done": true',
      undefined,
    );
    assert.equal(ollama.note, undefined);
    assert.equal(ollama.summary, 'incomplete (connection lost): no terminal event');
  });

  it('no Result: no stream', () => {
    assert.deepEqual(describeEnding(undefined, words, undefined), {
      terminal: false,
      wire: 'no stream',
      summary: 'no stream',
    });
  });
});
