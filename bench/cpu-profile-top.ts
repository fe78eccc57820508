/**
 * Prints the top self-time functions of a `.cpuprofile` (from `node --cpu-prof`), optionally only the
 * samples under a function whose name contains a filter (e.g. the subject's `run`).
 * Usage: `node .build/bench/cpu-profile-top.js file.cpuprofile [--top 30] [--under name]`
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface TopEntry {
  name: string;
  selfMs: number;
  share: number;
}

/** Self time per function (name + file:line), largest first. */
export function topSelfTime(profile: Profile, under?: string): { total: number; entries: TopEntry[] } {
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const node of profile.nodes) {
    byId.set(node.id, node);
    for (const child of node.children ?? []) parent.set(child, node.id);
  }
  const inside = new Map<number, boolean>();
  const isInside = (id: number): boolean => {
    if (under === undefined) return true;
    const known = inside.get(id);
    if (known !== undefined) return known;
    const node = byId.get(id)!;
    const up = parent.get(id);
    const result = node.callFrame.functionName.includes(under) || (up !== undefined && isInside(up));
    inside.set(id, result);
    return result;
  };
  const self = new Map<string, number>();
  let total = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i]!;
    if (!isInside(id)) continue;
    const node = byId.get(id)!;
    const frame = node.callFrame;
    const file = frame.url.replace(/^.*\/(node_modules\/|\.build\/)/, '$1');
    const name = `${frame.functionName || '(anonymous)'} ${file}:${frame.lineNumber + 1}`;
    const dt = (profile.timeDeltas[i] ?? 0) / 1000;
    self.set(name, (self.get(name) ?? 0) + dt);
    total += dt;
  }
  const entries = [...self.entries()]
    .map(([name, selfMs]) => ({ name, selfMs, share: selfMs / total }))
    .sort((a, b) => b.selfMs - a.selfMs);
  return { total, entries };
}

if (process.argv[1]?.endsWith('cpu-profile-top.js')) {
  const argv = process.argv.slice(2);
  const file = argv[0];
  if (file === undefined) {
    console.error('usage: cpu-profile-top.js file.cpuprofile [--top N] [--under name]');
    process.exit(2);
  }
  const topAt = argv.indexOf('--top');
  const top = topAt === -1 ? 30 : Number(argv[topAt + 1]);
  const underAt = argv.indexOf('--under');
  const under = underAt === -1 ? undefined : argv[underAt + 1];
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const { total, entries } = topSelfTime(profile, under);
  console.log(`total ${total.toFixed(0)} ms${under === undefined ? '' : ` under ${under}`}`);
  for (const entry of entries.slice(0, top)) {
    console.log(
      `${entry.selfMs.toFixed(1).padStart(9)} ms ${(entry.share * 100).toFixed(1).padStart(5)}%  ${entry.name}`,
    );
  }
}
