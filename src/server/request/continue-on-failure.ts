import type { GatewayContext } from '../gateway-context.ts';
import type { IncomingRequest } from '../http/incoming-request.ts';

/** The request header that turns continuation on or off for one request (`on` / `off`). */
export const CONTINUE_HEADER = 'x-tokenwire-continue';

/**
 * Whether a stream of this request goes on on another replica when its upstream fails mid-answer: the
 * request's own `x-tokenwire-continue: on|off`, else the gateway's `continueOnFailure`; never with a
 * single upstream (no sibling to continue on).
 */
export function continuesOnFailure(ctx: GatewayContext, request: IncomingRequest): boolean {
  if (ctx.pool.replicas.length < 2 || ctx.continueMax < 1) return false;
  const asked = request.headers.get(CONTINUE_HEADER)?.trim().toLowerCase();
  if (asked === 'on') return true;
  if (asked === 'off') return false;
  return ctx.continueOnFailure;
}
