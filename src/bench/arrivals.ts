/** A seeded source of floats in [0, 1). */
export type Random = () => number;

/**
 * mulberry32: tiny and fast; the same seed gives the same arrivals, so runs can be repeated. (The
 * simulator has its own copy in sim/prng.ts: the layers may not import each other.)
 */
export function seededRandom(seed: number): Random {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A standard normal sample (Box-Muller). */
function normal(random: Random): number {
  let u = random();
  while (u <= Number.EPSILON) u = random();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random());
}

/**
 * A sample of the gamma distribution with this shape and scale (Marsaglia and Tsang, 2000; shapes
 * under 1 by the boost `G(k) = G(k + 1) * U^(1/k)`).
 */
export function gammaSample(shape: number, scale: number, random: Random): number {
  if (shape < 1) {
    let u = random();
    while (u <= Number.EPSILON) u = random();
    return gammaSample(shape + 1, scale, random) * u ** (1 / shape);
  }
  const d = shape - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  for (;;) {
    let x: number;
    let v: number;
    do {
      x = normal(random);
      v = 1 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const u = random();
    if (u < 1 - 0.0331 * x * x * x * x) return d * v * scale;
    if (Math.log(u) < 0.5 * x * x + d * (1 - v + Math.log(v))) return d * v * scale;
  }
}

/**
 * Open-loop arrival times, as vLLM's `bench serve` draws them: the gaps between requests follow a
 * gamma distribution of shape `burstiness` and mean `1 / rate`, so burstiness 1 is a Poisson process
 * (exponential gaps), under 1 is burstier and above 1 is more even (infinity: a fixed gap). A rate
 * of Infinity sends everything at once. Unlike vLLM the gaps are not rescaled to make the total come
 * out exactly at `n / rate`: a Poisson process does not, and the achieved rate is reported instead.
 */
export class ArrivalSchedule {
  readonly #rate: number;
  readonly #burstiness: number;
  readonly #random: Random;
  #next = 0;

  constructor(rate: number, burstiness: number, seed: number) {
    if (!(rate > 0)) throw new RangeError(`the request rate must be positive, got ${rate}`);
    if (!(burstiness > 0)) throw new RangeError(`burstiness must be positive, got ${burstiness}`);
    this.#rate = rate;
    this.#burstiness = burstiness;
    this.#random = seededRandom(seed);
  }

  /** The gap before the next request, in ms. */
  gapMs(): number {
    if (this.#rate === Number.POSITIVE_INFINITY) return 0;
    if (this.#burstiness === Number.POSITIVE_INFINITY) return 1000 / this.#rate;
    const scale = 1000 / (this.#rate * this.#burstiness);
    return gammaSample(this.#burstiness, scale, this.#random);
  }

  /** The next arrival, in ms from the start. The first request goes at 0. */
  next(): number {
    const at = this.#next;
    this.#next += this.gapMs();
    return at;
  }
}
