import type { TimeoutOptions } from '../../client/timeouts.ts';
import type { DialectId } from '../../dialects/dialect.ts';
import type { ChatRequest } from '../../events/chat-request.ts';

/** A fetch, or any web-standard handler: called with one Request. */
export type FetchLike = (request: Request) => Promise<Response> | Response;

/** A server the gateway fronts: a real vLLM / llama-server / TGI / Ollama, or the in-process simulator. */
export interface Upstream {
  /** Shown in metrics and logs. */
  name: string;
  /** Base URL without a path, e.g. `http://127.0.0.1:8000`. */
  url: string;
  /** The dialects it speaks, best first. The gateway uses the client's own dialect when it is listed. */
  dialects: readonly DialectId[];
  /** The fetch to reach it (the simulator's handler in-process). Default: global fetch. */
  fetch?: FetchLike | undefined;
  /** Headers sent upstream, such as credentials. Never echoed to clients, logged or put in metrics. */
  headers?: Record<string, string> | undefined;
  /**
   * Models to list on /v1/models and /api/tags. When every upstream lists its models, a request naming
   * none of them gets the client's server's "model not found" (404) — unless an upstream has
   * `anyModelName`. An upstream with no list (undefined or empty) takes any name.
   */
  models?: readonly string[] | undefined;
  /**
   * The server answers any model name with the one model it runs, as llama-server (without its router)
   * and TGI do: a request naming a model no upstream lists goes to it. Default false.
   */
  anyModelName?: boolean | undefined;
  /**
   * Timeouts for the upstream call (idle, first byte…); none when undefined. `tokenwire serve` sets
   * `connectMs` and `idleMs` to DEFAULT_UPSTREAM_TIMEOUT_MS (`--upstream-timeout-ms`).
   */
  timeouts?: TimeoutOptions | undefined;
  /**
   * Its model list came from the server itself (`serve` probes it when the configuration names none):
   * the pool reads it again with its health checks (every sixth, 30 s by default), so a model loaded or
   * unloaded later is routed. Default false: `models` stays as given.
   */
  discoverModels?: boolean | undefined;
  /** Its share of the load among the replicas of a model (> 0). Default 1. */
  weight?: number | undefined;
  /** The most streams the gateway opens to it at once; beyond, another replica or a wait. Default none. */
  maxStreams?: number | undefined;
  /** Public model names served under the server's own name (`{ "chat": "qwen2.5-7b-instruct" }`). */
  aliases?: Readonly<Record<string, string>> | undefined;
}

/**
 * `tokenwire serve`'s upstream timeout: no response headers, or no event after them, for 5 minutes. Long
 * enough for a queued request's prompt processing on a busy or CPU-only server (nothing is streamed
 * until the first token), short enough that a hung upstream does not hold a client forever.
 */
export const DEFAULT_UPSTREAM_TIMEOUT_MS = 300_000;

const CHAT_DIALECTS: readonly DialectId[] = ['openai-chat', 'ollama-chat'];

/**
 * Which of the upstream's dialects to call for a request that arrived in `incoming`: the same one when
 * the upstream speaks it (no translation at all), else a chat dialect for chat turns and a completion
 * dialect for bare prompts, else the upstream's first.
 */
export function pickUpstreamDialect(
  upstream: Upstream,
  incoming: DialectId,
  request: ChatRequest,
): DialectId {
  if (upstream.dialects.includes(incoming)) return incoming;
  const chat = request.messages !== undefined && request.messages.length > 0;
  const wanted = chat ? CHAT_DIALECTS : upstream.dialects.filter((d) => !CHAT_DIALECTS.includes(d));
  return upstream.dialects.find((d) => wanted.includes(d)) ?? upstream.dialects[0]!;
}
