export type { ClientSignal } from './client-signal.ts';
export { abortSignalOf, LightClientSignal } from './client-signal.ts';
export type { FlushPolicy } from './coalescer.ts';
export type {
  EndState,
  Gateway,
  GatewayOptions,
  GatewayTelemetryOptions,
  LogLevel,
  RequestLog,
} from './create-gateway.ts';
export { createGateway } from './create-gateway.ts';
export type { StreamOutcome } from './gateway-metrics.ts';
export { GatewayMetrics } from './gateway-metrics.ts';
export type { GuardedGateway, GuardedHandler, GuardOptions } from './guard-gateway.ts';
export { createGuardedGateway, guardGateway } from './guard-gateway.ts';
export type { IncomingHeaders, IncomingRequest } from './incoming-request.ts';
export {
  markTakesIncomingRequest,
  TAKES_INCOMING_REQUEST,
  takesIncomingRequest,
  toRequest,
} from './incoming-request.ts';
export type { MemoryResumeStoreOptions } from './memory-resume-store.ts';
export { MemoryResumeStore } from './memory-resume-store.ts';
export type {
  ClosingStatus,
  ResumeStore,
  ResumeSubscription,
  StoredFrame,
  StoredStatus,
  StreamMeta,
} from './resume-store.ts';
export {
  formatEventId,
  NoSuchEventError,
  ownerMatches,
  parseEventId,
  ResumeGapError,
} from './resume-store.ts';
export { REDACTED, SecretRedactor, upstreamSecrets } from './secret-redactor.ts';
export type { FetchLike, Upstream } from './upstream.ts';
export { DEFAULT_UPSTREAM_TIMEOUT_MS, pickUpstreamDialect } from './upstream.ts';
