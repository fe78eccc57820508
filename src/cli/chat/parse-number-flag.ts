import { UsageError } from '../cli-io.ts';

/**
 * A number from a flag's text, or a usage error naming the flag: `whole` (an integer >= 0),
 * `positive` (> 0) or `finite` (any number).
 */
export function parseNumberFlag(value: string, flag: string, kind: 'whole' | 'positive' | 'finite'): number {
  const n = Number(value);
  const ok =
    value.trim() !== '' &&
    Number.isFinite(n) &&
    (kind === 'finite' || (kind === 'positive' ? n > 0 : Number.isInteger(n) && n >= 0));
  if (!ok) {
    const want = kind === 'whole' ? 'a whole number' : kind === 'positive' ? 'a positive number' : 'a number';
    throw new UsageError(`${flag} needs ${want}, got ${JSON.stringify(value)}`);
  }
  return n;
}
