import type { Dialect } from '../../dialects/dialect.ts';
import type { ChatRequest } from '../../events/chat-request.ts';
import type { IncomingRequest } from '../http/incoming-request.ts';

/** Request headers passed on to the upstream: tracing, request ids, and the simulator's fault controls. */
const FORWARDED_HEADERS = [
  'x-request-id',
  'traceparent',
  'tracestate',
  'x-tokenwire-fault',
  'x-tokenwire-flavor',
];

/**
 * The body sent upstream: the client's own body when the dialects match (streaming, usage asked for),
 * else the normalized request in the upstream's dialect. The gateway always asks for usage: it counts
 * tokens even for clients that did not ask for them.
 */
export function upstreamBody(
  incoming: Dialect,
  upstreamDialect: Dialect,
  body: Record<string, unknown>,
  request: ChatRequest,
): Record<string, unknown> {
  if (incoming.id === upstreamDialect.id) {
    // Spread, not Object.assign: a client's own `__proto__` key stays a key, never a prototype.
    const out: Record<string, unknown> = { ...body };
    if (upstreamDialect.id !== 'tgi') out.stream = true;
    if (upstreamDialect.id === 'openai-chat' || upstreamDialect.id === 'openai-completions') {
      const streamOptions =
        typeof body.stream_options === 'object' && body.stream_options !== null ? body.stream_options : {};
      out.stream_options = { ...streamOptions, include_usage: true };
    }
    return out;
  }
  return upstreamDialect.toRequestBody(Object.assign({}, request, { includeUsage: true, extra: undefined }));
}

/** The client's headers that go upstream (FORWARDED_HEADERS), with the request id the gateway settled on. */
export function forwardedHeaders(request: IncomingRequest, requestId: string): Record<string, string> {
  const forwarded: Record<string, string> = {};
  for (const name of FORWARDED_HEADERS) {
    const value = request.headers.get(name);
    if (value !== null) forwarded[name] = value;
  }
  forwarded['x-request-id'] = requestId;
  return forwarded;
}
