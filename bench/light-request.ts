import { NodeRequestHeaders } from '../src/node/node-request-headers.ts';
import { WHOLE_BODY } from '../src/server/http/body-symbols.ts';
import type { IncomingRequest } from '../src/server/http/incoming-request.ts';
import { TAKES_DIRECT_RESPONSE } from '../src/server/http/response-output.ts';

/** A one-token OpenAI chat stream's body, as the in-process gateway benches send it. */
export const ONE_TOKEN_CHAT = new TextEncoder().encode(
  JSON.stringify({ model: 'sim', stream: true, max_tokens: 1, messages: [{ role: 'user', content: 'hi' }] }),
);

/**
 * What node/serve.ts hands the gateway for a POST of `body` to /v1/chat/completions: the light
 * IncomingRequest (server/http/incoming-request.ts), its body already read, answered by a direct writer.
 */
export function lightChatRequest(body: Uint8Array = ONE_TOKEN_CHAT): IncomingRequest {
  const request: IncomingRequest & { [WHOLE_BODY]?: Uint8Array; [TAKES_DIRECT_RESPONSE]: true } = {
    method: 'POST',
    url: 'http://gateway.invalid/v1/chat/completions',
    headers: new NodeRequestHeaders({
      host: 'gateway.invalid',
      'content-type': 'application/json',
      'content-length': String(body.length),
    }),
    signal: new AbortController().signal,
    body: null,
    [TAKES_DIRECT_RESPONSE]: true,
  };
  request[WHOLE_BODY] = body;
  return request;
}
