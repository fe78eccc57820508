import type { LocalStall } from '../../capture/recording.ts';

/** A content-carrying frame: when it was whole, and in which read. */
export interface TimedFrame {
  atMs: number;
  read: number;
}

export interface BufferingVerdict {
  buffered: boolean;
  contentFrames: number;
  /** Reads that completed at least one content frame. */
  arrivals: number;
  /** Reads that released a burst of held-back frames after a gap (not explained by a local stall). */
  bursts: number;
  framesInBursts: number;
  /** Bursts whose gap inspect's own stalled process explains (not held back by the network). */
  localBursts: number;
  framesInLocalBursts: number;
  /** The longest gap before a burst, ms. */
  longestBurstGapMs: number;
  /** Share of gaps between consecutive content frames that are zero (same read). */
  zeroGapShare: number;
  /** What a frame takes on average over the stream, ms. */
  meanFrameMs: number;
}

/** Fewer content frames than this say too little about pacing to judge. */
export const BUFFERING_MIN_FRAMES = 8;
/** A gap a reader notices (and far longer than any network coalescing of a token stream). */
export const BURST_GAP_MS = 50;
/** Frames released at once that make a burst (llama-server sends two at the start on its own). */
export const BURST_MIN_FRAMES = 3;
/** The first read after the headers must hold more to count: prefill explains a long wait, not a pile. */
export const FIRST_BURST_MIN_FRAMES = 5;

/**
 * Buffering is what a proxy (nginx `proxy_buffering`, a compressing load balancer) does to a stream:
 * it holds the events and releases them in bursts, so the reader sees nothing for a while, then many
 * events in one read. A burst is a read that completes at least 3 content frames after a gap of at
 * least 50 ms and at least 4 times the stream's mean time per frame (so a slow but smooth stream, or
 * a fast one whose frames the network coalesced, is not one). The stream counts as buffered when
 * bursts carry at least 75 % of its content frames (90 % when there is one burst: the whole answer
 * held to the end). A proxy buffers everything, so nearly every frame comes in a burst; a client or
 * server that merely stalled now and then (a GC pause) piles up far fewer.
 *
 * A gap that inspect's own process spent stalled (`stalls`, measured by the capture) is the reader's
 * doing, not the network's: such bursts are counted apart and left out of the verdict.
 */
export function detectBuffering(
  frames: readonly TimedFrame[],
  headersAtMs: number | undefined,
  stalls: readonly LocalStall[] = [],
): BufferingVerdict | undefined {
  const n = frames.length;
  if (n < BUFFERING_MIN_FRAMES) return undefined;
  const arrivals: { read: number; atMs: number; frames: number }[] = [];
  let zeroGaps = 0;
  for (let i = 0; i < n; i++) {
    const frame = frames[i]!;
    const last = arrivals.at(-1);
    if (last !== undefined && last.read === frame.read) last.frames += 1;
    else arrivals.push({ read: frame.read, atMs: frame.atMs, frames: 1 });
    if (i > 0 && frame.atMs - frames[i - 1]!.atMs <= 0) zeroGaps += 1;
  }
  const meanFrameMs = (frames[n - 1]!.atMs - frames[0]!.atMs) / (n - 1);
  const threshold = Math.max(BURST_GAP_MS, 4 * meanFrameMs);
  let bursts = 0;
  let framesInBursts = 0;
  let localBursts = 0;
  let framesInLocalBursts = 0;
  let longestBurstGapMs = 0;
  for (let j = 0; j < arrivals.length; j++) {
    const arrival = arrivals[j]!;
    const previous = j === 0 ? headersAtMs : arrivals[j - 1]!.atMs;
    if (previous === undefined) continue;
    const gap = arrival.atMs - previous;
    const minFrames = j === 0 ? FIRST_BURST_MIN_FRAMES : BURST_MIN_FRAMES;
    if (arrival.frames < minFrames || gap < threshold) continue;
    if (stalledFor(stalls, previous, arrival.atMs) >= gap / 2) {
      localBursts += 1;
      framesInLocalBursts += arrival.frames;
      continue;
    }
    bursts += 1;
    framesInBursts += arrival.frames;
    longestBurstGapMs = Math.max(longestBurstGapMs, gap);
  }
  const judged = n - framesInLocalBursts;
  const buffered =
    bursts >= 2 ? framesInBursts >= 0.75 * judged : bursts === 1 && framesInBursts >= 0.9 * judged;
  return {
    buffered,
    contentFrames: n,
    arrivals: arrivals.length,
    bursts,
    framesInBursts,
    localBursts,
    framesInLocalBursts,
    longestBurstGapMs,
    zeroGapShare: zeroGaps / (n - 1),
    meanFrameMs,
  };
}

/** How much of [from, to] inspect's process spent stalled. */
function stalledFor(stalls: readonly LocalStall[], from: number, to: number): number {
  let total = 0;
  for (const stall of stalls) total += Math.max(0, Math.min(to, stall.toMs) - Math.max(from, stall.fromMs));
  return total;
}
