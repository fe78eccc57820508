import type { Rng } from './prng.ts';

/** How fast the simulated model is. All times in milliseconds. */
export interface SimTiming {
  /** Cold start: the first request for each model name waits this long (Ollama `load_duration`). */
  loadMs: number;
  /** Prefill speed: the prompt takes `promptTokens / promptTokensPerSecond` seconds before the first token. */
  promptTokensPerSecond: number;
  /** When set, the time from request (after any load) to the first token, whatever the prompt length. */
  ttftMs?: number | undefined;
  /** Decode speed: one output token every `1000 / tokensPerSecond` ms. */
  tokensPerSecond: number;
  /** Spread of each inter-token gap, as a fraction of it (0.1 = ±10 %), drawn from the seeded PRNG. */
  jitter: number;
}

export const DEFAULT_SIM_TIMING: Readonly<SimTiming> = {
  loadMs: 0,
  promptTokensPerSecond: 2000,
  tokensPerSecond: 50,
  jitter: 0.1,
};

/** Fills in the defaults and checks the values; throws a RangeError naming the bad one. */
export function resolveTiming(timing: Partial<SimTiming> = {}): SimTiming {
  const out: SimTiming = { ...DEFAULT_SIM_TIMING };
  for (const [key, value] of Object.entries(timing) as [keyof SimTiming, number | undefined][]) {
    if (value !== undefined) out[key] = value;
  }
  check('loadMs', out.loadMs, 0);
  check('promptTokensPerSecond', out.promptTokensPerSecond, Number.MIN_VALUE);
  check('tokensPerSecond', out.tokensPerSecond, Number.MIN_VALUE);
  if (out.ttftMs !== undefined) check('ttftMs', out.ttftMs, 0);
  if (!(out.jitter >= 0 && out.jitter < 1))
    throw new RangeError(`timing.jitter must be in [0, 1), got ${out.jitter}`);
  return out;
}

/** Prefill time for a prompt: the fixed TTFT when set, else tokens over the prefill rate. */
export function promptEvalMs(timing: SimTiming, promptTokens: number): number {
  if (timing.ttftMs !== undefined) return timing.ttftMs;
  return (promptTokens / timing.promptTokensPerSecond) * 1000;
}

/** The gap before the next output token: the mean gap, spread by the jitter. */
export function tokenIntervalMs(timing: SimTiming, rng: Rng): number {
  const mean = 1000 / timing.tokensPerSecond;
  return mean * (1 + timing.jitter * (2 * rng() - 1));
}

function check(name: string, value: number, min: number): void {
  if (!(Number.isFinite(value) && value >= min)) {
    const want = min === 0 ? 'a finite number >= 0' : 'a finite positive number';
    throw new RangeError(`timing.${name} must be ${want}, got ${value}`);
  }
}
