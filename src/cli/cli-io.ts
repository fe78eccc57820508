/** What a command may touch: its streams, environment and an abort signal (Ctrl-C). */
export interface CliIo {
  stdout: { write(text: string): unknown; isTTY?: boolean | undefined; columns?: number | undefined };
  stderr: { write(text: string): unknown; isTTY?: boolean | undefined };
  env: Record<string, string | undefined>;
  /** Fires on SIGINT (Ctrl-C). */
  signal: AbortSignal;
  /**
   * Standard input, for the commands that read it (`chat` with no PROMPT): whether it is a terminal,
   * and the stream, opened only when read. Absent: there is none (in-process callers).
   */
  stdin?: { isTTY: boolean; open(): NodeJS.ReadableStream } | undefined;
}

export interface Style {
  bold(text: string): string;
  dim(text: string): string;
  red(text: string): string;
  yellow(text: string): string;
  green(text: string): string;
  cyan(text: string): string;
}

/** Colours only on a terminal, and never when NO_COLOR is set (https://no-color.org). */
export function styleFor(
  stream: { isTTY?: boolean | undefined },
  env: Record<string, string | undefined>,
): Style {
  const on =
    stream.isTTY === true && (env.NO_COLOR === undefined || env.NO_COLOR === '') && env.TERM !== 'dumb';
  const wrap = (open: number, close: number) => (text: string) =>
    on ? `\u001b[${open}m${text}\u001b[${close}m` : text;
  return {
    bold: wrap(1, 22),
    dim: wrap(2, 22),
    red: wrap(31, 39),
    yellow: wrap(33, 39),
    green: wrap(32, 39),
    cyan: wrap(36, 39),
  };
}

/** A usage error: printed with the command's help hint, exit status 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}
