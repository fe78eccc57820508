import { TokenwireError } from '../errors.ts';
import { MissingPackageError, requirePackages } from '../node/optional-package.ts';
import { type CliIo, styleFor, UsageError } from './cli-io.ts';

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

/**
 * Each command is loaded when run: what one needs (the bench's hdr-histogram-js, the gateway's undici…)
 * is an optional peer dependency, and a missing one must not stop the others.
 */
const COMMANDS: Record<string, () => Promise<Command>> = {
  serve: () => import('./commands/serve.ts').then((module) => module.serveCommand),
  chat: () => import('./commands/chat.ts').then((module) => module.chatCommand),
  inspect: () => import('./commands/inspect.ts').then((module) => module.inspectCommand),
  bench: () => import('./commands/bench.ts').then((module) => module.benchCommand),
};

/** Optional packages a command needs to load at all (the bench's histograms and its upstream fetch). */
const COMMAND_PACKAGES: Record<string, readonly string[]> = { bench: ['hdr-histogram-js', 'undici'] };

/** A package the loader could not find (`Cannot find package 'x' imported from …`), by name. */
function missingPackageName(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  if (code !== 'ERR_MODULE_NOT_FOUND') return undefined;
  return /Cannot find package '([^']+)'/.exec(String((error as Error).message))?.[1];
}

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
    let run: Command;
    try {
      run = await command();
    } catch (error) {
      const missing = missingPackageName(error);
      if (missing === undefined) throw error;
      // Name every package the command needs that is missing, so one install command does.
      requirePackages(COMMAND_PACKAGES[name] ?? [], `tokenwire ${name}`);
      throw new MissingPackageError(missing, `tokenwire ${name}`, error);
    }
    return await run(rest, io);
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
