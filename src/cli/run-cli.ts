import { TokenwireError } from '../errors.ts';
import { type CliIo, styleFor, UsageError } from './cli-io.ts';
import { BENCH_HELP, benchCommand } from './commands/bench.ts';
import { CHAT_HELP, chatCommand } from './commands/chat.ts';
import { INSPECT_HELP, inspectCommand } from './commands/inspect.ts';
import { SERVE_HELP, serveCommand } from './commands/serve.ts';

const HELP = `Usage: tokenwire <command> [options]

Streaming LLM responses, correct and observable, across vLLM, llama-server, TGI and Ollama.

Commands:
  serve     Start the gateway (fronts the built-in simulated model unless --upstream is given)
  chat      Stream an answer to the terminal, with TTFT, tokens/s and how it finished
  inspect   Show a raw stream with timings, and diagnose what is wrong with it
  bench     Load-test a streaming endpoint: TTFT, ITL, TPOT, end-to-end distributions

Run "tokenwire <command> --help" for a command's options.
`;

type Command = (argv: string[], io: CliIo) => Promise<number>;

const COMMANDS: Record<string, { run: Command; help: string }> = {
  serve: { run: serveCommand, help: SERVE_HELP },
  chat: { run: chatCommand, help: CHAT_HELP },
  inspect: { run: inspectCommand, help: INSPECT_HELP },
  bench: { run: benchCommand, help: BENCH_HELP },
};

/** The whole CLI as a function of its inputs: returns the exit status (0 ok, 1 failure, 2 usage). */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '-h' || name === '--help' || name === 'help') {
    io.stdout.write(HELP);
    return name === undefined ? 2 : 0;
  }
  if (name === '--version' || name === '-v') {
    io.stdout.write('tokenwire 0.1.0\n');
    return 0;
  }
  const command = COMMANDS[name];
  const style = styleFor(io.stderr, io.env);
  if (command === undefined) {
    io.stderr.write(`${style.red('error:')} unknown command ${JSON.stringify(name)}\n\n${HELP}`);
    return 2;
  }
  try {
    return await command.run(rest, io);
  } catch (error) {
    if (error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      io.stderr.write(
        `${style.red('error:')} ${(error as Error).message}\nRun "tokenwire ${name} --help" for usage.\n`,
      );
      return 2;
    }
    const message = TokenwireError.is(error) || error instanceof Error ? error.message : String(error);
    io.stderr.write(`${style.red('error:')} ${message}\n`);
    return 1;
  }
}
