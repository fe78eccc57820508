import type { ChatMessage } from '../../events/chat-request.ts';
import type { Result } from '../../events/result.ts';
import type { CliIo, Style } from '../cli-io.ts';

/**
 * Where the REPL's lines come from, and its Ctrl-C: node:readline on a terminal (`readlineTerminal`),
 * a scripted list in tests.
 */
export interface ReplTerminal {
  /** Shows `prompt` and resolves with the next line, or undefined at the end (Ctrl-D, or Ctrl-C at the prompt). */
  nextLine(prompt: string): Promise<string | undefined>;
  /** Calls `listener` on each Ctrl-C typed while no line is asked for (an answer streams); returns its removal. */
  onInterrupt(listener: () => void): () => void;
  close(): void;
}

/** One answer, streamed and printed by the caller: `result` when a stream began, none when the request failed (said already). */
export interface ReplAnswer {
  result?: Result | undefined;
}

export interface ReplOptions {
  io: CliIo;
  terminal: ReplTerminal;
  style: Style;
  system?: string | undefined;
  model?: string | undefined;
  /** Where the answers come from (shown in the greeting). */
  target: string;
  /** Sends the conversation and prints the answer as it streams; `signal` is this answer's Ctrl-C. */
  ask(messages: ChatMessage[], model: string | undefined, signal: AbortSignal): Promise<ReplAnswer>;
}

export const REPL_HELP = `Commands:
  /system TEXT   set the system message (/system alone removes it); the conversation is kept
  /model NAME    ask another model from the next message on (/model alone shows the current one)
  /reset         forget the conversation (the system message stays)
  /quit          leave (also /exit, /bye, Ctrl-D, or Ctrl-C at the prompt)
  /help          this list
Ctrl-C while an answer streams stops it: the request is aborted, so the server stops generating.
`;

/**
 * `tokenwire chat` with no PROMPT on a terminal: a conversation. Each message is sent with the whole
 * history (system, then user and assistant turns); a finished or truncated answer joins the history,
 * a stopped or failed one does not (its user turn is dropped too, so asking again starts clean — the
 * REPL says so). Returns the exit status: 0, or 130 when the process was interrupted from outside.
 */
export async function runRepl(options: ReplOptions): Promise<number> {
  const { io, terminal, style } = options;
  let system = options.system;
  let model = options.model;
  const history: ChatMessage[] = [];
  const say = (text: string) => io.stderr.write(style.dim(text));
  say(
    `tokenwire chat: ${options.target}${model === undefined ? '' : `, model ${model}`}. /help for commands, /quit or Ctrl-D to leave.\n`,
  );
  // SIGTERM (or a second process-level SIGINT) ends the conversation between answers too.
  const outside = io.signal;
  try {
    for (;;) {
      if (outside.aborted) return 130;
      const line = await terminal.nextLine('>>> ');
      if (line === undefined || outside.aborted) {
        io.stderr.write('\n');
        return outside.aborted ? 130 : 0;
      }
      const text = line.trim();
      if (text === '') continue;
      if (text.startsWith('/')) {
        const space = text.indexOf(' ');
        const name = (space < 0 ? text : text.slice(0, space)).toLowerCase();
        const arg = space < 0 ? '' : text.slice(space + 1).trim();
        switch (name) {
          case '/quit':
          case '/exit':
          case '/bye':
            return 0;
          case '/help':
          case '/?':
            io.stderr.write(REPL_HELP);
            continue;
          case '/reset':
          case '/clear':
            history.length = 0;
            say('conversation forgotten\n');
            continue;
          case '/system':
            system = arg === '' ? undefined : arg;
            say(system === undefined ? 'system message removed\n' : 'system message set\n');
            continue;
          case '/model':
            if (arg === '') say(`model: ${model ?? '(the server default)'}\n`);
            else {
              model = arg;
              say(`model: ${model}\n`);
            }
            continue;
          default:
            io.stderr.write(`unknown command ${name}\n${REPL_HELP}`);
            continue;
        }
      }
      const messages: ChatMessage[] = [];
      if (system !== undefined) messages.push({ role: 'system', content: system });
      messages.push(...history, { role: 'user', content: line });
      const controller = new AbortController();
      const stop = () => controller.abort();
      const removeInterrupt = terminal.onInterrupt(stop);
      outside.addEventListener('abort', stop, { once: true });
      let answer: ReplAnswer;
      try {
        answer = await options.ask(messages, model, controller.signal);
      } finally {
        removeInterrupt();
        outside.removeEventListener('abort', stop);
      }
      const result = answer.result;
      if (result?.complete) {
        history.push({ role: 'user', content: line }, { role: 'assistant', content: result.text });
      } else if (result !== undefined && result.incomplete === 'aborted') {
        say('(stopped: this message and the partial answer are not kept in the conversation)\n');
      } else {
        say('(not kept in the conversation: send it again, or /model to change the model)\n');
      }
    }
  } finally {
    terminal.close();
  }
}
