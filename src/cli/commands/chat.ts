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
import type { FetchLike } from '../../server/upstream/upstream.ts';
import { createSim } from '../../sim/create-sim.ts';
import { parseFaults } from '../../sim/faults.ts';
import { FAULT_HEADER } from '../../sim/sim-options.ts';
import { CHAT_EXIT, chatFooter, chatOutcome } from '../chat/chat-outcome.ts';
import { runRepl } from '../chat/chat-repl.ts';
import { parseHeaders } from '../chat/parse-headers.ts';
import { parseNumberFlag } from '../chat/parse-number-flag.ts';
import { readlineTerminal } from '../chat/readline-terminal.ts';
import { resolveEndpoint } from '../chat/resolve-endpoint.ts';
import { type CliIo, styleFor, UsageError } from '../cli-io.ts';
import { connectionFailure, probeUpstream } from '../probe-upstream.ts';

export const CHAT_HELP = `Usage: tokenwire chat [URL] PROMPT [options]
       tokenwire chat [URL] [options]             (a conversation on a terminal)
       echo PROMPT | tokenwire chat [URL] [options]

Streams an answer to the terminal as it arrives, then a footer with the time to first token, tokens
per second (the server's own decode timing when it reports one, else measured after the first token),
output tokens and how the answer ended. A cut-off answer (finish "length") and an
incomplete one (connection lost, idle timeout, server error, malformed stream) are marked as such,
never shown as finished. Ctrl-C cancels: the connection is closed, so the server stops generating.

With no URL the built-in simulated model answers (no server, no weights).

With no PROMPT, a piped stdin is the prompt; on a terminal, a conversation starts: each message is
sent with the conversation so far. Commands: /system TEXT, /model NAME, /reset, /help, /quit (or
Ctrl-D). Ctrl-C stops the answer that is streaming (the request is aborted); Ctrl-C at the prompt
leaves. A model the server does not have gets an error listing the models it has.

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
  if (positionals.length > 2)
    throw new UsageError(
      'chat takes [URL] PROMPT; quote a prompt that has spaces: tokenwire chat "a prompt"',
    );
  const [first, second] = positionals as [string | undefined, string | undefined];
  const looksLikeUrl = first !== undefined && /^https?:\/\//i.test(first);
  const target = second !== undefined || looksLikeUrl ? first : undefined;
  let prompt = second ?? (looksLikeUrl ? undefined : first);
  // No PROMPT: a conversation on a terminal, the prompt from stdin when it is piped.
  const repl = prompt === undefined && io.stdin?.isTTY === true;
  if (prompt === undefined && !repl) {
    if (io.stdin === undefined)
      throw new UsageError(
        target === undefined
          ? 'chat needs a PROMPT (and optionally a URL before it)'
          : 'chat needs a PROMPT after the URL',
      );
    prompt = await readAll(io.stdin.open());
    if (prompt.trim() === '')
      throw new UsageError(
        'chat needs a PROMPT: stdin was empty (pipe a prompt in, or give it as an argument)',
      );
  }
  if (repl && values.json)
    throw new UsageError('--json needs a PROMPT (an argument or piped stdin), not the interactive chat');
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

  const base: ChatRequest = { messages: [], includeUsage: true };
  // Usage asked for so the footer can give the server's own token count instead of an estimate.
  if (values['max-tokens'] !== undefined)
    base.maxTokens = parseNumberFlag(values['max-tokens'], '--max-tokens', 'whole');
  if (values.temperature !== undefined)
    base.temperature = parseNumberFlag(values.temperature, '--temperature', 'finite');
  if (values.stop !== undefined && values.stop.length > 0) base.stop = values.stop;

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

  /** One answer, streamed and printed; `signal` cancels it (Ctrl-C). */
  const answerOnce = async (
    messages: ChatMessage[],
    modelName: string | undefined,
    signal: AbortSignal,
  ): Promise<{ code: number; result?: Result }> => {
    const request: ChatRequest = Object.assign({}, base, { messages });
    if (modelName !== undefined) request.model = modelName;
    const printer = values.json ? new JsonPrinter(io) : new TerminalPrinter(io);
    const answer = stream(
      { url, dialect: dialectId, request, headers },
      { fetch: fetchFn, signal, timeouts },
    );
    printer.waiting();
    let result: Result;
    try {
      for await (const event of answer) printer.event(event);
      result = await answer.result;
    } catch (error) {
      // An unknown model: say which ones the server has (its /v1/models or /api/tags).
      const models = isUnknownModel(error)
        ? (await probeUpstream(new URL(url).origin, fetchFn, headers, { newDialects: false })).models
        : [];
      return { code: printer.failed(error, models) };
    }
    return { code: printer.finish(result), result };
  };

  if (repl) {
    const stdin = (io.stdin as NonNullable<CliIo['stdin']>).open();
    return runRepl({
      io,
      terminal: readlineTerminal(stdin, io.stdout as NodeJS.WritableStream),
      style: styleFor(io.stderr, io.env),
      system: values.system,
      model,
      target: target === undefined ? 'the built-in simulated model' : url,
      ask: async (messages, modelName, signal) => ({
        result: (await answerOnce(messages, modelName, signal)).result,
      }),
    });
  }

  const messages: ChatMessage[] = [];
  if (values.system !== undefined) messages.push({ role: 'system', content: values.system });
  messages.push({ role: 'user', content: prompt as string });
  return (await answerOnce(messages, model, io.signal)).code;
}

/** The whole of a piped stdin as text, without the one line ending `echo` adds. */
async function readAll(input: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of input)
    chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

/** A 404 or 400 whose message is about the model ("The model `x` does not exist", "model 'x' not found"). */
function isUnknownModel(error: unknown): boolean {
  return (
    error instanceof HttpError &&
    (error.status === 404 || error.status === 400) &&
    /model/i.test(`${error.detail ?? ''} ${error.body}`)
  );
}

interface Printer {
  waiting(): void;
  event(event: StreamEvent): void;
  finish(result: Result): number;
  /** `models`: the server's models, when the error is an unknown model's. */
  failed(error: unknown, models: string[]): number;
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

  failed(error: unknown, models: string[]): number {
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
    if (models.length > 0) this.#io.stderr.write(`${modelsLine(models)}\n`);
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

  failed(error: unknown, models: string[]): number {
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
    if (models.length > 0) line.models = models;
    this.#io.stdout.write(`${JSON.stringify(line)}\n`);
    if (!cancelled) this.#io.stderr.write(`error: ${describe(error)}\n`);
    if (models.length > 0) this.#io.stderr.write(`${modelsLine(models)}\n`);
    return cancelled ? CHAT_EXIT.cancelled : CHAT_EXIT.failed;
  }
}

/** The models a server has, for an unknown model's error; a long list is cut with a count. */
function modelsLine(models: string[]): string {
  const shown = models.slice(0, 20).join(', ');
  return `models on this server: ${shown}${models.length > 20 ? `, … (${models.length} in all)` : ''}; pass one with --model (or /model in the chat)`;
}

function describe(error: unknown): string {
  // A refused connection in words, not as the fetch's "fetch failed: connect ECONNREFUSED …".
  if (error instanceof RequestFailedError && error.code === 'network') {
    const words = connectionFailure(error);
    if (words !== undefined) return `cannot reach ${error.url ?? 'the server'}: ${words}`;
  }
  return error instanceof Error ? error.message : String(error);
}
