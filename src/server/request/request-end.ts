import type { DialectId } from '../../dialects/dialect.ts';
import type { ChatRequest } from '../../events/chat-request.ts';
import type { Result } from '../../events/result.ts';
import type { EndState, RequestLog } from '../observability/request-log.ts';
import type { Upstream } from '../upstream/upstream.ts';

/** How a request ended, for its log line and its span. */
export interface RequestEnd {
  route: DialectId;
  status: number;
  outcome: RequestLog['outcome'];
  upstream?: Upstream | undefined;
  upstreamDialect?: DialectId | undefined;
  chat?: ChatRequest | undefined;
  result?: Result | undefined;
  error?: unknown;
  endState?: EndState | undefined;
  ttftMs?: number | undefined;
  /** When the first content was relayed (gateway clock), for time per output token. */
  firstContentAt?: number | undefined;
  streamId?: string | undefined;
}
