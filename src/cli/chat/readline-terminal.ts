import { createInterface } from 'node:readline';
import type { ReplTerminal } from './chat-repl.ts';

/**
 * The REPL's terminal on node:readline: line editing and the up-arrow history of what was typed.
 * readline keeps the terminal in raw mode, so Ctrl-C arrives as its `SIGINT` event, not as a signal:
 * at the prompt it ends the REPL, while an answer streams it goes to the `onInterrupt` listeners (the
 * answer's abort). Lines typed while an answer streams wait for the next prompt. Shown on the
 * terminal by hand (tmux); test/cli/chat-repl.test.ts drives it over streams.
 */
export function readlineTerminal(input: NodeJS.ReadableStream, output: NodeJS.WritableStream): ReplTerminal {
  const rl = createInterface({ input, output, terminal: true, historySize: 200 });
  const typedAhead: string[] = [];
  const interrupts = new Set<() => void>();
  let waiting: ((line: string | undefined) => void) | undefined;
  let closed = false;
  const answer = (line: string | undefined) => {
    const resolve = waiting;
    waiting = undefined;
    resolve?.(line);
  };
  rl.on('line', (line) => {
    if (waiting !== undefined) answer(line);
    else typedAhead.push(line);
  });
  // A Ctrl-C between an answer's end and the next prompt is one at the prompt: it leaves.
  let leaving = false;
  rl.on('SIGINT', () => {
    if (waiting !== undefined) {
      output.write('^C\n');
      answer(undefined);
      return;
    }
    if (interrupts.size === 0) leaving = true;
    for (const listener of interrupts) listener();
  });
  rl.on('close', () => {
    closed = true;
    answer(undefined);
  });
  return {
    nextLine(prompt) {
      if (leaving || closed) return Promise.resolve(undefined);
      const ahead = typedAhead.shift();
      if (ahead !== undefined) return Promise.resolve(ahead);
      rl.setPrompt(prompt);
      rl.prompt();
      return new Promise((resolve) => {
        waiting = resolve;
      });
    },
    onInterrupt(listener) {
      interrupts.add(listener);
      return () => interrupts.delete(listener);
    },
    close() {
      if (!closed) rl.close();
    },
  };
}
