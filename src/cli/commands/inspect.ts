import type { CliIo } from '../cli-io.ts';

export const INSPECT_HELP = `Usage: tokenwire inspect (not implemented yet)
`;

export async function inspectCommand(_argv: string[], io: CliIo): Promise<number> {
  io.stderr.write('tokenwire inspect: not implemented yet\n');
  return 1;
}
