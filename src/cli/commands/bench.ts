import type { CliIo } from '../cli-io.ts';

export const BENCH_HELP = `Usage: tokenwire bench (not implemented yet)
`;

export async function benchCommand(_argv: string[], io: CliIo): Promise<number> {
  io.stderr.write('tokenwire bench: not implemented yet\n');
  return 1;
}
