import { continuationSeam } from '../../capture/continuation-seam.ts';
import type { Analysis } from './analyze-recording.ts';
import { type Finding, finding } from './finding.ts';

// What the arrival times say: buffering on the way, inspect's own stalls, keepalive comments.

export function bufferingFinding(analysis: Analysis): Finding | undefined {
  const verdict = analysis.buffering;
  if (verdict === undefined || !verdict.buffered) return undefined;
  const share = Math.round((verdict.framesInBursts / verdict.contentFrames) * 100);
  return finding(
    'buffering',
    `${verdict.framesInBursts} of ${verdict.contentFrames} content events (${share} %) arrived in ${verdict.bursts} burst(s), after gaps of up to ${Math.round(verdict.longestBurstGapMs)} ms; ${Math.round(verdict.zeroGapShare * 100)} % of the gaps between events are zero`,
    'something between you and the model server holds the stream: nginx (proxy_buffering off, or send X-Accel-Buffering: no), a compressing load balancer or CDN, or a server that flushes late',
    { ...verdict },
  );
}

export function localStallFinding(analysis: Analysis): Finding | undefined {
  const stalls = analysis.recording.localStalls ?? [];
  const total = stalls.reduce((sum, stall) => sum + (stall.toMs - stall.fromMs), 0);
  if (total < 100) return undefined;
  const longest = Math.max(...stalls.map((stall) => stall.toMs - stall.fromMs));
  const piled = analysis.buffering?.framesInLocalBursts ?? 0;
  return finding(
    'local-stall',
    `inspect's own process was too busy to read for ${Math.round(total)} ms in all (longest ${Math.round(longest)} ms)` +
      (piled > 0 ? `; ${piled} events piled up meanwhile, which is not counted as buffering` : ''),
    'the machine running inspect is overloaded: read times near those stalls are late because of it, not the network',
    { totalMs: total, longestMs: longest, stalls: stalls.length },
  );
}

export function continuedFinding(analysis: Analysis): Finding | undefined {
  const seams = analysis.comments.flatMap((comment) => {
    const seam = continuationSeam(comment.text);
    return seam === undefined ? [] : [Object.assign({ atMs: comment.atMs }, seam)];
  });
  if (seams.length === 0) return undefined;
  const named = seams.map((seam) => `on ${seam.upstream} after ${seam.afterTokens} tokens`).join(', then ');
  return finding(
    'continued',
    `the answer was continued ${named}: its server failed mid-answer and the gateway had another replica go on, under the same stream`,
    'nothing to do: the stream is one answer; the gateway log line (continuations) says which server failed and how long the seam took',
    { seams },
  );
}

export function keepaliveFinding(analysis: Analysis): Finding | undefined {
  const comments = analysis.comments.filter((comment) => continuationSeam(comment.text) === undefined);
  if (comments.length === 0) return undefined;
  const times = comments.map((c) => c.atMs).filter((t): t is number => t !== undefined);
  const gaps = times.slice(1).map((t, i) => t - times[i]!);
  gaps.sort((a, b) => a - b);
  const median = gaps.length === 0 ? undefined : gaps[Math.floor(gaps.length / 2)]!;
  const every = median === undefined ? '' : `, about every ${Math.round(median)} ms`;
  const sample = JSON.stringify(`:${comments[0]!.text}`);
  return finding(
    'keepalive',
    `${comments.length} keepalive comment line(s) (${sample})${every}`,
    'harmless, and they keep proxies from timing out a long prefill; a client must skip comment lines (a parser that expects only data: lines breaks on them)',
    { count: comments.length, medianGapMs: median },
  );
}
