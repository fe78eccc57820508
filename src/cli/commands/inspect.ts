import { readFile, writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { parseCaptureFile } from '../../capture/capture-file.ts';
import { type Recording, recordingFromBytes } from '../../capture/recording.ts';
import { DIALECT_IDS, type DialectId } from '../../dialects/dialect.ts';
import { getDialect, isDialectId } from '../../dialects/registry.ts';
import type { ChatRequest } from '../../events/chat-request.ts';
import { parseHeaders } from '../chat/parse-headers.ts';
import { parseNumberFlag } from '../chat/parse-number-flag.ts';
import { resolveEndpoint } from '../chat/resolve-endpoint.ts';
import { type CliIo, styleFor, UsageError } from '../cli-io.ts';
import { analyzeRecording } from '../inspect/analyze-recording.ts';
import { captureStream } from '../inspect/capture-stream.ts';
import { diagnose } from '../inspect/diagnose.ts';
import { FINDINGS } from '../inspect/finding.ts';
import { type FailOn, inspectReport, summarize } from '../inspect/inspect-report.ts';
import { renderInspect } from '../inspect/render-inspect.ts';
import { joinReads } from '../inspect/scan-wire.ts';

/** The prompt sent when no --body is given: a short answer of many small tokens shows the pacing. */
export const DEFAULT_INSPECT_PROMPT = 'Count from 1 to 20, one number per line.';
const DEFAULT_MAX_TOKENS = 200;
const DEFAULT_TIMEOUT_MS = 120_000;
const DEFAULT_IDLE_TIMEOUT_MS = 60_000;

export const INSPECT_HELP = `Usage: tokenwire inspect URL [options]
       tokenwire inspect --file PATH [--dialect D] [options]

For a stream that "doesn't work": sends one streaming request, shows the raw wire with timings (every
read with its size and arrival time, every frame and comment, where the network split frames) and
then a diagnosis: each finding has a stable id, a severity and a fix.

URL is an endpoint whose path names the dialect (/v1/chat/completions, /v1/completions, /v1/messages,
/v1/responses, /api/chat, /api/generate, /completion, /generate_stream) or a bare server address, which
is probed. Without --body the request is a short default prompt in that dialect's own shape, asking for
usage. The request's output cap is checked against the output count: a Responses stream that says
"completed" with as many tokens as max_output_tokens was cut (llama-server does that).

Options:
  --dialect D            Force the dialect: ${DIALECT_IDS.join(', ')}
  --body JSON            Send this body as is (or @FILE to read it from a file); keep "stream": true in it
  --header 'K: V'        Request header (repeatable; credentials are never printed)
  --model NAME           Model for the default body (default: the first one the server lists)
  --prompt TEXT          Prompt for the default body (default: "${DEFAULT_INSPECT_PROMPT}")
  --max-tokens N         Output cap for the default body (default ${DEFAULT_MAX_TOKENS}); with --file, the cap
                         the captured request had (to tell a Responses "completed" at the cap as cut)
  --stop S               Stop string for the default body (repeatable); checked against the text
  --timeout-ms N         Stop after N ms in all (default ${DEFAULT_TIMEOUT_MS})
  --idle-timeout-ms N    Stop when no byte arrives for N ms (default ${DEFAULT_IDLE_TIMEOUT_MS})
  --file PATH            Diagnose a captured raw body instead of sending a request (no timings)
  --save PATH            Also write the raw body to PATH (inspect it again later with --file)
  --full                 Print frames whole instead of abbreviated
  --summary              Leave out the wire listing: verdict and diagnosis only
  --fail-on error|warning  Which findings make the exit status 1 (default warning)
  --json                 Print the whole report (request, response, reads, frames, findings) as JSON
  -h, --help             Show this help

Severities: error = the stream is broken or the answer wrong (a client gets an incomplete, failed or
garbled answer); warning = the answer arrives but something will bite (cut off, buffered, no [DONE]
or usage, wrong headers); info = facts (dialect, server, keepalives).
Exit status: 0 no problem; 1 a problem (an error or warning; see --fail-on); 2 usage; 130 Ctrl-C.

Findings:
${Object.entries(FINDINGS)
  .map(([id, info]) => `  ${id.padEnd(24)} ${info.severity.padEnd(8)} ${info.title}`)
  .join('\n')}
`;

export async function inspectCommand(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      dialect: { type: 'string' },
      body: { type: 'string' },
      header: { type: 'string', multiple: true },
      model: { type: 'string' },
      prompt: { type: 'string' },
      'max-tokens': { type: 'string' },
      stop: { type: 'string', multiple: true },
      'timeout-ms': { type: 'string' },
      'idle-timeout-ms': { type: 'string' },
      file: { type: 'string' },
      save: { type: 'string' },
      full: { type: 'boolean', default: false },
      summary: { type: 'boolean', default: false },
      'fail-on': { type: 'string', default: 'warning' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    allowPositionals: true,
    strict: true,
  });
  if (values.help) {
    io.stdout.write(INSPECT_HELP);
    return 0;
  }
  const failOn = values['fail-on'];
  if (failOn !== 'error' && failOn !== 'warning')
    throw new UsageError(`--fail-on takes error or warning, got ${JSON.stringify(failOn)}`);
  if (values.dialect !== undefined && !isDialectId(values.dialect))
    throw new UsageError(
      `unknown dialect ${JSON.stringify(values.dialect)}; known: ${DIALECT_IDS.join(', ')}`,
    );
  if (positionals.length > 1) throw new UsageError('inspect takes one URL');
  const target = positionals[0];

  let recording: Recording;
  if (values.file !== undefined) {
    if (target !== undefined) throw new UsageError('give either a URL or --file, not both');
    let bytes: Uint8Array;
    try {
      bytes = new Uint8Array(await readFile(values.file));
    } catch (error) {
      throw new UsageError(`cannot read --file ${values.file}: ${(error as Error).message}`);
    }
    // A capture the playground saved (bytes, read timings, request, how it ended), else a raw body.
    recording =
      parseCaptureFile(bytes, values.file) ??
      recordingFromBytes(bytes, values.dialect as DialectId | undefined, values.file);
    if (values['max-tokens'] !== undefined)
      recording.outputCap = parseNumberFlag(values['max-tokens'], '--max-tokens', 'whole');
  } else {
    if (target === undefined) throw new UsageError('inspect needs a URL (or --file PATH)');
    recording = await captureLive(target, values, io);
  }

  if (values.save !== undefined) await writeFile(values.save, joinReads(recording.reads).bytes);
  const analysis = await analyzeRecording(recording);
  const findings = diagnose(analysis);
  if (values.json) {
    io.stdout.write(`${JSON.stringify(inspectReport(analysis, findings, failOn), null, 2)}\n`);
  } else {
    io.stdout.write(
      renderInspect(analysis, findings, {
        style: styleFor(io.stdout, io.env),
        width: io.stdout.columns ?? 120,
        full: values.full,
        wire: !values.summary,
        failOn,
      }),
    );
  }
  return summarize(analysis, findings, failOn satisfies FailOn).exitCode;
}

interface LiveValues {
  dialect?: string | undefined;
  body?: string | undefined;
  header?: string[] | undefined;
  model?: string | undefined;
  prompt?: string | undefined;
  'max-tokens'?: string | undefined;
  stop?: string[] | undefined;
  'timeout-ms'?: string | undefined;
  'idle-timeout-ms'?: string | undefined;
}

async function captureLive(target: string, values: LiveValues, io: CliIo): Promise<Recording> {
  const headers = parseHeaders(values.header);
  const fetchFn = (request: Request) => fetch(request);
  const custom = values.body !== undefined;
  const endpoint = await resolveEndpoint({
    url: target,
    dialect: values.dialect,
    model: values.model,
    headers,
    fetch: fetchFn,
    findModel: !custom,
  });
  let body: string;
  if (custom) {
    for (const flag of ['model', 'prompt', 'max-tokens', 'stop'] as const) {
      if (values[flag] !== undefined)
        throw new UsageError(`--${flag} shapes the default body; with --body, put it in the body`);
    }
    body = await bodyText(values.body!);
  } else {
    if (endpoint.dialect === undefined) {
      throw new UsageError(
        `cannot tell the dialect of ${endpoint.url} from its path: pass --dialect, or --body with the request to send`,
      );
    }
    const request: ChatRequest = {
      messages: [{ role: 'user', content: values.prompt ?? DEFAULT_INSPECT_PROMPT }],
      maxTokens:
        values['max-tokens'] === undefined
          ? DEFAULT_MAX_TOKENS
          : parseNumberFlag(values['max-tokens'], '--max-tokens', 'whole'),
      includeUsage: true,
    };
    if (endpoint.model !== undefined) request.model = endpoint.model;
    if (values.stop !== undefined && values.stop.length > 0) request.stop = values.stop;
    body = JSON.stringify(getDialect(endpoint.dialect).toRequestBody(request));
  }
  const framing = endpoint.dialect === undefined ? undefined : getDialect(endpoint.dialect).framing;
  const sent: Record<string, string> = {
    accept: framing === 'ndjson' ? 'application/x-ndjson' : 'text/event-stream',
    'content-type': 'application/json',
    ...headers,
  };
  const totalMs =
    values['timeout-ms'] === undefined
      ? DEFAULT_TIMEOUT_MS
      : parseNumberFlag(values['timeout-ms'], '--timeout-ms', 'positive');
  const idleMs =
    values['idle-timeout-ms'] === undefined
      ? DEFAULT_IDLE_TIMEOUT_MS
      : parseNumberFlag(values['idle-timeout-ms'], '--idle-timeout-ms', 'positive');

  const progress = new Progress(io);
  let recording: Recording;
  try {
    recording = await captureStream({
      url: endpoint.url,
      method: 'POST',
      headers: sent,
      body,
      fetch: fetchFn,
      signal: io.signal,
      totalMs,
      idleMs,
      onRead: (reads, bytes, atMs) => progress.update(reads, bytes, atMs),
    });
  } finally {
    progress.clear();
  }
  recording.dialect = endpoint.dialect;
  recording.dialectSource = endpoint.dialectSource;
  return recording;
}

async function bodyText(value: string): Promise<string> {
  let text = value;
  if (value.startsWith('@')) {
    try {
      text = await readFile(value.slice(1), 'utf8');
    } catch (error) {
      throw new UsageError(`cannot read --body ${value}: ${(error as Error).message}`);
    }
  }
  try {
    JSON.parse(text);
  } catch (error) {
    throw new UsageError(`--body is not valid JSON: ${(error as Error).message}`);
  }
  return text;
}

/** "receiving: 12 reads, 3.4 kB, 1.2 s" on a terminal's stderr, redrawn at most 10 times a second. */
class Progress {
  readonly #io: CliIo;
  readonly #on: boolean;
  #last = 0;
  #shown = false;

  constructor(io: CliIo) {
    this.#io = io;
    this.#on = io.stderr.isTTY === true;
  }

  update(reads: number, bytes: number, atMs: number): void {
    if (!this.#on || atMs - this.#last < 100) return;
    this.#last = atMs;
    this.#shown = true;
    this.#io.stderr.write(
      `\r\u001b[2Kreceiving: ${reads} reads, ${(bytes / 1024).toFixed(1)} kB, ${(atMs / 1000).toFixed(1)} s`,
    );
  }

  clear(): void {
    if (this.#shown) this.#io.stderr.write('\r\u001b[2K');
  }
}
