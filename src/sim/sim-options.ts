import type { DialectId } from '../dialects/dialect.ts';
import type { SimTiming } from './timing.ts';

export interface SimOptions {
  /** Seeds the text, tool arguments, jitter and random splits. Default 1. */
  seed?: number | undefined;
  /** Model names listed by `/v1/models` and `/api/tags`; default `['sim']`. Any requested name is served. */
  models?: string[] | undefined;
  /** Which server each dialect imitates (an encoder flavor); per request, header `x-tokenwire-flavor`. */
  flavors?: Partial<Record<DialectId, string>> | undefined;
  timing?: Partial<SimTiming> | undefined;
  /** Server-wide fault spec (see `FAULTS`); per-request faults are added on top. */
  faults?: string | undefined;
  /** The output cap when a request sets none. Default 200. */
  defaultMaxTokens?: number | undefined;
  /** Waits; must resolve (or reject) when the signal aborts. Default: real timers. */
  sleep?: ((ms: number, signal: AbortSignal) => Promise<void>) | undefined;
  /** Clock in ms. Default `Date.now`. */
  now?: (() => number) | undefined;
}

/** Request header naming the faults for one request. */
export const FAULT_HEADER = 'x-tokenwire-fault';
/** Request header naming the encoder flavor (the imitated server) for one request. */
export const FLAVOR_HEADER = 'x-tokenwire-flavor';
