import type { ChatRequest } from '../../events/chat-request.ts';
import type { Lease, Replica } from '../pool/upstream-pool.ts';
import type { FlushPolicy } from '../relay/coalescer.ts';

/** What routing a read request needs, kept for a retry on another replica (read-request.ts `routeRequest`). */
export interface Routing {
  /** The model the client named (an alias is resolved per replica). */
  model: string | undefined;
  /** The conversation's key, for prefix-affine balancing. */
  key: string | undefined;
  dropAllowed: boolean;
  /** The client's body and its normalized request as read, before any replica's model name. */
  body: Record<string, unknown>;
  chat: ChatRequest;
  includePrompt: boolean;
  flush: FlushPolicy | undefined;
  /** The replicas this request went to and that failed before its first byte. */
  tried: Set<Replica>;
  /** The next replica's lease, taken when an attempt failed (end-request.ts `upstreamFailed`). */
  next?: Lease | undefined;
}
