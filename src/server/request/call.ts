import type { StreamRequest } from '../../client/build-request.ts';
import type { StreamOptions } from '../../client/run-stream.ts';
import type { Dialect } from '../../dialects/dialect.ts';
import type { ChatRequest } from '../../events/chat-request.ts';
import type { Scope } from '../gateway-context.ts';
import type { IncomingRequest } from '../http/incoming-request.ts';
import type { Upstream } from '../upstream/upstream.ts';
import type { RequestEnd } from './request-end.ts';
import type { Routing } from './routing.ts';

/**
 * A generation request, read, mapped and routed, with its upstream call set up: what answering it
 * (relay-stream.ts, answer-whole.ts) reads. The request's state lives here and in its `Scope`.
 */
export interface Call {
  dialect: Dialect;
  request: IncomingRequest;
  scope: Scope;
  chat: ChatRequest;
  upstream: Upstream;
  labels: Readonly<Record<string, string>>;
  /** The upstream request, as runStream takes it. */
  target: StreamRequest;
  runOptions: StreamOptions;
  /** What every log line of this request carries. */
  base: Pick<RequestEnd, 'route' | 'upstream' | 'upstreamDialect' | 'chat'>;
  upstreamAbort: AbortController;
  /** The client's body as it came (less the gateway's own extensions): what a same-dialect upstream gets. */
  clientBody: Record<string, unknown>;
  /** What routing the request again needs (another replica, before the first byte). */
  routing: Routing;
}
