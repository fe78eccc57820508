import { HttpError } from '../../client/client-errors.ts';
import { runStream } from '../../client/run-stream.ts';
import { nonStreamBody } from '../../dialects/non-stream-body.ts';
import type { GatewayContext } from '../gateway-context.ts';
import { clientBucket, clientIdentityOf } from '../http/client-identity.ts';
import { clientStatusFor, errorResponse, withoutAddresses } from '../http/gateway-errors.ts';
import { randomStreamId } from '../http/stream-id.ts';
import type { StreamOutcome } from '../observability/gateway-metrics.ts';
import { responseIdFor } from '../routes/responses-cursor.ts';
import type { Call } from './call.ts';
import { countTokens, endRequest, upstreamFailed } from './end-request.ts';

/** A client that asked for no stream: the upstream still streams, and the whole answer goes back. */
export async function answerWhole(ctx: GatewayContext, call: Call, tgiRoot: boolean): Promise<Response> {
  const { dialect, request, scope, chat, labels, target, runOptions, base, upstreamAbort } = call;
  const trace = scope.trace;
  const onClientGone = () => upstreamAbort.abort();
  request.signal.addEventListener('abort', onClientGone, { once: true });
  try {
    const result = await runStream(target, runOptions, { consumer: upstreamAbort });
    trace?.upstreamEnded(result, undefined, result.metrics.totalMs ?? ctx.now() - scope.startedAt);
    countTokens(ctx, labels, result);
    const ttftMs = result.metrics.ttftMs;
    if (!result.complete) {
      const outcome: StreamOutcome = result.incomplete === 'server-error' ? 'error' : 'incomplete';
      ctx.metrics.streams.inc(ctx.labelSets.with(labels, 'outcome', outcome));
      const message = `the upstream stream was incomplete: ${withoutAddresses(result.error?.message ?? result.incomplete ?? '')} (request id ${scope.requestId})`;
      // The status the upstream's error event carried (llama-server's context-full 400/500), else 502.
      const status = clientStatusFor(result.error?.status ?? 502);
      endRequest(ctx, scope, Object.assign({}, base, { status, outcome, result, endState: outcome, ttftMs }));
      return errorResponse(dialect, scope.format, status, message, 'upstream_error');
    }
    ctx.metrics.streams.inc(ctx.labelSets.with(labels, 'outcome', 'completed'));
    if (result.truncated) ctx.metrics.truncated.inc(labels);
    endRequest(
      ctx,
      scope,
      Object.assign({}, base, {
        status: 200,
        outcome: 'non-stream' as const,
        result,
        endState: result.truncated ? ('truncated' as const) : ('completed' as const),
        ttftMs,
      }),
    );
    const model = chat.model ?? result.model ?? 'unknown';
    const answer = nonStreamBody(dialect.id, result, model, Date.now(), chat.seed);
    if (dialect.id === 'openai-responses' && chat.store !== false)
      await storeWholeResponse(ctx, call, answer, model);
    // TGI's `POST /` answers with a list (the HF Inference API shape).
    return Response.json(tgiRoot ? [answer] : answer);
  } catch (error) {
    return upstreamFailed(ctx, call, error);
  } finally {
    request.signal.removeEventListener('abort', onClientGone);
  }
}

/**
 * A whole Response kept in the resume store as a stream of one event, its terminal one, under the id
 * it is given here (`resp_<stream id>`): `GET /v1/responses/{id}` finds it as it finds streamed ones
 * (responses-cursor.ts), bounded and expired as they are. A store that fails costs the retrieval only.
 */
async function storeWholeResponse(
  ctx: GatewayContext,
  call: Call,
  answer: Record<string, unknown>,
  model: string,
): Promise<void> {
  const streamId = randomStreamId();
  answer.id = responseIdFor(streamId);
  const identity = clientIdentityOf(call.request);
  const flavor = ctx.options.flavors?.[call.dialect.id];
  const type = answer.status === 'incomplete' ? 'response.incomplete' : 'response.completed';
  try {
    await ctx.store.open(streamId, {
      dialect: call.dialect.id,
      flavor,
      headers: Object.assign(call.dialect.responseHeaders(flavor), { 'cache-control': 'no-cache' }),
      model,
      createdAt: Date.now(),
      owner: identity.owner,
      client: clientBucket(identity),
    });
    ctx.store.append(streamId, {
      seq: 1,
      data: JSON.stringify({ type, sequence_number: 0, response: answer }),
      kind: type,
    });
    await ctx.store.close(streamId, 'complete');
  } catch {
    // The answer still goes out; only its later retrieval is lost (a 404 then says so).
  }
}

/**
 * A non-stream request to an upstream of the client's own dialect: sent as the client sent it, and the
 * upstream's answer — every choice, logprob and field — returned as it is, with its status (an upstream
 * refusing the gateway's own credentials is the gateway's 502, as for streams).
 */
export async function answerWholeAsIs(ctx: GatewayContext, call: Call): Promise<Response> {
  // A Response is the gateway's own, as a streamed one is (relay-stream.ts re-encodes Responses by
  // default): llama-server says `completed` for a capped answer, and only an id the gateway wrote is
  // retrievable from `GET /v1/responses/{id}`. `sameDialectRelay: 'verbatim'` passes it on as it is.
  if (call.dialect.id === 'openai-responses' && ctx.options.sameDialectRelay !== 'verbatim')
    return answerWhole(ctx, call, false);
  const { request, scope, labels, target, upstream, base, upstreamAbort } = call;
  const onClientGone = () => upstreamAbort.abort();
  request.signal.addEventListener('abort', onClientGone, { once: true });
  const limitMs = upstream.timeouts?.totalMs ?? upstream.timeouts?.idleMs;
  const timer = limitMs === undefined ? undefined : setTimeout(() => upstreamAbort.abort(), limitMs);
  try {
    const upstreamRequest = new Request(target.url, {
      method: 'POST',
      headers: Object.assign({ 'content-type': 'application/json' }, target.headers),
      // `stream: false` said outright: where a dialect's default is to stream (Ollama), the client said it.
      body: JSON.stringify(Object.assign({}, call.clientBody, { stream: false })),
      signal: upstreamAbort.signal,
    });
    const answer = await (upstream.fetch ?? fetch)(upstreamRequest);
    const text = await answer.text();
    if (!answer.ok && clientStatusFor(answer.status) !== answer.status) {
      const headers: Record<string, string> = {};
      answer.headers.forEach((value, key) => {
        headers[key] = value;
      });
      const refused = new HttpError({
        method: 'POST',
        url: String(target.url),
        status: answer.status,
        statusText: answer.statusText,
        body: text,
        headers,
      });
      return upstreamFailed(ctx, call, refused);
    }
    const usage = answer.ok ? wholeAnswerUsage(text) : undefined;
    if (usage?.inputTokens !== undefined) ctx.metrics.inputTokens.inc(labels, usage.inputTokens);
    if (usage?.outputTokens !== undefined && usage.outputTokens > 0) {
      ctx.metrics.outputTokens.inc(ctx.labelSets.with(labels, 'source', 'server'), usage.outputTokens);
    }
    const outcome = answer.ok ? 'completed' : 'error';
    ctx.metrics.streams.inc(ctx.labelSets.with(labels, 'outcome', outcome));
    endRequest(
      ctx,
      scope,
      Object.assign({}, base, {
        status: answer.status,
        outcome: answer.ok ? ('non-stream' as const) : ('error' as const),
        endState: answer.ok ? ('completed' as const) : ('error' as const),
      }),
    );
    const contentType = answer.headers.get('content-type') ?? 'application/json';
    return new Response(text, { status: answer.status, headers: { 'content-type': contentType } });
  } catch (error) {
    return upstreamFailed(ctx, call, error);
  } finally {
    if (timer !== undefined) clearTimeout(timer);
    request.signal.removeEventListener('abort', onClientGone);
  }
}

/**
 * The token counts of a whole (non-stream) answer, in any dialect's field names: OpenAI `usage`
 * (`prompt_tokens`, `completion_tokens`), Messages and Responses `usage` (`input_tokens`, `output_tokens`),
 * Ollama `prompt_eval_count` / `eval_count`, llama.cpp `tokens_evaluated` / `tokens_predicted`.
 */
function wholeAnswerUsage(text: string): { inputTokens?: number; outputTokens?: number } | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const record = value as Record<string, unknown>;
  const usage = (typeof record.usage === 'object' && record.usage !== null ? record.usage : record) as Record<
    string,
    unknown
  >;
  const number = (...keys: string[]): number | undefined => {
    for (const key of keys) if (typeof usage[key] === 'number') return usage[key] as number;
    return undefined;
  };
  const counts: { inputTokens?: number; outputTokens?: number } = {};
  const input = number('prompt_tokens', 'input_tokens', 'prompt_eval_count', 'tokens_evaluated');
  const output = number('completion_tokens', 'output_tokens', 'eval_count', 'tokens_predicted');
  if (input !== undefined) counts.inputTokens = input;
  if (output !== undefined) counts.outputTokens = output;
  return counts;
}
