import type { DialectId } from '../../dialects/dialect.ts';
import { getDialect } from '../../dialects/registry.ts';
import { untranslatableFields } from '../../dialects/request-field-table.ts';
import { type ChatRequest, requestMessages } from '../../events/chat-request.ts';
import type { GatewayContext } from '../gateway-context.ts';
import type { AttemptFailure } from '../pool/attempt-failure.ts';
import { type Replica, UpstreamPool } from '../pool/upstream-pool.ts';
import type { AnswerSoFar } from './answer-so-far.ts';
import type { Call } from './call.ts';
import type { ReadRequest } from './read-request.ts';
import { upstreamCall } from './upstream-call.ts';

/** A continuation set up: the call to the replica that goes on, and how its events join the stream. */
export interface Continuation {
  call: Call;
  path: 'tokens' | 'prefill' | 'restart';
  /** The prefill a server may write again at the start of its answer (ContinuedEvents takes it off). */
  echo: string | undefined;
  replica: Replica;
}

/** The dialects whose servers continue a last assistant turn (wire-formats.md §15), best first. */
const PREFILL_CHAT: readonly DialectId[] = [
  'openai-chat',
  'anthropic-messages',
  'ollama-chat',
  'openai-responses',
];
/** The dialects that take a text prompt as it is: the prompt and the text so far continue it. */
const TEXT_PROMPT: readonly DialectId[] = ['openai-completions', 'llamacpp', 'tgi'];
/** Ollama's generate takes the prompt as it is only when raw (else its server applies the template). */
const RAW_TEXT_PROMPT: readonly DialectId[] = TEXT_PROMPT.concat('ollama-generate');

/**
 * How the stream's answer goes on on another replica of its model, best first (wire-formats.md §15):
 * token-exact when the failed attempt was a llama.cpp `/completion` whose every token id is known and the
 * replica speaks llama.cpp (its prompt, then the ids generated: a mixed prompt); else the text so far as
 * the assistant's last turn on a dialect whose servers continue it (vLLM's `continue_final_message`), or,
 * for a bare text prompt, the prompt followed by the text so far. Never with an instruction the user did
 * not write. Sampling stays as the client asked; the output cap is what is left of it.
 *
 * Returns why it cannot be continued instead: several choices, a tool call begun (its arguments cannot
 * be taken back, and no server gives token ids inside a structured call), reasoning without token ids
 * (no server continues a reasoning prefill as reasoning), the cap reached, or no other replica.
 */
export function continueAnswer(
  ctx: GatewayContext,
  from: Call,
  soFar: AnswerSoFar,
  failure: AttemptFailure | undefined,
  streamId: string,
): Continuation | Promise<Continuation> | string {
  if (soFar.otherChoices) return 'the answer has several choices';
  if (soFar.finished) return 'the answer had finished; only its ending was lost';
  if (soFar.toolCall) return 'the answer was in a tool call, whose arguments cannot be taken back';
  const { scope, routing, dialect } = from;
  const sent = from.target.body as Record<string, unknown>;
  const firstDialect: DialectId = from.target.dialect ?? from.dialect.id;
  const tokenPrompt = soFar.ids !== undefined && firstDialect === 'llamacpp' ? promptOf(sent) : undefined;
  if (soFar.place === 'reasoning' && tokenPrompt === undefined)
    return 'the answer was in its reasoning, and no replica can continue it token-exactly';
  const chat = routing.chat;
  const left = chat.maxTokens === undefined ? undefined : chat.maxTokens - soFar.tokens;
  if (left !== undefined && left < 1) return 'the answer had reached its output cap';
  const failed = scope.lease?.replica;
  if (failed !== undefined) routing.tried.add(failed);
  const textWays = chat.raw === true ? RAW_TEXT_PROMPT : TEXT_PROMPT;
  // The first attempt sent a bare text prompt (the client's, or chat turns rendered into one): it goes
  // on as that prompt followed by the text so far. Else it went to a chat route: the text so far is the
  // assistant's last turn.
  const sentPrompt = textWays.includes(firstDialect) ? textPromptOf(firstDialect, sent) : undefined;
  // Nothing of the answer went out yet (only its start): the request goes again as it was.
  const restart = soFar.chunks === 0;
  // Lossless, or loud: a way that cannot carry what the client sent is no way (unless it allowed drops).
  const carries = (way: DialectId | undefined): DialectId | undefined =>
    way === undefined ||
    way === dialect.id ||
    routing.dropAllowed ||
    untranslatableFields(chat, dialect.id, way).length === 0
      ? way
      : undefined;
  const wayOf = (replica: Replica): DialectId | undefined => carries(anyWayOf(replica));
  const anyWayOf = (replica: Replica): DialectId | undefined => {
    const speaks = replica.upstream.dialects;
    if (tokenPrompt !== undefined && speaks.includes('llamacpp')) return 'llamacpp';
    if (soFar.place === 'reasoning') return undefined;
    if (sentPrompt === undefined && !PREFILL_CHAT.includes(firstDialect)) return undefined;
    const ways = sentPrompt !== undefined ? textWays : PREFILL_CHAT;
    if (ways.includes(firstDialect) && speaks.includes(firstDialect)) return firstDialect;
    if (ways.includes(dialect.id) && speaks.includes(dialect.id)) return dialect.id;
    return ways.find((way) => speaks.includes(way));
  };
  const serving = ctx.pool
    .serving(routing.model, dialect.id)
    .filter((replica) => wayOf(replica) !== undefined);
  const lease = ctx.pool.acquireAmong(serving, routing.key, routing.tried);
  if (lease === undefined) return `no other replica of ${routing.model ?? 'the model'} can go on with it`;
  // The failed replica is told how its call went; the new one holds the request from now on.
  scope.lease?.release(failure?.outcome ?? 'server-error');
  if (failed !== undefined) {
    if (scope.attempts === undefined) scope.attempts = [];
    scope.attempts.push(failed.name);
  }
  scope.lease = lease;
  const replica = lease.replica;
  const upstream = replica.upstream;
  scope.upstream = upstream.name;
  const way = wayOf(replica) as DialectId;
  const upstreamDialect = getDialect(way);
  // Under the replica's own name, as routeRequest gives it (an alias; the one model it runs when none).
  const model =
    routing.model === undefined ? upstream.models?.[0] : UpstreamPool.serverModelName(replica, routing.model);
  let body: Record<string, unknown>;
  let path: Continuation['path'];
  let echo: string | undefined;
  if (restart) {
    if (way === firstDialect) {
      body = { ...sent };
      if (model !== undefined && 'model' in sent) body.model = model;
    } else {
      const extra = way === dialect.id ? chat.extra : undefined;
      body = upstreamDialect.toRequestBody(
        Object.assign({}, chat, { model, includeUsage: true, stream: true, extra }),
      );
    }
    path = 'restart';
  } else if (way === 'llamacpp' && tokenPrompt !== undefined) {
    // Spread, not Object.assign: the body may carry a client's own keys.
    body = {
      ...sent,
      prompt: [...tokenPrompt, ...(soFar.ids as number[])],
      stream: true,
    };
    if (model !== undefined && 'model' in sent) body.model = model;
    if (left !== undefined) body.n_predict = left;
    path = 'tokens';
  } else {
    const continued: ChatRequest = Object.assign({}, chat, {
      model,
      maxTokens: left,
      includeUsage: true,
      stream: true,
      extra: way === dialect.id ? chat.extra : undefined,
    });
    if (sentPrompt !== undefined) {
      continued.messages = undefined;
      continued.prompt = `${sentPrompt}${soFar.text}`;
    } else {
      continued.prompt = undefined;
      continued.messages = requestMessages(chat).concat({ role: 'assistant', content: soFar.text });
      echo = soFar.text;
    }
    body = upstreamDialect.toRequestBody(continued);
    // vLLM continues a last assistant turn only when told to; llama-server and Ollama do it unasked.
    if (way === 'openai-chat')
      Object.assign(body, { continue_final_message: true, add_generation_prompt: false });
    path = 'prefill';
  }
  const read: ReadRequest = {
    body: routing.body,
    chat,
    includePrompt: false,
    flush: routing.flush,
    upstream,
    upstreamDialect,
    lease,
    routing,
    sentBody: body,
  };
  const labels = ctx.labelSets.of(dialect.id, upstream.name);
  const setUp = upstreamCall(ctx, dialect, from.request, scope, read, labels, streamId);
  return setUp instanceof Promise
    ? setUp.then((call) => ({ call, path, echo, replica }))
    : { call: setUp, path, echo, replica };
}

/** The prompt a llama.cpp body was sent with, as the first part of a mixed prompt (text or ids). */
function promptOf(body: Record<string, unknown>): (string | number)[] | undefined {
  const prompt = body.prompt;
  if (typeof prompt === 'string') return [prompt];
  if (!Array.isArray(prompt) || prompt.length === 0) return undefined;
  if (prompt.every((part) => typeof part === 'number')) return prompt as number[];
  // One prompt of one string, or a mixed prompt (ids and strings: an earlier continuation's): as it is.
  if (prompt.length === 1 || prompt.some((part) => typeof part === 'number'))
    return prompt as (string | number)[];
  return undefined;
}

/** The text prompt a completion route's body was sent with; undefined when it is not one string. */
function textPromptOf(dialect: DialectId, body: Record<string, unknown>): string | undefined {
  let prompt = dialect === 'tgi' ? body.inputs : body.prompt;
  if (Array.isArray(prompt) && prompt.length === 1) prompt = prompt[0];
  return typeof prompt === 'string' ? prompt : undefined;
}
