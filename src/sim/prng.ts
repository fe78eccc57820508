/** A seeded pseudo-random source: returns floats in [0, 1). Not for security. */
export type Rng = () => number;

/** mulberry32: a tiny, fast 32-bit PRNG; the same seed always gives the same sequence. */
export function mulberry32(seed: number): Rng {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** FNV-1a over the UTF-16 code units of each part (parts are separated), as a 32-bit seed. */
export function hashSeed(...parts: readonly (string | number | undefined)[]): number {
  let hash = 0x811c9dc5;
  for (const part of parts) {
    const text = part === undefined ? '\u0000undefined' : String(part);
    for (let i = 0; i < text.length; i++) {
      hash ^= text.charCodeAt(i);
      hash = Math.imul(hash, 0x01000193);
    }
    hash ^= 0x1f;
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** An integer in [min, max] (both inclusive). */
export function randomInt(rng: Rng, min: number, max: number): number {
  return min + Math.floor(rng() * (max - min + 1));
}

/** Lower-case hex digits. */
export function randomHexFrom(rng: Rng, length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += Math.floor(rng() * 16).toString(16);
  return out;
}
