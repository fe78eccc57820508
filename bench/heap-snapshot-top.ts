/**
 * Aggregates a `.heapsnapshot` by constructor / node name: count and self size, largest first. Used to
 * see what each idle gateway stream holds (`gateway-overhead.js --heap-snapshot-dir <dir>`).
 * Usage: `node .build/bench/heap-snapshot-top.js file.heapsnapshot [--top 40] [--per 1000]`
 */
import { readFileSync } from 'node:fs';

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: (string[] | string)[] } };
  nodes: number[];
  strings: string[];
}

if (process.argv[1]?.endsWith('heap-snapshot-top.js')) {
  const argv = process.argv.slice(2);
  const file = argv[0];
  if (file === undefined) {
    console.error('usage: heap-snapshot-top.js file.heapsnapshot [--top N] [--per streams]');
    process.exit(2);
  }
  const option = (name: string, fallback: number) => {
    const at = argv.indexOf(name);
    return at === -1 ? fallback : Number(argv[at + 1]);
  };
  const top = option('--top', 40);
  const per = option('--per', 1);
  const snap = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
  const fields = snap.snapshot.meta.node_fields;
  const types = snap.snapshot.meta.node_types[0] as string[];
  const width = fields.length;
  const typeAt = fields.indexOf('type');
  const nameAt = fields.indexOf('name');
  const sizeAt = fields.indexOf('self_size');
  const groups = new Map<string, { count: number; size: number }>();
  let total = 0;
  for (let i = 0; i < snap.nodes.length; i += width) {
    const type = types[snap.nodes[i + typeAt]!]!;
    const name =
      type === 'object' || type === 'closure' ? snap.strings[snap.nodes[i + nameAt]!]! : `(${type})`;
    const size = snap.nodes[i + sizeAt]!;
    const key = `${type === 'closure' ? 'closure ' : ''}${name}`;
    const group = groups.get(key) ?? { count: 0, size: 0 };
    group.count += 1;
    group.size += size;
    groups.set(key, group);
    total += size;
  }
  console.log(
    `total ${(total / 1e6).toFixed(1)} MB${per > 1 ? `; per-stream columns divide by ${per}` : ''}`,
  );
  for (const [name, g] of [...groups.entries()].sort((a, b) => b[1].size - a[1].size).slice(0, top)) {
    const perStream =
      per > 1
        ? `  ${(g.count / per).toFixed(1).padStart(7)}/stream ${(g.size / per).toFixed(0).padStart(7)} B/stream`
        : '';
    console.log(
      `${(g.size / 1024).toFixed(0).padStart(9)} KiB ${String(g.count).padStart(8)}  ${name.slice(0, 60)}${perStream}`,
    );
  }
}
