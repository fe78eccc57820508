#!/usr/bin/env node
import { isatty } from 'node:tty';
import { runCli } from './run-cli.ts';

/** SIGTERM ends the process within this long, even if something keeps the event loop busy. */
const HARD_EXIT_MS = 8000;

const controller = new AbortController();
let interrupts = 0;
process.on('SIGINT', () => {
  interrupts += 1;
  // A second Ctrl-C leaves at once.
  if (interrupts > 1) process.exit(130);
  controller.abort();
});
process.on('SIGTERM', () => {
  controller.abort();
  // The command has SHUTDOWN_DEADLINE_MS to close; whatever still holds the event loop after that
  // (an open handle, a request still being read) must not keep a terminated process alive.
  setTimeout(() => process.exit(143), HARD_EXIT_MS).unref();
});

process.exitCode = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  signal: controller.signal,
  // process.stdin is created only when a command reads it (a serve never touches it).
  stdin: { isTTY: isatty(0), open: () => process.stdin },
});
