import type { Dialect } from '../../dialects/dialect.ts';
import type { GatewayContext, Scope } from '../gateway-context.ts';
import { clientIdentityOf } from '../http/client-identity.ts';
import { abortSignalOf } from '../http/client-signal.ts';
import { errorMessage } from '../http/gateway-errors.ts';
import type { IncomingRequest } from '../http/incoming-request.ts';
import { redactUrls } from '../observability/request-log.ts';
import { NoSuchEventError, parseEventId, ResumeGapError, type ResumeStore } from '../resume/resume-store.ts';
import { resumedBody } from '../resume/resumed-body.ts';
import { endRequest, rejectRequest } from './end-request.ts';

/**
 * A request with `Last-Event-ID`: the stream it names, from the store, after that event — answered with
 * the stream's own headers, or refused (400 not our id, 404 unknown, 410 gone, 503 store down).
 */
export async function resumeRoute(
  ctx: GatewayContext,
  dialect: Dialect,
  lastEventId: string,
  request: IncomingRequest,
  scope: Scope,
): Promise<Response> {
  if (scope.format === 'text')
    return rejectRequest(ctx, dialect, scope, 400, 'a plain-text stream cannot be resumed');
  const parsed = parseEventId(lastEventId);
  if (parsed === undefined) {
    ctx.metrics.resumes.inc({ result: 'invalid' });
    return rejectRequest(ctx, dialect, scope, 400, 'Last-Event-ID is not an event id this gateway wrote');
  }
  let subscription: Awaited<ReturnType<ResumeStore['subscribe']>>;
  try {
    // The owner is what the guard established (a key it accepted), never anything the client sent.
    subscription = await ctx.store.subscribe(
      parsed.streamId,
      parsed.seq,
      abortSignalOf(request.signal),
      clientIdentityOf(request).owner,
    );
  } catch (error) {
    if (error instanceof ResumeGapError) {
      ctx.metrics.resumes.inc({ result: 'gone' });
      return rejectRequest(ctx, dialect, scope, 410, `cannot resume: ${error.message}`);
    }
    if (error instanceof NoSuchEventError) {
      ctx.metrics.resumes.inc({ result: 'no-such-event' });
      return rejectRequest(ctx, dialect, scope, 404, `cannot resume: ${error.message}`);
    }
    // The store is unreachable (Redis restarting): a retryable refusal in the dialect's shape.
    ctx.metrics.resumes.inc({ result: 'error' });
    return rejectRequest(
      ctx,
      dialect,
      scope,
      503,
      `cannot resume: the resume store failed: ${redactUrls(errorMessage(error))}`,
      'unavailable_error',
    );
  }
  if (subscription === undefined) {
    ctx.metrics.resumes.inc({ result: 'unknown' });
    return rejectRequest(ctx, dialect, scope, 404, 'cannot resume: the stream is unknown or expired');
  }
  ctx.metrics.resumes.inc({ result: 'ok' });
  const body = resumedBody(
    subscription,
    parsed.streamId,
    parsed.seq,
    ctx.retryMs,
    () =>
      endRequest(ctx, scope, {
        route: dialect.id,
        status: 200,
        outcome: 'resumed',
        streamId: parsed.streamId,
      }),
    ctx.keepaliveMs,
  );
  return new Response(body, { status: 200, headers: subscription.meta.headers });
}
