import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { describesInvalidRequest, HttpError } from '../../src/client/client-errors.ts';

function httpError(status: number, body = '', headers: Record<string, string> = {}): HttpError {
  return new HttpError({
    method: 'POST',
    url: 'http://x/v1/chat/completions',
    status,
    statusText: '',
    body,
    headers,
  });
}

/** llama-server's 500s for its clients' mistakes, verbatim from ../shared/real-captures/. */
const LLAMA_SERVER_INVALID_500S = [
  // llamacpp-b10108/c09-chat-bad-json.body
  `{"error":{"code":500,"message":"[json.exception.parse_error.101] parse error at line 1, column 15: syntax error while parsing value - unexpected end of input; expected '[', '{', or a literal","type":"server_error"}}`,
  // llamacpp-b10108/n18-completion-bad-json.body
  '{"error":{"code":500,"message":"[json.exception.parse_error.101] parse error at line 1, column 18: syntax error while parsing object key - unexpected end of input; expected string literal","type":"server_error"}}',
  // llamacpp-b4747/more/j02-chat-tools-stream-jinja.body
  '{"error":{"code":500,"message":"Cannot use tools with stream","type":"server_error"}}',
  // llamacpp-b4747/more/c15-chat-stream-tools-nojinja.body
  '{"error":{"code":500,"message":"tools param requires --jinja flag","type":"server_error"}}',
  // llamacpp-b4747/more/c13-chat-stream-n2.body
  '{"error":{"code":500,"message":"Only one completion choice is allowed","type":"server_error"}}',
  // llamacpp-b4747/more/o09-completions-stream-echo.body
  '{"error":{"code":500,"message":"Unsupported param: echo","type":"server_error"}}',
  // llamacpp-b4747/more/c10-chat-stream-no-messages.body
  `{"error":{"code":500,"message":"[json.exception.out_of_range.403] key 'messages' not found","type":"server_error"}}`,
];

describe('HttpError.isRetryable', () => {
  it('is true only for the statuses a retry can fix: 408, 409, 425, 429 and 5xx but 501', () => {
    const retryable = new Set([408, 409, 425, 429, 500, 502, 503, 504, 505, 507, 599]);
    for (let status = 400; status <= 599; status++)
      assert.equal(
        httpError(status).isRetryable,
        retryable.has(status) || (status >= 500 && status !== 501),
        String(status),
      );
    for (const status of [400, 401, 403, 404, 413, 422, 501])
      assert.equal(httpError(status).isRetryable, false);
    for (const status of [408, 409, 425, 429, 500, 503]) assert.equal(httpError(status).isRetryable, true);
  });

  it("is false for a 500 whose body says the request is invalid (llama-server's real answers)", () => {
    for (const body of LLAMA_SERVER_INVALID_500S) {
      assert.equal(describesInvalidRequest(body), true, body);
      assert.equal(httpError(500, body).isRetryable, false, body);
    }
    // A 500 in the gateway's own words still quotes the upstream's message.
    const relayed = JSON.stringify({
      error: {
        message: 'the upstream answered HTTP 500: Cannot use tools with stream (request id r1)',
        type: 'server_error',
      },
    });
    assert.equal(httpError(500, relayed).isRetryable, false);
    // OpenAI's and TGI's validation types say the same at any status.
    assert.equal(
      httpError(500, '{"error":{"message":"x","type":"invalid_request_error"}}').isRetryable,
      false,
    );
    assert.equal(httpError(500, '{"error":"x","error_type":"validation"}').isRetryable, false);
  });

  it('stays true for 500s that are the server failing, and for 503 whatever the body says', () => {
    for (const body of [
      '',
      'Internal Server Error',
      '{"error":"llama runner process has terminated: signal: killed"}',
      '{"error":{"code":500,"message":"failed to allocate the KV cache","type":"server_error"}}',
    ]) {
      assert.equal(describesInvalidRequest(body), false, body);
      assert.equal(httpError(500, body).isRetryable, true, body);
    }
    assert.equal(httpError(503, LLAMA_SERVER_INVALID_500S[2]).isRetryable, true);
  });

  it("keeps the server's message as detail", () => {
    assert.equal(httpError(500, LLAMA_SERVER_INVALID_500S[2]).detail, '"Cannot use tools with stream"');
    assert.equal(httpError(502, 'Bad Gateway').detail, undefined);
  });
});
