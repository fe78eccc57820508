import type { DialectSource, Recording } from '../../capture/recording.ts';
import { framingOfContentType, sniffFraming } from '../../client/framing.ts';
import type { Dialect, DialectId, Framing } from '../../dialects/dialect.ts';
import { OpenAiResponsesDecoder, type ResponsesFinding } from '../../dialects/openai-responses/decoder.ts';
import { detectDialect, getDialect } from '../../dialects/registry.ts';
import type { ChatRequest } from '../../events/chat-request.ts';
import type { Result } from '../../events/result.ts';
import type { StreamEvent } from '../../events/stream-event.ts';
import { type BufferingVerdict, detectBuffering, type TimedFrame } from './detect-buffering.ts';
import { guessServer, type ServerGuess } from './guess-server.ts';
import { replayRecording } from './replay-recording.ts';
import { joinReads, scanWire, type WireComment, type WireFrame, type WireScan } from './scan-wire.ts';

/** A frame and what the dialect decoder made of it. */
export interface DecodedFrame extends WireFrame {
  events: StreamEvent[];
  /** The decoder refused the payload (not JSON, not this dialect's shape). */
  decodeError?: string | undefined;
  /** `[DONE]`. */
  sentinel: boolean;
}

/** Everything inspect concluded from a recording, before findings are drawn. */
export interface Analysis {
  recording: Recording;
  bodyBytes: number;
  /** The body decoded as text (lossy), when it is not a stream to split: an error or a JSON document. */
  bodyText: string | undefined;
  /** The whole body is one JSON document under a JSON Content-Type: an answer that was not streamed. */
  wholeJson: boolean;
  /** The Content-Type header; undefined when absent or unknown (a file). */
  contentType: string | undefined;
  announcedFraming: Framing | undefined;
  /** What the bytes are. */
  bodyFraming: Framing | 'unknown' | 'empty';
  /** What the dialect sends. */
  expectedFraming: Framing | undefined;
  dialect: Dialect | undefined;
  dialectSource: DialectSource | 'payload' | undefined;
  /** The dialect the first payload looks like, whatever the path said. */
  detectedDialect: DialectId | undefined;
  frames: DecodedFrame[];
  comments: WireComment[];
  scan: Omit<WireScan, 'frames' | 'comments'> | undefined;
  /** Events the decoder emitted at the end of the body (tool calls still being assembled). */
  endEvents: StreamEvent[];
  /**
   * What the dialect decoder noticed in the stream's own bookkeeping (Responses: sequence numbers, an
   * event after the terminal one, `completed` at the output cap), with the frame it came at.
   */
  streamFindings: (ResponsesFinding & { frame: number | undefined })[];
  /** The output cap the decoder was given: the request's, or `--max-tokens` for a file without one. */
  outputCap: number | undefined;
  /** By the dialect's own rule, did the terminal event (or its terminator) arrive? */
  terminalSeen: boolean;
  /** The terminal event arrived and no error came with it: the answer is whole. */
  complete: boolean;
  sentinelSeen: boolean;
  /** All answer text, in order, as the server sent it (before any cumulative-text repair). */
  text: string;
  textPieces: string[];
  requestBody: Record<string, unknown> | undefined;
  request: ChatRequest | undefined;
  /** What tokenwire's client reports for this exchange (undefined without a 2xx response). */
  result: Result | undefined;
  server: ServerGuess | undefined;
  buffering: BufferingVerdict | undefined;
}

/** Reads a recording: framing, frames, events, the client's verdict, the server and the pacing. */
export async function analyzeRecording(recording: Recording): Promise<Analysis> {
  const body = joinReads(recording.reads);
  const response = recording.response;
  const ok =
    recording.source === 'file' ||
    (response !== undefined && response.status >= 200 && response.status < 300);
  const contentType = response?.headers['content-type'];
  const announcedFraming = framingOfContentType(contentType ?? null);
  const sniffed = sniffFraming(body.bytes);
  const bodyFraming: Analysis['bodyFraming'] =
    body.bytes.length === 0 ? 'empty' : sniffed === undefined || sniffed === 'unknown' ? 'unknown' : sniffed;

  let dialect = recording.dialect === undefined ? undefined : getDialect(recording.dialect);
  let dialectSource: Analysis['dialectSource'] = recording.dialectSource;
  const analysis: Analysis = {
    recording,
    bodyBytes: body.bytes.length,
    bodyText: undefined,
    wholeJson: false,
    contentType,
    announcedFraming,
    bodyFraming,
    expectedFraming: undefined,
    dialect,
    dialectSource,
    detectedDialect: undefined,
    frames: [],
    comments: [],
    scan: undefined,
    endEvents: [],
    streamFindings: [],
    outputCap: undefined,
    terminalSeen: false,
    complete: false,
    sentinelSeen: false,
    text: '',
    textPieces: [],
    requestBody: undefined,
    request: undefined,
    result: undefined,
    server: undefined,
    buffering: undefined,
  };
  const requestText = recording.request?.body;
  if (requestText !== undefined) {
    try {
      const parsed = JSON.parse(requestText) as unknown;
      if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed))
        analysis.requestBody = parsed as Record<string, unknown>;
    } catch {
      // A body that is not JSON is the user's business; the server's answer will say.
    }
  }

  const streamLike = bodyFraming === 'sse' || bodyFraming === 'ndjson';
  const file = recording.source === 'file';
  const singleJson =
    !streamLike || isJsonContentType(contentType) || (file && bodyFraming === 'ndjson')
      ? parseWhole(body.bytes)
      : undefined;
  // A file has no Content-Type: one JSON document that is no stream's line is an answer not streamed.
  analysis.wholeJson =
    singleJson !== undefined &&
    (isJsonContentType(contentType) || (file && bodyFraming !== 'sse' && !isStreamLine(singleJson)));
  if (!ok || !streamLike || analysis.wholeJson) {
    analysis.bodyText = new TextDecoder('utf-8', { fatal: false }).decode(body.bytes);
  }

  if (ok && streamLike) {
    const scan = scanWire(recording.reads, bodyFraming, body);
    const { frames, comments, ...rest } = scan;
    analysis.comments = comments;
    analysis.scan = rest;
    const payloads = frames.slice(0, 50).flatMap((frame) => {
      const value = parseJson(frame.frame.data);
      return value === undefined ? [] : [value];
    });
    const path = recording.request === undefined ? undefined : new URL(recording.request.url).pathname;
    const detected = detectDialect({ path, contentType, payload: payloads[0] });
    analysis.detectedDialect = detected?.dialect.id;
    if (dialect === undefined && detected !== undefined) {
      dialect = detected.dialect;
      dialectSource = 'payload';
    }
    // The `error: {...}` line is llama-server's alone (before Sep 2025): a stream of only that line
    // is llama-server failing, not a stream of unknown dialect.
    if (dialect === undefined && frames.some((frame) => frame.frame.legacyError === true)) {
      dialect = getDialect('llamacpp');
      dialectSource = 'payload';
      analysis.detectedDialect = 'llamacpp';
    }
    analysis.dialect = dialect;
    analysis.dialectSource = dialectSource;
    readRequest(analysis);
    decodeFrames(analysis, frames);
    analysis.server = guessServer({
      dialect: dialect?.id,
      headers: response?.headers ?? {},
      payloads,
      dataWithoutSpace: scan.dataWithoutSpace,
      dataWithSpace: scan.dataWithSpace,
    });
    const timed: TimedFrame[] = [];
    for (const frame of analysis.frames) {
      if (frame.atMs !== undefined && frame.events.some(isContent))
        timed.push({ atMs: frame.atMs, read: frame.lastRead });
    }
    analysis.buffering = detectBuffering(timed, response?.atMs, recording.localStalls);
  }
  analysis.expectedFraming = dialect?.framing ?? announcedFraming;
  analysis.dialect = dialect;
  readRequest(analysis);
  // A captured whole answer is no stream to play back (the client would only fail to find a dialect).
  if (ok && !(file && analysis.wholeJson))
    analysis.result = await replayRecording(recording, dialect?.id, analysis.outputCap);
  return analysis;
}

/** The request's stop list and cap, read by the dialect (before decoding: the cap shapes the verdict). */
function readRequest(analysis: Analysis): void {
  const dialect = analysis.dialect;
  if (analysis.request === undefined && dialect !== undefined && analysis.requestBody !== undefined) {
    try {
      analysis.request = dialect.fromRequestBody(analysis.requestBody);
    } catch {
      // The server judges the body; inspect only wants its stop list and cap when it can read them.
    }
  }
  analysis.outputCap = analysis.request?.maxTokens ?? analysis.recording.outputCap;
}

function decodeFrames(analysis: Analysis, frames: readonly WireFrame[]): void {
  const dialect = analysis.dialect;
  const decoder = dialect?.createDecoder({ maxOutputTokens: analysis.outputCap });
  const bookkeeping = decoder instanceof OpenAiResponsesDecoder ? decoder.findings : undefined;
  const noted = (frame: number | undefined) => {
    if (bookkeeping === undefined) return;
    for (let i = analysis.streamFindings.length; i < bookkeeping.length; i++)
      analysis.streamFindings.push(Object.assign({ frame }, bookkeeping[i]!));
  };
  const texts: string[] = [];
  const collect = (events: StreamEvent[]) => (event: StreamEvent) => {
    events.push(event);
    if (event.type === 'text') texts.push(event.text);
  };
  for (const frame of frames) {
    const events: StreamEvent[] = [];
    const decoded: DecodedFrame = { ...frame, events, sentinel: frame.frame.data.trim() === '[DONE]' };
    if (decoded.sentinel) analysis.sentinelSeen = true;
    if (decoder !== undefined) {
      try {
        decoder.frame(frame.frame, collect(events));
      } catch (error) {
        decoded.decodeError = error instanceof Error ? error.message : String(error);
      }
      noted(frame.n);
    }
    analysis.frames.push(decoded);
  }
  if (decoder !== undefined) {
    try {
      decoder.end(collect(analysis.endEvents));
    } catch {
      // Whatever is held at the end is shown as far as it decoded.
    }
    noted(undefined);
    analysis.complete = decoder.complete;
    // A Messages stream's finish comes in `message_delta`, before its terminal `message_stop`.
    const finishEnds = dialect!.id !== 'anthropic-messages';
    analysis.terminalSeen =
      decoder.complete ||
      decoder.sawTerminator ||
      (finishEnds && analysis.frames.some((f) => f.events.some((e) => e.type === 'finish')));
  }
  analysis.textPieces = texts;
  analysis.text = texts.join('');
}

/** Text, reasoning or tool-call content: what a reader is waiting for. */
export function isContent(event: StreamEvent): boolean {
  return (
    event.type === 'text' ||
    event.type === 'reasoning' ||
    (event.type === 'tool-call-delta' && event.argumentsDelta !== '') ||
    event.type === 'tool-call'
  );
}

/**
 * A JSON value that reads as one line of a stream rather than a whole answer: an OpenAI chunk
 * (`delta`, `*.chunk`), a TGI token event, or a native line that is not done or carries no text (an
 * Ollama or llama.cpp stream's last line). A whole answer has its full text in one place.
 */
function isStreamLine(value: unknown): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const record = value as Record<string, unknown>;
  if (typeof record.object === 'string' && record.object.endsWith('.chunk')) return true;
  const choice = Array.isArray(record.choices) ? (record.choices[0] as unknown) : undefined;
  if (typeof choice === 'object' && choice !== null && 'delta' in choice) return true;
  if ('token' in record) return true;
  const done = record.done ?? record.stop;
  if (done === false) return true;
  if (done === true) {
    const message = record.message as { content?: unknown } | undefined;
    const text = message?.content ?? record.response ?? record.content;
    return text === undefined || text === '';
  }
  return false;
}

function isJsonContentType(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  return type === 'application/json' || (type.endsWith('+json') && !type.includes('ndjson'));
}

function parseWhole(bytes: Uint8Array): unknown {
  return parseJson(new TextDecoder('utf-8', { fatal: false }).decode(bytes));
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
