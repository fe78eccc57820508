import type { GatewayMetrics } from '../observability/gateway-metrics.ts';

/** What the guard checks before a request reaches the handler behind it (guard-gateway.ts, guard-admission.ts). */
export interface GuardOptions {
  /**
   * API keys a client may present (`Authorization: Bearer <key>` or `X-API-Key: <key>`), any of them.
   * None (the default): no key is asked for. Compared in constant time.
   */
  apiKeys?: readonly string[] | undefined;
  /**
   * Generation requests (streamed or not, resumes included) served at once; one more gets a 429 with
   * `Retry-After`, in its dialect's error shape. Default: no limit.
   */
  maxStreams?: number | undefined;
  /**
   * Where the `maxStreams` slots are counted when several processes share the limit (`serve --workers`:
   * the primary holds the count). Default: this guard's own count.
   */
  streamSlots?: StreamSlots | undefined;
  /** `Retry-After` seconds on that 429. Default 1. */
  retryAfterSeconds?: number | undefined;
  /**
   * Browser origins (`https://host[:port]`, exact) allowed to call the API from another origin. Default
   * none: CORS is off, and a cross-origin API request (it carries an `Origin` that is not the gateway's
   * own) gets a 403, so a web page cannot make the gateway spend upstream time for it.
   */
  corsOrigins?: readonly string[] | undefined;
  /**
   * Host names the gateway answers to (DNS rebinding: a page on a domain that resolves to the gateway's
   * address sends that domain as `Host`). Compared without the port, case-insensitively; `[::1]` for
   * IPv6; `*` allows any. Any other `Host` (or absolute-form target authority) gets a 421 before
   * routing, on every path. Default: any host.
   */
  allowedHosts?: readonly string[] | undefined;
  /** Values never to reach a client (upstream credentials): replaced in every response body. */
  secrets?: readonly string[] | undefined;
  /** Counts refusals in `tokenwire_rejected_total{route,status}`. */
  metrics?: GatewayMetrics | undefined;
}

/** A shared count of stream slots: `acquire` says whether one was free (and takes it). */
export interface StreamSlots {
  acquire(): boolean | Promise<boolean>;
  release(): void;
}
