export type {
  EndState,
  Gateway,
  GatewayOptions,
  GatewayTelemetryOptions,
  LogLevel,
  RequestLog,
} from './create-gateway.ts';
export { createGateway } from './create-gateway.ts';
export type { GuardedGateway, GuardedHandler, GuardOptions } from './guard/guard-gateway.ts';
export { createGuardedGateway, guardGateway } from './guard/guard-gateway.ts';
export { REDACTED, SecretRedactor, upstreamSecrets } from './guard/secret-redactor.ts';
export type { ClientSignal } from './http/client-signal.ts';
export { abortSignalOf, LightClientSignal } from './http/client-signal.ts';
export type { IncomingHeaders, IncomingRequest } from './http/incoming-request.ts';
export {
  markTakesIncomingRequest,
  TAKES_INCOMING_REQUEST,
  takesIncomingRequest,
  toRequest,
} from './http/incoming-request.ts';
export type { StreamOutcome } from './observability/gateway-metrics.ts';
export { GatewayMetrics } from './observability/gateway-metrics.ts';
export type { FlushPolicy } from './relay/coalescer.ts';
export type { MemoryResumeStoreOptions } from './resume/memory-resume-store.ts';
export { MemoryResumeStore } from './resume/memory-resume-store.ts';
export type {
  ClosingStatus,
  ResumeStore,
  ResumeSubscription,
  StoredFrame,
  StoredStatus,
  StreamMeta,
} from './resume/resume-store.ts';
export {
  formatEventId,
  NoSuchEventError,
  ownerMatches,
  parseEventId,
  ResumeGapError,
} from './resume/resume-store.ts';
export type { FetchLike, Upstream } from './upstream/upstream.ts';
export { DEFAULT_UPSTREAM_TIMEOUT_MS, pickUpstreamDialect } from './upstream/upstream.ts';
