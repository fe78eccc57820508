import { runStream } from '../../client/run-stream.ts';
import type { DialectId } from '../../dialects/dialect.ts';
import type { Result } from '../../events/result.ts';
import type { ErrorEvent, StreamEvent } from '../../events/stream-event.ts';
import type { Frame } from '../../wire/frame.ts';
import type { ActiveStream, GatewayContext, Relay } from '../gateway-context.ts';
import { clientBucket, clientIdentityOf } from '../http/client-identity.ts';
import { describeUpstreamFailure, withoutAddresses } from '../http/gateway-errors.ts';
import { PLAIN_TEXT_HEADERS } from '../http/output-format.ts';
import { directOnlyResponse, takesDirectResponse } from '../http/response-output.ts';
import type { StreamOutcome } from '../observability/gateway-metrics.ts';
import type { ContinuationRecord, EndState } from '../observability/request-log.ts';
import { type AttemptFailure, attemptFailure } from '../pool/attempt-failure.ts';
import { type FlushPolicy, isCoalescing, TextCoalescer } from '../relay/coalescer.ts';
import { ContinuedEvents } from '../relay/continued-events.ts';
import { PlainTextRelay } from '../relay/plain-text-relay.ts';
import { StreamRelay } from '../relay/stream-relay.ts';
import { VerbatimFrames } from '../relay/verbatim-frames.ts';
import { MemoryResumeStore } from '../resume/memory-resume-store.ts';
import { responseIdFor } from '../routes/responses-cursor.ts';
import { AnswerSoFar } from './answer-so-far.ts';
import type { Call } from './call.ts';
import { type Continuation, continueAnswer } from './continue-answer.ts';
import { continuesOnFailure } from './continue-on-failure.ts';
import { countTokens, endRequest, nextReplica, upstreamFailed } from './end-request.ts';
import { routeRequest } from './read-request.ts';
import { upstreamCall } from './upstream-call.ts';

/** Same-dialect streams re-encoded unless `sameDialectRelay: 'verbatim'` (see GatewayOptions). */
const RE_ENCODED_BY_DEFAULT = new Set<DialectId>(['openai-responses', 'anthropic-messages']);

/** One stream's state, in one place: what its handlers read and change while it runs. */
interface StreamState extends ActiveStream {
  /** The client disconnected (or cancelled the response body). */
  left: boolean;
  /** The gateway aborted the upstream because the client left: the run's `aborted` ending is a cancel. */
  upstreamStopped: boolean;
  /** When the first content event arrived (the TTFT). */
  firstContentAt: number | undefined;
  /** What the run failed with before the response went out (then answered as an HTTP error). */
  early: unknown;
  /** Ends the wait for the upstream's headers; set only during that wait. */
  wake: (() => void) | undefined;
  /** With `keepStreamOnDisconnect`: aborts the detached upstream after `detachedTimeoutMs`. */
  detachTimer: ReturnType<typeof setTimeout> | undefined;
  /** The upstream produced an event of this attempt: from then on a failure ends the stream. */
  relayed: boolean;
  /** A continuation's events pass through here (their start dropped, the echo taken off, usage merged). */
  seam: Seam | undefined;
  /** The continuation began its answer again instead of going on: the stream ends loudly. */
  diverged: boolean;
  /** Why the answer could not be continued, for its error. */
  refusal: string | undefined;
  /**
   * The response failed after the upstream call started and before it was returned (the catch below):
   * the call was aborted and the request answered elsewhere (a 500), so the run's ending is not logged.
   */
  abandoned: boolean;
}

/** A stream's continuation on another replica, from its failure to its end. */
interface Seam {
  filter: ContinuedEvents;
  record: ContinuationRecord;
  failedAt: number;
}

/** A streamed answer: relayed event by event in the client's dialect, from the upstream's first bytes. */
export async function relayStream(
  ctx: GatewayContext,
  call: Call,
  streamId: string,
  includePrompt: boolean,
  flush: FlushPolicy | undefined,
): Promise<Response> {
  const { dialect, request, scope, chat } = call;
  // What belongs to the attempt: another replica may take over before any event reached the client.
  let { labels, base } = call;
  const target = call.target;
  // What handing the stream to another replica needs (the request and its routing: the whole prompt),
  // kept only while that can happen: with more than one upstream, until the attempt's first event.
  let handOver: Call | undefined = ctx.retries > 0 && ctx.pool.replicas.length > 1 ? call : undefined;
  const trace = scope.trace;
  const startedAt = scope.startedAt;
  const flavor = ctx.options.flavors?.[dialect.id];
  // What the relay needs of the request, taken now: the closures below live as long as the stream, and
  // the parsed request (its messages: the whole prompt) is not kept with them.
  const model = chat.model;
  const includeUsage = chat.includeUsage === true;
  // What an answer may echo of the request's sampling (llama.cpp `generation_settings`).
  const sampling = { seed: chat.seed, temperature: chat.temperature, maxTokens: chat.maxTokens };
  const echoed = includePrompt ? (chat.prompt ?? chat.messages?.at(-1)?.content ?? '') : '';
  const sse = scope.format !== 'text' && dialect.framing === 'sse';
  // The relay is built once the upstream has answered (see below), before any of its events: until
  // then no relay's set-up stands between the client's request and the upstream's. Undefined before.
  const state: StreamState = {
    relay: undefined,
    verbatim: undefined,
    coalescer: undefined,
    upstreamAbort: call.upstreamAbort,
    left: false,
    relayed: false,
    upstreamStopped: false,
    firstContentAt: undefined,
    early: undefined,
    wake: undefined,
    detachTimer: undefined,
    abandoned: false,
    seam: undefined,
    diverged: false,
    refusal: undefined,
  };
  // With continuation on: what the client has of the answer, and the attempt that began it (its prompt
  // is where a token-exact continuation starts). The request is then kept to the stream's end.
  const continues = continuesOnFailure(ctx, request);
  const soFar = continues ? new AnswerSoFar(target.dialect === 'llamacpp') : undefined;
  let answering: Call | undefined = continues ? call : undefined;
  // Read now: no stream-long closure may refer to `call` (it holds the request: the whole prompt).
  const firstUpstream = call.upstream.name;
  let continuations = 0;
  // A same-dialect stream goes to the client as the upstream wrote it (every choice, logprob and extra
  // field), unless the gateway must rewrite it: plain text, coalescing, an echoed prompt, or a flavor
  // the operator chose for this dialect.
  const verbatim =
    scope.format === 'dialect' &&
    target.dialect === dialect.id &&
    flavor === undefined &&
    !isCoalescing(flush) &&
    echoed === '' &&
    (ctx.options.sameDialectRelay === 'verbatim' ||
      (ctx.options.sameDialectRelay === undefined && !RE_ENCODED_BY_DEFAULT.has(dialect.id)));
  // The gateway asks an OpenAI upstream for usage itself; a client that did not ask does not get it.
  const dropUsageOnly =
    !includeUsage && (dialect.id === 'openai-chat' || dialect.id === 'openai-completions');
  // When the upstream is aborted: as soon as the client leaves; with `keepStreamOnDisconnect`, only
  // after `detachedTimeoutMs` (the stream goes on into the store for a resume). `close()` aborts it too.
  const clientGone = () => {
    if (state.left) return;
    state.left = true;
    state.relay?.clientLeft();
    trace?.clientLeft();
    if (ctx.options.keepStreamOnDisconnect === true) {
      state.detachTimer ??= setTimeout(
        () => state.upstreamAbort.abort(),
        ctx.options.detachedTimeoutMs ?? 60000,
      );
      return;
    }
    state.upstreamStopped = true;
    state.upstreamAbort.abort();
  };
  // Only the signal is kept: the Request (headers, URL, spent body) can go once the response is out.
  const clientSignal = request.signal;
  clientSignal.addEventListener('abort', clientGone, { once: true });
  const responseHeaders = (): Record<string, string> =>
    scope.format === 'text'
      ? Object.assign({}, PLAIN_TEXT_HEADERS, { 'cache-control': 'no-cache', 'x-accel-buffering': 'no' })
      : Object.assign(dialect.responseHeaders(flavor), {
          'cache-control': 'no-cache',
          'x-accel-buffering': 'no',
          'x-tokenwire-stream-id': streamId,
        });
  // Who opened the stream: only the same key resumes it; its bucket bounds its share.
  const identity = clientIdentityOf(request);
  const owner = identity.owner;
  // A Responses stream's id names its stream (responses-cursor.ts); `store: false` is kept
  // for resume only (NO_STORE_RETAIN_MS).
  const responseId = dialect.id === 'openai-responses' ? responseIdFor(streamId) : undefined;
  const noStore = chat.store === false ? true : undefined;
  const client = clientBucket(identity);
  const openInStore = (headers: Record<string, string>) =>
    ctx.store.open(streamId, {
      dialect: dialect.id,
      flavor,
      headers,
      model,
      createdAt: Date.now(),
      owner,
      client,
      noStore,
    });
  // When the store registers the stream: always before its first frame. The in-memory store registers
  // it as it is called, so it is opened once the upstream has answered, with the relay (nothing then
  // stands before the upstream request). Another store may answer later than the upstream, so it is
  // opened, and awaited, here, before the upstream is called.
  const openLate = sse && ctx.store instanceof MemoryResumeStore;
  let headers: Record<string, string> | undefined;
  if (sse && !openLate) {
    headers = responseHeaders();
    await openInStore(headers);
  }
  const streamRelay = (): StreamRelay => {
    const relay = new StreamRelay({
      streamId,
      dialect,
      encoder: dialect.createEncoder({ flavor, includeUsage, model, id: responseId, sampling }),
      store: ctx.store,
      retryMs: ctx.retryMs,
      now: ctx.now,
      onCancel: () => clientGone(),
    });
    if (verbatim) {
      state.verbatim = {
        frames: new VerbatimFrames((data, kind) => relay.payload(data, kind), dropUsageOnly),
        relay,
      };
    }
    return relay;
  };
  const startRelay = (): Relay => {
    const started: Relay =
      scope.format === 'text'
        ? new PlainTextRelay({ now: ctx.now, onCancel: () => clientGone() })
        : streamRelay();
    // The gateway coalesces itself (not the relay), so the echoed prompt is never merged into the answer.
    state.coalescer = isCoalescing(flush)
      ? new TextCoalescer(flush, (event) => started.event(event))
      : undefined;
    state.relay = started;
    if (state.left) started.clientLeft();
    // `stream_options.include_prompt`: the prompt as the stream's first content, in the route's own
    // text shape (vLLM's `echo`: the last message's content, right after the role chunk). Written past
    // the event accounting, so it counts in no TTFT, token count or log line.
    if (echoed !== '') started.event({ type: 'text', text: echoed });
    return started;
  };

  ctx.active.add(state);
  ctx.metrics.active.add(labels, 1);
  // One handler on the run for the whole stream (each extra then/race/finally would stay attached to
  // every open stream). Until the response is returned (and the relay built), a failure is early: it
  // goes back as an HTTP error.
  // The attempt's request is a parameter, not a captured variable: the stream-long handlers below do not
  // keep the upstream body (the prompt) alive.
  // The attempt being started, until its first event (then `answering`: the attempt that began the answer).
  let starting: Call | undefined;
  const startRun = (attempt: Call) => {
    if (continues) starting = attempt;
    return startRunOf(attempt);
  };
  const startRunOf = (attempt: Call) =>
    runStream(
      attempt.target,
      // An error status is not "ready": the run rejects with it right after, and it is passed on as such.
      Object.assign({}, attempt.runOptions, {
        onResponse: (response: Response) => (response.ok ? state.wake?.() : undefined),
        onFrame: verbatim ? (frame: Frame) => state.verbatim?.frames.frame(frame) : undefined,
      }),
      {
        onEvent: (event) => {
          if (!state.relayed) {
            state.relayed = true;
            // From the first event on no other replica takes over: the request can go.
            handOver = undefined;
            if (state.seam === undefined && starting !== undefined) answering = starting;
            starting = undefined;
          }
          const seam = state.seam;
          if (seam !== undefined) {
            if (seam.filter.event(event) === 'diverged') {
              state.diverged = true;
              state.upstreamAbort.abort();
            }
            return;
          }
          deliver(event);
        },
        afterChunk: () => {
          state.verbatim?.frames.flush();
          state.relay!.flushEncoder();
        },
        backpressure: () => state.relay!.backpressure(),
        consumer: state.upstreamAbort,
      },
    ).then(onResult, onFailure);
  /** An event of the answer, to the client (a continuation's through its seam first). */
  const deliver = (event: StreamEvent): void => {
    if (soFar !== undefined) {
      if (event.type === 'error' && continuableError(event)) {
        // Another replica may go on: the failed upstream's own error is not written.
        state.verbatim?.frames.discard();
        return;
      }
      soFar.observe(event);
      const seam = state.seam;
      if (seam !== undefined && seam.record.gapMs === undefined && isContent(event)) {
        seam.record.gapMs = ctx.now() - seam.failedAt;
        ctx.metrics.continuationGap.observe(labels, seam.record.gapMs / 1000);
      }
    }
    if (
      state.firstContentAt === undefined &&
      (event.type === 'text' ||
        (event.type === 'reasoning' && event.text !== '') ||
        event.type === 'tool-call-delta')
    ) {
      state.firstContentAt = ctx.now();
      trace?.firstToken(state.firstContentAt - startedAt);
    }
    if (state.verbatim !== undefined) state.verbatim.frames.event(event);
    else if (event.type === 'error')
      return; // written once, as the stream's ending
    else if (state.coalescer !== undefined) state.coalescer.push(event);
    else state.relay!.event(event);
  };
  const streamLog = sse ? streamId : undefined;
  const ended = () => {
    if (state.detachTimer !== undefined) clearTimeout(state.detachTimer);
    clientSignal.removeEventListener('abort', clientGone);
    ctx.finish(state, labels);
  };
  /**
   * After the response went out (a 200 and keepalives) and before any event of this attempt: a failure
   * another replica may not have sends the request there, under the same client stream (routed and set
   * up again; re-encoded when the new replica speaks another dialect). True when it went.
   */
  const tryAnother = (failure: AttemptFailure | undefined): boolean => {
    if (state.relay === undefined || state.relayed || state.left || state.abandoned) return false;
    if (handOver === undefined || !nextReplica(ctx, handOver, failure)) return false;
    void switchReplica();
    return true;
  };
  /** From now on `next` answers the stream: its labels count it, its log line ends it, its abort stops it. */
  const answeredBy = (next: Call) => {
    ctx.metrics.requests.inc(next.labels);
    ctx.finish(state, labels);
    ctx.active.add(state);
    ctx.metrics.active.add(next.labels, 1);
    labels = next.labels;
    base = next.base;
    state.upstreamAbort = next.upstreamAbort;
  };
  /** How a continuation ended, counted once: its stream completed, it failed too, or none could go on. */
  const settle = (record: ContinuationRecord, result: ContinuationRecord['result']) => {
    record.result = result;
    ctx.metrics.continuations.inc({ route: dialect.id, upstream: record.from, result });
  };
  const switchReplica = async () => {
    const from = handOver!;
    const read = routeRequest(ctx, dialect, scope, from.routing);
    let next: Call | undefined;
    if (!(read instanceof Response)) {
      const nextLabels = ctx.labelSets.of(dialect.id, read.upstream.name);
      try {
        const setUp = upstreamCall(ctx, dialect, from.request, scope, read, nextLabels, streamId);
        next = setUp instanceof Promise ? await setUp : setUp;
      } catch (error) {
        endRequest(ctx, scope, Object.assign({}, base, { status: 200, outcome: 'error' as const, error }));
      }
    }
    if (next === undefined) {
      // Ended already (a refusal, or the set-up failed): the client's stream ends with the error.
      state.coalescer?.flush();
      state.relay?.fail({
        message: `no other upstream could take the request (request id ${scope.requestId})`,
        status: 502,
      });
      if (sse) ctx.store.close(streamId, 'failed').catch(() => {});
      ended();
      return;
    }
    answeredBy(next);
    handOver = next;
    if (state.left && !state.upstreamStopped) state.upstreamStopped = true;
    if (state.left) next.upstreamAbort.abort();
    // A replica of another dialect: its events are re-encoded (nothing of the first was written).
    if (state.verbatim !== undefined && next.target.dialect !== dialect.id) state.verbatim = undefined;
    startRun(next);
  };
  /**
   * After events of the answer went out: a failure another replica may not have goes on there from where
   * the answer stopped (continue-answer.ts), under the same client stream. True when it went.
   */
  const tryContinue = (failure: AttemptFailure | undefined): boolean => {
    if (soFar === undefined || answering === undefined || state.relay === undefined) return false;
    // A client that left is continued for only when the stream goes on for a resume without it.
    const detached = state.left && ctx.options.keepStreamOnDisconnect === true;
    if (
      !state.relayed ||
      (state.left && !detached) ||
      state.abandoned ||
      state.diverged ||
      failure === undefined
    )
      return false;
    const from = scope.upstream ?? firstUpstream;
    const seam = state.seam;
    if (seam !== undefined) {
      seam.filter.flush();
      if (seam.record.result === 'continued') settle(seam.record, 'failed');
    }
    const record: ContinuationRecord = {
      from,
      to: undefined,
      path: undefined,
      afterTokens: soFar.tokens,
      result: 'refused',
    };
    if (scope.continuations === undefined) scope.continuations = [];
    scope.continuations.push(record);
    const set =
      continuations >= ctx.continueMax
        ? `its ${ctx.continueMax} continuation${ctx.continueMax === 1 ? ' was' : 's were'} used`
        : continueAnswer(ctx, answering, soFar, failure, streamId);
    if (typeof set === 'string') {
      record.reason = set;
      state.refusal = set;
      settle(record, 'refused');
      return false;
    }
    continuations += 1;
    const failedAt = ctx.now();
    void goOn(set, record, failedAt);
    return true;
  };
  const goOn = async (
    set: Continuation | Promise<Continuation>,
    record: ContinuationRecord,
    failedAt: number,
  ) => {
    let next: Continuation;
    try {
      next = set instanceof Promise ? await set : set;
    } catch (error) {
      // The continuation's set-up failed: counted as a failed continuation, then the stream's failure.
      record.reason = describeUpstreamFailure(error).message;
      state.refusal = record.reason;
      settle(record, 'failed');
      onFailure(error);
      return;
    }
    answeredBy(next.call);
    if (state.left && ctx.options.keepStreamOnDisconnect !== true) {
      state.upstreamStopped = true;
      next.call.upstreamAbort.abort();
    }
    const relay = state.relay!;
    const verbatimRelay = state.verbatim;
    if (verbatimRelay !== undefined) {
      // Relayed as the upstream wrote it until now: an encoder of the client's dialect goes on from
      // where those frames left the stream (same id, model and open parts).
      verbatimRelay.frames.flush();
      verbatimRelay.relay.takeOver(
        dialect.createEncoder({ flavor, includeUsage, model, id: responseId, sampling }),
        soFar!.history(),
      );
      state.verbatim = undefined;
    }
    const soFarNow = soFar!;
    record.to = next.replica.name;
    record.path = next.path;
    record.result = 'continued';
    relay.note(`continued on ${next.replica.name} after ${soFarNow.tokens} tokens`);
    state.seam = {
      filter: new ContinuedEvents({
        echo: next.echo,
        tokensBefore: soFarNow.tokens,
        inText: soFarNow.place === 'text',
        emit: deliver,
      }),
      record,
      failedAt,
    };
    startRun(next.call);
  };
  function onResult(result: Result): void {
    if (state.abandoned) {
      ended();
      return;
    }
    if (!result.complete && !state.upstreamStopped && tryAnother(resultFailure(result))) return;
    if (!result.complete && !state.upstreamStopped && tryContinue(continuableFailure(result))) return;
    const seam = state.seam;
    if (seam !== undefined) {
      seam.filter.flush();
      result = stitched(result, seam.filter, soFar!);
      if (seam.record.result === 'continued') settle(seam.record, result.complete ? 'continued' : 'failed');
    }
    // The upstream answered, so the relay was built (after the wait below, or its timeout).
    const relay = state.relay!;
    try {
      trace?.upstreamEnded(result, undefined, result.metrics.totalMs ?? ctx.now() - startedAt);
      state.coalescer?.flush();
      relay.flushEncoder();
      let outcome: StreamOutcome;
      let endState: EndState;
      let closing: 'complete' | 'failed' | 'cancelled';
      const relayed = state.verbatim;
      if (result.complete) {
        // A verbatim stream's ending (its `[DONE]`, `done: true` line…) was the upstream's own.
        if (relayed !== undefined) {
          relayed.frames.flush();
          relayed.relay.endAsRelayed();
        } else relay.end(result);
        outcome = 'completed';
        endState = result.truncated ? 'truncated' : 'completed';
        closing = 'complete';
        if (result.truncated) ctx.metrics.truncated.inc(labels);
      } else if (result.incomplete === 'aborted' && state.upstreamStopped && !state.diverged) {
        relay.abort();
        outcome = 'cancelled';
        endState = 'cancelled';
        closing = 'cancelled';
      } else if (relayed !== undefined && result.incomplete === 'server-error' && relayed.frames.sawError) {
        // The upstream wrote its own error event, which went on as it was: nothing to add.
        relayed.frames.flush();
        relayed.relay.endAsRelayed();
        outcome = 'error';
        endState = outcome;
        closing = 'failed';
      } else {
        // A refused payload is not passed on; anything else the upstream wrote before the failure is.
        if (result.incomplete === 'malformed') relayed?.frames.discard();
        else relayed?.frames.flush();
        const why = state.diverged
          ? `the replica ${scope.upstream ?? ''} asked to continue the answer began it again instead`
          : `the upstream failed: ${withoutAddresses(result.error?.message ?? result.incomplete ?? 'the stream failed')}`;
        relay.fail(
          {
            message: `${why}${state.refusal === undefined ? '' : `; not continued: ${state.refusal}`} (request id ${scope.requestId})`,
            status: result.error?.status ?? 502,
            errorType: result.error?.errorType,
          },
          result,
        );
        outcome = result.incomplete === 'server-error' ? 'error' : 'incomplete';
        endState = outcome;
        closing = 'failed';
      }
      if (sse) ctx.store.close(streamId, closing).catch(() => {});
      ctx.metrics.streams.inc(ctx.labelSets.with(labels, 'outcome', outcome));
      countTokens(ctx, labels, result);
      const ttftMs = state.firstContentAt === undefined ? undefined : state.firstContentAt - startedAt;
      if (ttftMs !== undefined) ctx.metrics.ttft.observe(labels, ttftMs / 1000);
      ctx.metrics.interChunk.observeEach(labels, result.metrics.interChunkMs, 1 / 1000);
      ctx.metrics.duration.observe(labels, (ctx.now() - startedAt) / 1000);
      endRequest(
        ctx,
        scope,
        Object.assign({}, base, {
          status: 200,
          outcome,
          result,
          endState,
          ttftMs,
          firstContentAt: state.firstContentAt,
          streamId: streamLog,
        }),
      );
    } finally {
      ended();
    }
  }
  function onFailure(error: unknown): void {
    if (state.abandoned) {
      ended();
      return;
    }
    if (tryAnother(attemptFailure(error))) return;
    if (tryContinue(attemptFailure(error) ?? { outcome: 'server-error', retryable: true })) return;
    if (state.seam !== undefined && state.seam.record.result === 'continued')
      settle(state.seam.record, 'failed');
    if (state.relay === undefined) {
      state.early = error ?? new Error('upstream failed');
      state.wake?.();
      return;
    }
    const relay = state.relay;
    try {
      state.coalescer?.flush();
      state.verbatim?.frames.flush();
      relay.fail({
        message: `${describeUpstreamFailure(error).message}${state.refusal === undefined ? '' : `; not continued: ${state.refusal}`} (request id ${scope.requestId})`,
        status: 502,
      });
      if (sse) ctx.store.close(streamId, 'failed').catch(() => {});
      ctx.metrics.streams.inc(ctx.labelSets.with(labels, 'outcome', 'error'));
      endRequest(
        ctx,
        scope,
        Object.assign({}, base, {
          status: 200,
          outcome: 'error' as const,
          error,
          endState: 'error' as const,
          streamId: streamLog,
        }),
      );
    } finally {
      ended();
    }
  }
  startRun(call);

  // Any failure from here until the response is returned (the store, the relay's set-up) comes after
  // the upstream call started: the call is aborted and the stream ended at once, so no generation runs
  // on for nobody and no stream slot stays held; the request is answered with a 500.
  let opened = sse && !openLate;
  try {
    // Pass the upstream's own HTTP errors on as such when they come quickly; never wait for a token.
    if (state.early === undefined) {
      let waitTimer: ReturnType<typeof setTimeout> | undefined;
      await new Promise<void>((resolve) => {
        state.wake = resolve;
        waitTimer = setTimeout(resolve, ctx.headersWaitMs);
      });
      clearTimeout(waitTimer);
      state.wake = undefined;
    }
    if (state.early !== undefined) {
      ctx.finish(state, labels);
      if (opened) ctx.store.close(streamId, 'failed').catch(() => {});
      clientSignal.removeEventListener('abort', clientGone);
      return upstreamFailed(ctx, call, state.early);
    }
    // When the response headers go out: here, with the returned Response, once the upstream answered
    // with an OK status (or `upstreamHeadersWaitMs` passed without a failure). From now on a failure is
    // the stream's own ending, written by the run's handlers above.
    headers ??= responseHeaders();
    if (openLate) {
      opened = true;
      void openInStore(headers);
    }
    const relay = startRelay();

    // An adapter that writes to the socket itself (node/serve.ts) needs no ReadableStream.
    return takesDirectResponse(request)
      ? directOnlyResponse(relay.direct, { status: 200, headers })
      : new Response(relay.body, { status: 200, headers });
  } catch (error) {
    state.abandoned = true;
    state.upstreamStopped = true;
    state.upstreamAbort.abort();
    ctx.finish(state, labels);
    clientSignal.removeEventListener('abort', clientGone);
    if (opened) ctx.store.close(streamId, 'failed').catch(() => {});
    throw error;
  }
}

/** What a stream that ended with none of its events says of its replica: cut, or silent too long. */
function resultFailure(result: Result): AttemptFailure | undefined {
  if (result.incomplete === 'connection-closed') return { outcome: 'unreachable', retryable: true };
  if (result.incomplete === 'first-byte-timeout' || result.incomplete === 'idle-timeout')
    return { outcome: 'timeout', retryable: true };
  return undefined;
}

/** A failure mid-answer that another replica may not have: cut, silent too long, or a server-side error. */
function continuableFailure(result: Result): AttemptFailure | undefined {
  const cut = resultFailure(result);
  if (cut !== undefined) return cut;
  if (result.incomplete === 'server-error') {
    const status = result.error?.status;
    if (status === undefined || status >= 500 || status === 429)
      return { outcome: 'server-error', retryable: true };
  }
  return undefined;
}

/** An error event another replica may not have (overloaded, no free slot, a 5xx-class error). */
function continuableError(event: ErrorEvent): boolean {
  return event.status === undefined || event.status >= 500 || event.status === 429;
}

function isContent(event: StreamEvent): boolean {
  return (
    event.type === 'text' ||
    event.type === 'tool-call-delta' ||
    (event.type === 'reasoning' && event.text !== '')
  );
}

/** A continued stream's result as one answer: the text the client has, usage for the whole answer. */
function stitched(result: Result, filter: ContinuedEvents, soFar: AnswerSoFar): Result {
  const whole = Object.assign({}, result, { text: soFar.text, reasoning: soFar.reasoning });
  if (result.usage !== undefined) whole.usage = filter.usage(result.usage);
  else if (result.metrics.outputTokens !== undefined)
    whole.metrics = Object.assign({}, result.metrics, { outputTokens: soFar.tokens });
  return whole;
}
