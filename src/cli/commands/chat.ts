import type { CliIo } from '../cli-io.ts';

export const CHAT_HELP = `Usage: tokenwire chat (not implemented yet)
`;

export async function chatCommand(_argv: string[], io: CliIo): Promise<number> {
  io.stderr.write('tokenwire chat: not implemented yet\n');
  return 1;
}
