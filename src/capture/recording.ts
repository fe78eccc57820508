import type { DialectId } from '../dialects/dialect.ts';

/** How the dialect of an endpoint was decided: `--dialect`, the URL path, or a probe of the server. */
export type DialectSource = 'flag' | 'path' | 'probe';

/** A time span (ms since the request) when inspect's own process was too busy to read. */
export interface LocalStall {
  fromMs: number;
  toMs: number;
}

/** One network read, as it arrived. */
export interface RecordedRead {
  /** Milliseconds since the request was sent; undefined for a captured file (no timings). */
  atMs: number | undefined;
  bytes: Uint8Array;
}

/** How the body ended. */
export type RecordingEndKind =
  /** The body ended normally (EOF). */
  | 'eof'
  /** Reading the body failed: the connection broke. */
  | 'read-error'
  /** No byte for the idle timeout: inspect stopped waiting. */
  | 'idle-timeout'
  /** The whole request took longer than the total timeout. */
  | 'total-timeout'
  /** Ctrl-C. */
  | 'interrupted'
  /** The body grew past the capture limit. */
  | 'too-large'
  /** No response at all: refused connection, DNS failure, timeout or abort before the headers. */
  | 'request-failed';

export interface RecordedRequest {
  method: string;
  url: string;
  /** As sent, credentials redacted. */
  headers: Record<string, string>;
  body?: string | undefined;
}

export interface RecordedResponse {
  status: number;
  statusText: string;
  /** Lower-case names. */
  headers: Record<string, string>;
  /** When the headers arrived, ms since the request was sent. */
  atMs: number | undefined;
}

/**
 * Everything `tokenwire inspect` saw of one exchange, before any interpretation: the request, the
 * response head, every read with its arrival time, and how the body ended. The diagnosis is a pure
 * function of this, so a recording from a file and one from a live server are analysed alike. Web-standard
 * (the playground records one too and saves it as a capture file: capture-file.ts).
 */
export interface Recording {
  source: 'live' | 'file';
  /** The file a `file` recording was read from. */
  name?: string | undefined;
  request?: RecordedRequest | undefined;
  response?: RecordedResponse | undefined;
  /** The dialect the endpoint should speak (from --dialect, the URL path, or a probe). */
  dialect?: DialectId | undefined;
  dialectSource?: DialectSource | undefined;
  reads: RecordedRead[];
  /**
   * When inspect's own process was too busy to read (event-loop stalls of 20 ms or more during a live
   * capture): reads that arrived after one are late because of us, not the network.
   */
  localStalls?: LocalStall[] | undefined;
  end: { kind: RecordingEndKind; atMs?: number | undefined; message?: string | undefined };
  /**
   * The output cap the request had, when no request was recorded (`inspect --file --max-tokens`): a
   * Responses `completed` whose output count reached it was cut (llama-server b10108).
   */
  outputCap?: number | undefined;
}

/** A captured raw body (a file) as a recording: one read, no timings, no headers. */
export function recordingFromBytes(
  bytes: Uint8Array,
  dialect: DialectId | undefined,
  name?: string,
): Recording {
  const recording: Recording = {
    source: 'file',
    reads: bytes.length === 0 ? [] : [{ atMs: undefined, bytes }],
    end: { kind: 'eof' },
  };
  if (dialect !== undefined) {
    recording.dialect = dialect;
    recording.dialectSource = 'flag';
  }
  if (name !== undefined) recording.name = name;
  return recording;
}
