import type { DialectId } from '../../dialects/dialect.ts';
import { getDialect } from '../../dialects/registry.ts';
import { clientIdentityOf } from '../http/client-identity.ts';
import { abortSignalOf } from '../http/client-signal.ts';
import { errorMessage, errorResponse } from '../http/gateway-errors.ts';
import type { IncomingRequest, RequestTarget } from '../http/incoming-request.ts';
import { requestIdFor } from '../http/request-id.ts';
import { redactUrls } from '../observability/request-log.ts';
import {
  NoSuchEventError,
  parseEventId,
  ResumeGapError,
  type ResumeStore,
  type ResumeSubscription,
} from '../resume/resume-store.ts';
import { resumedBody } from '../resume/resumed-body.ts';

/**
 * The `id` of the Responses streams the gateway writes: `resp_<stream id>`. The stream a response id
 * belongs to is read from the id itself, so no map is kept beside the store: a cursor works wherever the
 * stream's frames are (memory, or Redis from any replica), and is bounded as the store's streams are.
 * The id is no more guessable than the stream id every SSE id already carries (`<stream>.<seq>`).
 */
export function responseIdFor(streamId: string): string {
  return `resp_${streamId}`;
}

/** The stream of a response id the gateway wrote; undefined for any other id. */
export function streamIdOfResponse(responseId: string): string | undefined {
  if (!responseId.startsWith('resp_')) return undefined;
  const streamId = responseId.slice('resp_'.length);
  // The stream id rules of SSE ids (parseEventId), checked the same way.
  return parseEventId(`${streamId}.0`)?.streamId;
}

/** What the cursor route needs of the gateway. */
export interface ResponsesCursorContext {
  readonly store: ResumeStore;
  readonly retryMs: number;
  readonly keepaliveMs: number;
  /** Counted as `Last-Event-ID` resumes are (`tokenwire_resumes_total{result}`). */
  counted(result: string): void;
  /** A streamed retrieval ended (its body was read to the end): its log line. */
  ended(requestId: string, streamId: string): void;
}

const DIALECT: DialectId = 'openai-responses';
const PREFIXES = getDialect(DIALECT).paths.map((path) => `${path}/`);

/** The lifecycle events that carry the whole `response` object. */
const RESPONSE_EVENTS = new Set([
  'response.created',
  'response.queued',
  'response.in_progress',
  'response.completed',
  'response.incomplete',
  'response.failed',
]);

/**
 * `GET /v1/responses/{id}` (and `/responses/{id}`): OpenAI's retrieval of a response, served from the
 * resume store for the Responses streams the gateway wrote.
 * - `?stream=true`: the stream's events again, `starting_after=N` being the `sequence_number` of the last
 *   event the client has (all of them without it), then the live rest: the cursor of OpenAI's background
 *   mode, which vLLM serves. The events are the stored frames, SSE ids included, so a later
 *   `Last-Event-ID` works on them too. Event number N is the stream's frame N + 1: the gateway's encoder
 *   numbers every event it writes from 0, one per frame (llama-server's flavor writes no numbers; N
 *   counts its events all the same).
 * - without it: the `response` object of the stream's last lifecycle event, once the stream has ended
 *   (a live one is waited for); a stream that stopped without its terminal event answers `failed`.
 * A response the gateway did not write, one that expired or was evicted, one opened with another API
 * key, or one asked with `store: false` (kept for `Last-Event-ID` resume only) is a 404 in the Responses
 * error shape. Undefined when the target is not such a path.
 */
export function responsesCursorRoute(
  request: IncomingRequest,
  target: RequestTarget,
  context: ResponsesCursorContext,
): Promise<Response> | undefined {
  if (request.method !== 'GET') return undefined;
  const path = target.path;
  const prefix = PREFIXES.find((candidate) => path.startsWith(candidate));
  if (prefix === undefined) return undefined;
  const responseId = path.slice(prefix.length);
  if (responseId === '' || responseId.includes('/')) return undefined;
  return retrieve(request, target, responseId, context);
}

async function retrieve(
  request: IncomingRequest,
  target: RequestTarget,
  responseId: string,
  context: ResponsesCursorContext,
): Promise<Response> {
  const stream = target.query('stream') === 'true';
  const startingAfter = target.query('starting_after');
  let afterSeq = 0;
  if (startingAfter !== null) {
    if (!/^(?:0|[1-9][0-9]{0,14})$/.test(startingAfter))
      return refuse(
        400,
        `starting_after must be a sequence number (an integer from 0), not ${JSON.stringify(startingAfter)}`,
      );
    afterSeq = Number(startingAfter) + 1;
  }
  const notFound = () => refuse(404, `Response with id '${responseId}' not found.`);
  const streamId = streamIdOfResponse(responseId);
  if (streamId === undefined) {
    context.counted('unknown');
    return notFound();
  }
  const signal = abortSignalOf(request.signal);
  const requestId = requestIdFor(request.headers);
  let subscription: ResumeSubscription | undefined;
  try {
    // The owner is what the guard established (a key it accepted), never anything the client sent.
    subscription = await context.store.subscribe(
      streamId,
      stream ? afterSeq : 0,
      signal,
      clientIdentityOf(request).owner,
    );
  } catch (error) {
    if (error instanceof ResumeGapError) {
      context.counted('gone');
      return refuse(410, `cannot resume response '${responseId}': ${error.message}`);
    }
    if (error instanceof NoSuchEventError) {
      context.counted('no-such-event');
      return refuse(
        400,
        `starting_after ${startingAfter} is past the last event of response '${responseId}' (sequence_number ${error.lastSeq - 1})`,
      );
    }
    context.counted('error');
    return refuse(
      503,
      `cannot retrieve the response: the resume store failed: ${redactUrls(errorMessage(error))}`,
      'unavailable_error',
    );
  }
  // A stream of another dialect, or one its client asked not to be stored, is not a retrievable response.
  if (
    subscription === undefined ||
    subscription.meta.dialect !== DIALECT ||
    subscription.meta.noStore === true
  ) {
    context.counted('unknown');
    return notFound();
  }
  context.counted('ok');
  if (!stream) return Response.json(await lastResponse(subscription));
  const body = resumedBody(
    subscription,
    streamId,
    afterSeq,
    context.retryMs,
    () => context.ended(requestId, streamId),
    context.keepaliveMs,
  );
  const response = new Response(body, { status: 200, headers: subscription.meta.headers });
  response.headers.set('x-request-id', requestId);
  return response;
}

/** The `response` object of the stream's last lifecycle event, after its end. */
async function lastResponse(subscription: ResumeSubscription): Promise<Record<string, unknown>> {
  let last: Record<string, unknown> | undefined;
  let terminal = false;
  for await (const frame of subscription.frames) {
    if (frame.kind === undefined || !RESPONSE_EVENTS.has(frame.kind)) continue;
    try {
      const response = (JSON.parse(frame.data) as { response?: unknown }).response;
      if (typeof response === 'object' && response !== null && !Array.isArray(response)) {
        last = response as Record<string, unknown>;
        terminal =
          frame.kind !== 'response.created' &&
          frame.kind !== 'response.in_progress' &&
          frame.kind !== 'response.queued';
      }
    } catch {
      // not JSON: not a lifecycle event after all
    }
  }
  const response = last ?? { object: 'response' };
  if (!terminal) {
    // It stopped before its terminal event (its client left and it was cancelled, or its producer is gone).
    response.status = 'failed';
    response.error = { code: 'server_error', message: 'the response stopped before it finished' };
  }
  return response;
}

function refuse(status: number, message: string, errorType?: string): Response {
  return errorResponse(getDialect(DIALECT), 'dialect', status, message, errorType);
}
