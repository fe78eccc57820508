import { type Dialect, RequestError } from '../../dialects/dialect.ts';
import type { GatewayContext, Scope } from '../gateway-context.ts';
import type { IncomingRequest, RequestTarget } from '../http/incoming-request.ts';
import { outputFormat } from '../http/output-format.ts';
import { CONTINUE_HEADER } from './continue-on-failure.ts';
import { rejectRequest } from './end-request.ts';
import { resumeRoute } from './resume-route.ts';

/**
 * The gateway's admission of a request on a generation route, before its body is read: the output
 * format it asks for (set in `scope.format`, so every answer from here on is in it), then the gateway
 * shutting down (503), then a `Last-Event-ID` (the request is a resume: answered from the store, whatever
 * its method), then the method (405), then `x-tokenwire-continue` (on or off, else 400). Returns the answer when the request goes no further, undefined
 * when it is a generation to read.
 *
 * API keys, the stream limit, CORS and allowed hosts are admitted before, when the gateway is guarded
 * (guard-gateway.ts): a refused request never reaches the gateway.
 */
export function admitRequest(
  ctx: GatewayContext,
  dialect: Dialect,
  request: IncomingRequest,
  target: RequestTarget,
  scope: Scope,
): Response | Promise<Response> | undefined {
  try {
    scope.format = outputFormat(target.query('format'), request.headers.get('accept'));
  } catch (error) {
    if (error instanceof RequestError) return rejectRequest(ctx, dialect, scope, error.status, error.message);
    throw error;
  }
  if (ctx.closing)
    return rejectRequest(ctx, dialect, scope, 503, 'the gateway is shutting down', 'unavailable_error');
  const lastEventId = request.headers.get('last-event-id');
  if (lastEventId !== null && lastEventId !== '')
    return resumeRoute(ctx, dialect, lastEventId, request, scope);
  if (request.method !== 'POST')
    return rejectRequest(ctx, dialect, scope, 405, `use POST for ${dialect.paths[0]}`);
  const continued = request.headers.get(CONTINUE_HEADER);
  if (continued !== null && !/^\s*(on|off)\s*$/i.test(continued))
    return rejectRequest(ctx, dialect, scope, 400, `${CONTINUE_HEADER} must be on or off`);
  return undefined;
}
