import type { Dialect } from '../dialects/dialect.ts';
import { RequestError } from '../dialects/dialect.ts';
import { nonStreamBody } from '../dialects/non-stream-body.ts';
import { DIALECTS, dialectForPath } from '../dialects/registry.ts';
import { StreamDecoder } from '../dialects/stream-decoder.ts';
import type { ChatRequest } from '../events/chat-request.ts';
import { renderPrompt } from '../events/chat-request.ts';
import { emptyMetrics, ResultBuilder } from '../events/result.ts';
import { contextExceededResponse, DEFAULT_CONTEXT_TOKENS } from './context-error.ts';
import { countTokensRoute } from './count-tokens-route.ts';
import { type Faults, formatFaults, mergeFaults, parseFaults } from './faults.ts';
import { modelNotFoundResponse, servesModel } from './model-not-found.ts';
import { hashSeed } from './prng.ts';
import { infoRoute, notFoundResponse } from './routes.ts';
import { showRoute } from './show-route.ts';
import {
  idsOfMixedPrompt,
  prefillOf,
  type SimContinuation,
  tokenBytesOf,
  tokenPromptOf,
} from './sim-continuation.ts';
import { FAULT_HEADER, FLAVOR_HEADER, type SimOptions } from './sim-options.ts';
import { type SimOutcome, type SimRequestRecord, type SimStats, SimStatsRecorder } from './sim-stats.ts';
import { simStream } from './sim-stream.ts';
import { realSleep } from './sleep.ts';
import { resolveTiming } from './timing.ts';
import { loadTokenizer } from './tokenizer.ts';

export interface Sim {
  /** A web-standard handler: every dialect endpoint, `/v1/models`, `/api/tags`, `/health`. */
  fetch(request: Request): Promise<Response>;
  /** Live counters. */
  readonly stats: SimStats;
  /** Resolves when no request is in flight (for tests). */
  idle(): Promise<void>;
}

const DEFAULT_MAX_TOKENS = 200;

/**
 * The simulated model: a `fetch` handler that speaks every registered dialect like the real servers,
 * deterministic for a seed, with fault injection. Only streaming is simulated: a request with
 * `"stream": false` gets a 400 in the dialect's error shape (a request that leaves `stream` out is
 * streamed, even on OpenAI routes where the real default is not to stream).
 */
export function createSim(options: SimOptions = {}): Sim {
  const seed = options.seed ?? 1;
  const models = options.models !== undefined && options.models.length > 0 ? [...options.models] : ['sim'];
  const strictModels = options.models !== undefined && options.models.length > 0;
  const timing = resolveTiming(options.timing);
  const serverFaults = parseFaults(options.faults ?? '');
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? realSleep;
  const defaultMaxTokens = options.defaultMaxTokens ?? DEFAULT_MAX_TOKENS;
  const flavors = options.flavors ?? {};
  const contextTokens = options.contextTokens ?? DEFAULT_CONTEXT_TOKENS;
  if (!Number.isSafeInteger(contextTokens) || contextTokens < 1) {
    throw new RangeError(`contextTokens must be a positive integer, not ${contextTokens}`);
  }
  for (const [id, flavor] of Object.entries(flavors)) {
    const dialect = DIALECTS[id];
    if (dialect !== undefined && flavor !== undefined && !dialect.flavors.includes(flavor)) {
      throw new RangeError(
        `unknown flavor ${JSON.stringify(flavor)} for ${id}; known: ${dialect.flavors.join(', ')}`,
      );
    }
  }
  const recorder = new SimStatsRecorder();
  const createdAt = now();
  /** When each model name is loaded (clock ms): the cold start is paid once per name. */
  const readyAt = new Map<string, number>();
  let counter = 0;

  async function generate(dialect: Dialect, request: Request): Promise<Response> {
    const startedAt = now();
    counter += 1;
    const record: SimRequestRecord = {
      id: `sim-${counter}`,
      dialect: dialect.id,
      model: '',
      outcome: 'failed',
      outputTokens: 0,
      startedAt,
      endedAt: startedAt,
      faults: '',
      headers: Object.fromEntries(request.headers),
    };
    recorder.begin();
    let ended = false;
    const end = (outcome: SimOutcome, outputTokens: number): void => {
      if (ended) return;
      ended = true;
      record.outcome = outcome;
      record.outputTokens = outputTokens;
      record.endedAt = now();
      recorder.end(record);
    };
    const fail = (status: number, message: string, headers: Record<string, string> = {}): Response => {
      end('failed', 0);
      const error = dialect.errorResponse({ status, message });
      return new Response(error.body, {
        status: error.status,
        headers: { 'content-type': error.contentType, ...headers },
      });
    };

    try {
      let body: unknown;
      try {
        body = JSON.parse(await request.text());
      } catch (error) {
        return fail(400, `the request body is not valid JSON: ${(error as Error).message}`);
      }
      let chat: ChatRequest;
      try {
        chat = dialect.fromRequestBody(body);
      } catch (error) {
        if (error instanceof RequestError) return fail(error.status, error.message);
        throw error;
      }
      const requested = chat.model ?? models[0] ?? 'sim';
      const at = requested.indexOf('@');
      const model = at === -1 ? requested : requested.slice(0, at);
      record.model = model;
      // Only the models it serves (SimOptions.models, when given); suffixes (`sim@cut-after=5`) stay faults.
      if (strictModels && !servesModel(dialect, models, model)) {
        end('failed', 0);
        return modelNotFoundResponse(dialect, model);
      }
      let faults: Faults;
      try {
        faults = mergeFaults(
          serverFaults,
          parseFaults(request.headers.get(FAULT_HEADER) ?? ''),
          parseFaults(at === -1 ? '' : requested.slice(at + 1)),
        );
      } catch (error) {
        return fail(400, `tokenwire sim: ${(error as Error).message}`);
      }
      record.faults = formatFaults(faults);
      const flavor = request.headers.get(FLAVOR_HEADER) ?? flavors[dialect.id] ?? dialect.flavors[0] ?? '';
      if (dialect.flavors.length > 0 && !dialect.flavors.includes(flavor)) {
        return fail(
          400,
          `tokenwire sim: unknown ${FLAVOR_HEADER} ${JSON.stringify(flavor)} for ${dialect.id}; known: ${dialect.flavors.join(', ')}`,
        );
      }

      const refusedChoices = refuseChoices(dialect.id, flavor, chat.n);
      if (refusedChoices !== undefined) return fail(400, refusedChoices);

      if (faults.slowHeaders !== undefined) {
        await sleep(faults.slowHeaders, request.signal);
        if (request.signal.aborted) {
          end('cancelled', 0);
          return new Response(null, { status: 499 });
        }
      }
      if (faults.status !== undefined) {
        const retry: Record<string, string> =
          faults.status === 429 || faults.status === 503 ? { 'retry-after': '1' } : {};
        return fail(faults.status, `tokenwire sim: simulated HTTP ${faults.status} (fault status)`, retry);
      }
      // The answer is a function of the prompt and the seed: a request may continue an earlier one.
      const seedOf = (request: ChatRequest): number =>
        hashSeed(seed, request.seed, model, renderPrompt(request), JSON.stringify(request.tools ?? null));
      let continuation: SimContinuation | undefined;
      const mixed = dialect.id === 'llamacpp' ? tokenPromptOf(chat) : undefined;
      if (mixed !== undefined) {
        let bytes: Uint8Array[];
        const tokenizer = await loadTokenizer();
        const ids = idsOfMixedPrompt(tokenizer, mixed);
        try {
          bytes = tokenBytesOf(tokenizer, ids);
        } catch (error) {
          return fail(400, `tokenwire sim: ${(error as Error).message}`);
        }
        // Answered as the text the ids spell, unless they continue an answer (sim-continuation.ts).
        const { prompt: _ids, ...extra } = chat.extra ?? {};
        chat = Object.assign({}, chat, { prompt: decodeBytes(bytes), extra });
        continuation = { kind: 'tokens', ids, bytes, seedOf };
      } else if (chat.messages === undefined || chat.messages.length === 0) {
        // A bare text prompt may end with the first part of an earlier answer (sim-continuation.ts).
        if (chat.prompt !== undefined && chat.prompt !== '') continuation = { kind: 'text', seedOf };
      } else {
        const prefilled = prefillOf(chat);
        if (prefilled !== undefined)
          continuation = Object.assign(
            { kind: 'prefill' as const, seed: seedOf(prefilled.request) },
            prefilled,
          );
      }
      // The context check, before any streaming as the real servers do it (context-error.ts).
      const promptTokens = await countPromptTokens(chat, contextTokens, request.signal);
      if (promptTokens === undefined) {
        end('cancelled', 0);
        return new Response(null, { status: 499 });
      }
      if (promptTokens >= contextTokens) {
        end('failed', 0);
        const error = contextExceededResponse(dialect, flavor, promptTokens, contextTokens);
        return new Response(error.body, {
          status: error.status,
          headers: { 'content-type': error.contentType },
        });
      }

      const ready = readyAt.get(model);
      if (ready === undefined) readyAt.set(model, startedAt + timing.loadMs);
      const loadWaitMs = ready === undefined ? timing.loadMs : Math.max(0, ready - startedAt);
      const headers = new Headers(dialect.responseHeaders(flavor));
      if (faults.contentType !== undefined) {
        if (faults.contentType === '') headers.delete('content-type');
        else headers.set('content-type', faults.contentType);
      }
      const stream = simStream({
        dialect,
        flavor,
        model,
        // A whole answer always carries its counts, as the servers' non-stream answers do.
        request: chat.stream === false ? Object.assign({}, chat, { includeUsage: true }) : chat,
        faults,
        timing: {
          ...timing,
          tokensPerSecond: faults.tps ?? timing.tokensPerSecond,
          ttftMs: faults.ttft ?? timing.ttftMs,
        },
        seed: seedOf(chat),
        continuation,
        // Negative caps (Ollama's -1 "no limit", -2 "fill the context") fall back to the default.
        maxTokens: chat.maxTokens !== undefined && chat.maxTokens >= 0 ? chat.maxTokens : defaultMaxTokens,
        startedAt,
        loadWaitMs,
        source: request,
        now,
        sleep,
        tokenizer: loadTokenizer(),
        onEnd: end,
        splitGapMs: options.splitGapMs,
      });
      // A non-stream request gets the whole answer, as the real servers give it, once it is generated.
      if (chat.stream === false) return await wholeAnswer(dialect, stream, model, now);
      return new Response(stream, { status: 200, headers });
    } catch (error) {
      // A bug, not a simulated failure: say so plainly.
      return fail(500, `tokenwire sim: internal error: ${(error as Error).message}`);
    }
  }

  return {
    fetch: async (request: Request): Promise<Response> => {
      const path = new URL(request.url).pathname;
      const info = infoRoute(request.method, path, { models, createdAt });
      if (info !== undefined) return info;
      const counted = countTokensRoute(request, path, { models, strictModels, contextTokens });
      if (counted !== undefined) return counted;
      const shown = showRoute(request, path, { models, strictModels, contextTokens, createdAt });
      if (shown !== undefined) return shown;
      const dialect = dialectForPath(path);
      if (dialect === undefined) return notFoundResponse(request.method, path);
      if (request.method !== 'POST') {
        const error = dialect.errorResponse({
          status: 405,
          message: `${request.method} is not allowed; use POST`,
        });
        return new Response(error.body, {
          status: error.status,
          headers: { 'content-type': error.contentType, allow: 'POST' },
        });
      }
      return generate(dialect, request);
    },
    stats: recorder.stats,
    idle: () => recorder.idle(),
  };
}

/**
 * The prompt's tokens (with the tools', as the generation counts them), or 0 when it cannot reach
 * `contextTokens` (a token is at least one UTF-8 byte, a UTF-16 unit at most three), so short prompts
 * never wait for the tokenizer. Counted in slices that let the event loop turn; `undefined` if the
 * client went away meanwhile.
 */
async function countPromptTokens(
  chat: ChatRequest,
  contextTokens: number,
  signal: AbortSignal,
): Promise<number | undefined> {
  const prompt = renderPrompt(chat);
  const tools = chat.tools !== undefined && chat.tools.length > 0 ? JSON.stringify(chat.tools) : '';
  if (3 * (prompt.length + tools.length) < contextTokens) return 0;
  const tokenizer = await loadTokenizer();
  const promptTokens = await tokenizer.count(prompt, signal);
  const toolTokens = tools === '' ? 0 : await tokenizer.count(tools, signal);
  if (promptTokens === undefined || toolTokens === undefined) return undefined;
  return promptTokens + toolTokens;
}

/**
 * The non-stream answer: the simulated stream generated in full (its timing, its faults) and folded into
 * the dialect's whole-answer body. A stream that did not finish is answered as the servers answer a
 * failed generation: a 500 in the dialect's error shape.
 */
async function wholeAnswer(
  dialect: Dialect,
  stream: ReadableStream<Uint8Array>,
  model: string,
  now: () => number,
): Promise<Response> {
  const builder = new ResultBuilder();
  const decoder = new StreamDecoder(dialect, (event) => builder.add(event));
  let failure: string | undefined;
  try {
    const reader = stream.getReader();
    for (;;) {
      const next = await reader.read();
      if (next.done) break;
      decoder.feed(next.value);
    }
    decoder.end();
  } catch (error) {
    failure = (error as Error).message;
  }
  const complete = failure === undefined && decoder.state.complete;
  if (!complete) {
    const error = dialect.errorResponse({
      status: 500,
      message: `tokenwire sim: ${failure ?? builder.serverError?.message ?? 'the generation did not finish'}`,
      errorType: 'server_error',
    });
    return new Response(error.body, { status: error.status, headers: { 'content-type': error.contentType } });
  }
  const result = builder.build({ complete: true, metrics: emptyMetrics(), dialect: dialect.id });
  return Response.json(nonStreamBody(dialect.id, result, model, now()));
}

/** The most answers one simulated request may ask for (`n`): each is generated and paced in full. */
const MAX_CHOICES = 16;

/**
 * Why `n` is refused, before streaming: llama-server serves one choice only (its "Only one completion
 * choice is allowed"), and the simulator bounds the work one request can ask for.
 */
function refuseChoices(dialect: string, flavor: string, n: number | undefined): string | undefined {
  if (n === undefined || n <= 1) return undefined;
  if (dialect !== 'openai-chat' && dialect !== 'openai-completions') return undefined;
  if (flavor.startsWith('llamacpp')) return 'Only one completion choice is allowed';
  if (n > MAX_CHOICES) return `tokenwire sim: n must be at most ${MAX_CHOICES}, not ${n}`;
  return undefined;
}

/** The text token bytes spell (a character split at the end is replaced, never thrown on). */
function decodeBytes(pieces: readonly Uint8Array[]): string {
  const decoder = new TextDecoder('utf-8', { ignoreBOM: true });
  let text = '';
  for (const piece of pieces) text += decoder.decode(piece, { stream: true });
  return text + decoder.decode();
}
