/**
 * Stream ids must be unguessable (a Last-Event-ID replays the stream to whoever knows it): 72 random
 * bits each, drawn from a pool refilled 4 KiB at a time rather than one getRandomValues call per stream.
 */
let randomPool = new Uint8Array(0);
let randomAt = 0;
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

export function randomStreamId(): string {
  if (randomAt + 9 > randomPool.length) {
    randomPool = crypto.getRandomValues(new Uint8Array(4096));
    randomAt = 0;
  }
  // Joined, not `+=`: a `+=` chain leaves a rope of 8 cons strings that every open stream holds.
  const parts: string[] = [];
  for (let i = 0; i < 9; i++) parts.push(HEX[randomPool[randomAt + i]!]!);
  randomAt += 9;
  return parts.join('');
}

/**
 * A stream id as records outside the gateway show it (span attributes, info-level logs): its first 6
 * characters and `…` — enough to tell streams apart, never enough to resume one (the whole id is the
 * key to a Last-Event-ID replay when the gateway has no API keys).
 */
export function abbreviatedStreamId(streamId: string): string {
  return `${streamId.slice(0, 6)}…`;
}
