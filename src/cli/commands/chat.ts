import { parseArgs } from 'node:util';
import { HttpError, RequestFailedError } from '../../client/client-errors.ts';
import { stream } from '../../client/token-stream.ts';
import { DIALECT_IDS, type DialectId } from '../../dialects/dialect.ts';
import { getDialect, isDialectId } from '../../dialects/registry.ts';
import { TokenwireError } from '../../errors.ts';
import type { ChatMessage, ChatRequest } from '../../events/chat-request.ts';
import type { Result } from '../../events/result.ts';
import type { StreamEvent } from '../../events/stream-event.ts';
import { requirePackages } from '../../node/optional-package.ts';
import type { FetchLike } from '../../server/upstream.ts';
import { createSim } from '../../sim/create-sim.ts';
import { parseFaults } from '../../sim/faults.ts';
import { FAULT_HEADER } from '../../sim/sim-options.ts';
import { CHAT_EXIT, chatFooter, chatOutcome } from '../chat/chat-outcome.ts';
import { parseHeaders } from '../chat/parse-headers.ts';
import { parseNumberFlag } from '../chat/parse-number-flag.ts';
import { resolveEndpoint } from '../chat/resolve-endpoint.ts';
import { type CliIo, styleFor, UsageError } from '../cli-io.ts';
import { connectionFailure } from '../probe-upstream.ts';

export const CHAT_HELP = `Usage: tokenwire chat [URL] PROMPT [options]

Streams an answer to the terminal as it arrives, then a footer with the time to first token, tokens
per second (the server's own decode timing when it reports one, else measured after the first token),
output tokens and how the answer ended. A cut-off answer (finish "length") and an
incomplete one (connection lost, idle timeout, server error, malformed stream) are marked as such,
never shown as finished. Ctrl-C cancels: the connection is closed, so the server stops generating.

With no URL the built-in simulated model answers (no server, no weights).

URL is an endpoint (http://localhost:8000/v1/chat/completions, http://localhost:8080/v1/messages,
http://localhost:8000/v1/responses, http://localhost:11434/api/chat, http://localhost:8080/completion,
http://localhost:3000/generate_stream ...) whose path names the dialect, or a bare server address
(http://localhost:11434), which is probed for its chat endpoint.

Options:
  --dialect D              Force the dialect: ${DIALECT_IDS.join(', ')}
  --model NAME             Model name (default: the first one the server lists; "sim" for the simulator)
  --system TEXT            A system message before the prompt
  --max-tokens N           Output cap (max_tokens, max_output_tokens, num_predict, n_predict,
                           max_new_tokens); a Responses answer that says "completed" with as many
                           output tokens as the cap (llama-server) counts as truncated
  --temperature T          Sampling temperature
  --stop S                 Stop string (repeatable)
  --header 'K: V'          Request header, e.g. 'Authorization: Bearer ...' (repeatable; never printed)
  --timeout-ms N           Give up after N ms in all
  --idle-timeout-ms N      Give up when no event arrives for N ms (default 120000; 0 = never)
  --connect-timeout-ms N   Give up when no response headers arrive within N ms
  --sim-faults SPEC        Simulator faults (see "tokenwire serve --help"); with a URL, sent as the
                           ${FAULT_HEADER} header (a tokenwire gateway or simulator honours it)
  --sim-tps N              Built-in simulator: tokens per second (default 50)
  --sim-ttft-ms N          Built-in simulator: time to first token in ms
  --sim-seed N             Built-in simulator: text seed
  --json                   Write the normalized events as NDJSON on stdout (one per line), then a
                           final {"type":"result",...} line; no footer
  -h, --help               Show this help

Output: the answer on stdout (reasoning dimmed on stderr); the footer on stderr.
Exit status: 0 finished; 1 the request failed before any answer (HTTP error, refused connection);
2 usage error; 3 incomplete (connection lost, idle timeout, server error, malformed stream);
4 truncated (finish "length": max_tokens, response.incomplete, the cap reached); 130 cancelled
with Ctrl-C.
`;

const DEFAULT_IDLE_TIMEOUT_MS = 120_000;

export async function chatCommand(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      dialect: { type: 'string' },
      model: { type: 'string' },
      system: { type: 'string' },
      'max-tokens': { type: 'string' },
      temperature: { type: 'string' },
      stop: { type: 'string', multiple: true },
      header: { type: 'string', multiple: true },
      'timeout-ms': { type: 'string' },
      'idle-timeout-ms': { type: 'string' },
      'connect-timeout-ms': { type: 'string' },
      'sim-faults': { type: 'string' },
      'sim-tps': { type: 'string' },
      'sim-ttft-ms': { type: 'string' },
      'sim-seed': { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    allowPositionals: true,
    strict: true,
  });
  if (values.help) {
    io.stdout.write(CHAT_HELP);
    return 0;
  }
  if (positionals.length === 0) throw new UsageError('chat needs a PROMPT (and optionally a URL before it)');
  if (positionals.length > 2)
    throw new UsageError(
      'chat takes [URL] PROMPT; quote a prompt that has spaces: tokenwire chat "a prompt"',
    );
  const [first, second] = positionals as [string, string | undefined];
  const target = second === undefined ? undefined : first;
  const prompt = second ?? first;
  if (target === undefined && /^https?:\/\//i.test(prompt))
    throw new UsageError('chat needs a PROMPT after the URL');

  const headers = parseHeaders(values.header);
  if (values['sim-faults'] !== undefined) {
    try {
      parseFaults(values['sim-faults']);
    } catch (error) {
      throw new UsageError(`--sim-faults: ${(error as Error).message}`);
    }
  }

  let fetchFn: FetchLike;
  let url: string;
  let dialectId: DialectId;
  let model: string | undefined;
  if (target === undefined) {
    const timing: { tokensPerSecond?: number; ttftMs?: number } = {};
    if (values['sim-tps'] !== undefined)
      timing.tokensPerSecond = parseNumberFlag(values['sim-tps'], '--sim-tps', 'positive');
    if (values['sim-ttft-ms'] !== undefined)
      timing.ttftMs = parseNumberFlag(values['sim-ttft-ms'], '--sim-ttft-ms', 'whole');
    requirePackages(
      ['gpt-tokenizer/encoding/cl100k_base'],
      'The built-in simulated model (chat without a URL)',
    );
    const sim = createSim({
      timing,
      faults: values['sim-faults'],
      seed:
        values['sim-seed'] === undefined
          ? undefined
          : parseNumberFlag(values['sim-seed'], '--sim-seed', 'whole'),
    });
    fetchFn = sim.fetch;
    if (values.dialect !== undefined && !isDialectId(values.dialect))
      throw new UsageError(`unknown dialect ${JSON.stringify(values.dialect)}`);
    dialectId = (values.dialect as DialectId | undefined) ?? 'openai-chat';
    url = `http://sim.tokenwire.internal${getDialect(dialectId).paths[0]}`;
    model = values.model ?? 'sim';
  } else {
    for (const flag of ['sim-tps', 'sim-ttft-ms', 'sim-seed'] as const) {
      if (values[flag] !== undefined)
        throw new UsageError(`--${flag} only applies to the built-in simulator (no URL)`);
    }
    if (values['sim-faults'] !== undefined) headers[FAULT_HEADER] = values['sim-faults'];
    fetchFn = (request) => fetch(request);
    const endpoint = await resolveEndpoint({
      url: target,
      dialect: values.dialect,
      model: values.model,
      headers,
      fetch: fetchFn,
      findModel: true,
    });
    if (endpoint.dialect === undefined) {
      throw new UsageError(
        `cannot tell the dialect of ${endpoint.url} from its path; pass --dialect (${DIALECT_IDS.join(', ')})`,
      );
    }
    url = endpoint.url;
    dialectId = endpoint.dialect;
    model = endpoint.model;
  }

  const messages: ChatMessage[] = [];
  if (values.system !== undefined) messages.push({ role: 'system', content: values.system });
  messages.push({ role: 'user', content: prompt });
  // Usage asked for so the footer can give the server's own token count instead of an estimate.
  const request: ChatRequest = { messages, includeUsage: true };
  if (model !== undefined) request.model = model;
  if (values['max-tokens'] !== undefined)
    request.maxTokens = parseNumberFlag(values['max-tokens'], '--max-tokens', 'whole');
  if (values.temperature !== undefined)
    request.temperature = parseNumberFlag(values.temperature, '--temperature', 'finite');
  if (values.stop !== undefined && values.stop.length > 0) request.stop = values.stop;

  const idleMs =
    values['idle-timeout-ms'] === undefined
      ? DEFAULT_IDLE_TIMEOUT_MS
      : parseNumberFlag(values['idle-timeout-ms'], '--idle-timeout-ms', 'whole');
  const timeouts: { idleMs?: number; totalMs?: number; connectMs?: number } = {};
  if (idleMs > 0) timeouts.idleMs = idleMs;
  if (values['timeout-ms'] !== undefined)
    timeouts.totalMs = parseNumberFlag(values['timeout-ms'], '--timeout-ms', 'positive');
  if (values['connect-timeout-ms'] !== undefined)
    timeouts.connectMs = parseNumberFlag(values['connect-timeout-ms'], '--connect-timeout-ms', 'positive');

  const printer = values.json ? new JsonPrinter(io) : new TerminalPrinter(io);
  const answer = stream(
    { url, dialect: dialectId, request, headers },
    { fetch: fetchFn, signal: io.signal, timeouts },
  );
  printer.waiting();
  let result: Result;
  try {
    for await (const event of answer) printer.event(event);
    result = await answer.result;
  } catch (error) {
    return printer.failed(error);
  }
  return printer.finish(result);
}

interface Printer {
  waiting(): void;
  event(event: StreamEvent): void;
  finish(result: Result): number;
  failed(error: unknown): number;
}

/** The answer as a person reads it: text on stdout as it arrives, reasoning dimmed on stderr, a footer. */
class TerminalPrinter implements Printer {
  readonly #io: CliIo;
  readonly #err;
  #status = false;
  #reasoning = false;
  #lastOut = '\n';
  #wroteText = false;

  constructor(io: CliIo) {
    this.#io = io;
    this.#err = styleFor(io.stderr, io.env);
  }

  waiting(): void {
    // A status line only on a terminal: it is erased when the answer starts.
    if (this.#io.stderr.isTTY === true) {
      this.#io.stderr.write(this.#err.dim('waiting for the first token…'));
      this.#status = true;
    }
  }

  #clearStatus(): void {
    if (!this.#status) return;
    this.#status = false;
    this.#io.stderr.write('\r\u001b[2K');
  }

  #out(text: string): void {
    if (text === '') return;
    this.#io.stdout.write(text);
    this.#lastOut = text;
    this.#wroteText = true;
  }

  event(event: StreamEvent): void {
    switch (event.type) {
      case 'text':
        this.#clearStatus();
        if (this.#reasoning) {
          this.#reasoning = false;
          this.#io.stderr.write('\n');
        }
        this.#out(event.text);
        return;
      case 'reasoning':
        this.#clearStatus();
        this.#reasoning = true;
        this.#io.stderr.write(this.#err.dim(event.text));
        return;
      case 'tool-call':
        this.#clearStatus();
        this.#out(
          `${this.#lastOut.endsWith('\n') ? '' : '\n'}[tool call ${event.name}] ${event.arguments}\n`,
        );
        return;
      default:
        return;
    }
  }

  #endLine(): void {
    this.#clearStatus();
    if (this.#reasoning) this.#io.stderr.write('\n');
    // On a terminal the footer starts on its own line; a piped answer is left byte for byte as it came.
    if (this.#wroteText && !this.#lastOut.endsWith('\n') && this.#io.stdout.isTTY === true)
      this.#io.stdout.write('\n');
    else if (this.#wroteText && !this.#lastOut.endsWith('\n')) this.#io.stderr.write('\n');
  }

  finish(result: Result): number {
    this.#endLine();
    this.#io.stderr.write(chatFooter(result, this.#err));
    return chatOutcome(result).exitCode;
  }

  failed(error: unknown): number {
    this.#endLine();
    const cancelled = error instanceof RequestFailedError && error.code === 'aborted';
    if (cancelled) {
      this.#io.stderr.write(
        this.#err.red(
          '[!] CANCELLED: stopped by Ctrl-C before the answer began; the connection was closed.\n',
        ),
      );
      return CHAT_EXIT.cancelled;
    }
    this.#io.stderr.write(`${this.#err.red('error:')} ${describe(error)}\n`);
    return CHAT_EXIT.failed;
  }
}

/** `--json`: every normalized event as one JSON line, then the result line. */
class JsonPrinter implements Printer {
  readonly #io: CliIo;

  constructor(io: CliIo) {
    this.#io = io;
  }

  waiting(): void {}

  event(event: StreamEvent): void {
    this.#io.stdout.write(`${JSON.stringify(event)}\n`);
  }

  finish(result: Result): number {
    const outcome = chatOutcome(result);
    this.#io.stdout.write(
      `${JSON.stringify({ type: 'result', status: outcome.status, exitCode: outcome.exitCode, ...result })}\n`,
    );
    return outcome.exitCode;
  }

  failed(error: unknown): number {
    const cancelled = error instanceof RequestFailedError && error.code === 'aborted';
    const line: Record<string, unknown> = {
      type: 'result',
      status: cancelled ? 'cancelled' : 'failed',
      exitCode: cancelled ? CHAT_EXIT.cancelled : CHAT_EXIT.failed,
      complete: false,
      error: {
        code: TokenwireError.is(error) ? error.code : 'error',
        message: describe(error),
        ...(error instanceof HttpError ? { status: error.status } : {}),
      },
    };
    this.#io.stdout.write(`${JSON.stringify(line)}\n`);
    if (!cancelled) this.#io.stderr.write(`error: ${describe(error)}\n`);
    return cancelled ? CHAT_EXIT.cancelled : CHAT_EXIT.failed;
  }
}

function describe(error: unknown): string {
  // A refused connection in words, not as the fetch's "fetch failed: connect ECONNREFUSED …".
  if (error instanceof RequestFailedError && error.code === 'network') {
    const words = connectionFailure(error);
    if (words !== undefined) return `cannot reach ${error.url ?? 'the server'}: ${words}`;
  }
  return error instanceof Error ? error.message : String(error);
}
