import type { DialectId } from '../dialects/dialect.ts';
import type { SimTiming } from './timing.ts';

export interface SimOptions {
  /** Seeds the text, tool arguments, jitter and random splits. Default 1. */
  seed?: number | undefined;
  /**
   * Model names listed by `/v1/models` and `/api/tags`; default `['sim']`. When given, other names get the
   * dialect's "model not found" (404) — except on llama-server's `/completion` and TGI, which serve any
   * name; when not given, any requested name is served. A `@faults` suffix is not part of the name.
   */
  models?: string[] | undefined;
  /** Which server each dialect imitates (an encoder flavor); per request, header `x-tokenwire-flavor`. */
  flavors?: Partial<Record<DialectId, string>> | undefined;
  timing?: Partial<SimTiming> | undefined;
  /** Server-wide fault spec (see `FAULTS`); per-request faults are added on top. */
  faults?: string | undefined;
  /**
   * The context length in tokens: a longer prompt gets the imitated server's "exceeds the context" error
   * before any streaming. Default 32768.
   */
  contextTokens?: number | undefined;
  /** The output cap when a request sets none. Default 200. */
  defaultMaxTokens?: number | undefined;
  /**
   * With a split fault (`split`, `bytewise`, `split-utf8`), this many ms of real time between the pieces,
   * so each crosses the network as a read of its own (written at once they leave as one packet). Default
   * 0 (no pause: in-process tests read each piece anyway); `tokenwire serve` uses 2.
   */
  splitGapMs?: number | undefined;
  /** Waits; must resolve (or reject) when the signal aborts. Default: real timers. */
  sleep?: ((ms: number, signal: AbortSignal) => Promise<void>) | undefined;
  /** Clock in ms. Default `Date.now`. */
  now?: (() => number) | undefined;
}

/** Request header naming the faults for one request. */
export const FAULT_HEADER = 'x-tokenwire-fault';
/** Request header naming the encoder flavor (the imitated server) for one request. */
export const FLAVOR_HEADER = 'x-tokenwire-flavor';
