import { FAULTS, type Faults, parseFaults } from '../src/sim/faults.ts';

/**
 * One line per fault in a spec, from the simulator's own table (`FAULTS`): what the person asked
 * for, in words. Throws the parser's TypeError for a bad spec. '' for no faults.
 */
export function describeFaults(spec: string): string {
  const faults: Faults = parseFaults(spec);
  const parts: string[] = [];
  for (const info of FAULTS) {
    const value = faults[info.key];
    if (value === undefined || value === false) continue;
    const shown =
      info.kind === 'flag'
        ? info.name
        : `${info.name}=${Array.isArray(value) ? value.join(',') : String(value)}`;
    parts.push(`${shown}: ${info.description}`);
  }
  return parts.join('; ');
}

/** Faults that change only bytes on the wire: the gateway decodes and re-encodes them away. */
const WIRE_LEVEL: ReadonlySet<keyof Faults> = new Set<keyof Faults>([
  'split',
  'bytewise',
  'splitUtf8',
  'keepalive',
  'noDone',
  'contentType',
  'framing',
  'buffer',
  'invalidUtf8',
]);

/** The wire-level faults of a spec (by name): they show only when the page reads the simulator's own bytes. */
export function wireLevelFaults(spec: string): string[] {
  const faults = parseFaults(spec);
  return FAULTS.filter((info) => WIRE_LEVEL.has(info.key) && faults[info.key] !== undefined).map(
    (info) => info.name,
  );
}
