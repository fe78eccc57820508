import type { DialectId } from '../dialects/dialect.ts';
import { DIALECT_IDS } from '../dialects/dialect.ts';
import type { Recording, RecordingEndKind } from './recording.ts';

/** The `format` field that marks a capture file. */
export const CAPTURE_FORMAT = 'tokenwire-capture';

/**
 * A saved stream with its timings (what the playground's "Save capture" writes): the request, the
 * response head, every read's bytes (base64) with its arrival time, and how the body ended. JSON, so it
 * is readable and diffable; a `Recording` (recording.ts) in a file. Web-standard code only: the page
 * bundles it.
 */
export interface CaptureFile {
  format: typeof CAPTURE_FORMAT;
  version: 1;
  /** Where and when it was captured (free text, e.g. "tokenwire playground"). */
  capturedBy?: string | undefined;
  dialect?: DialectId | undefined;
  request?: { method: string; url: string; headers: Record<string, string>; body?: string | undefined };
  response?: {
    status: number;
    statusText: string;
    headers: Record<string, string>;
    atMs?: number | undefined;
  };
  reads: { atMs: number; base64: string }[];
  end: { kind: RecordingEndKind; atMs?: number | undefined; message?: string | undefined };
}

const END_KINDS: readonly RecordingEndKind[] = [
  'eof',
  'read-error',
  'idle-timeout',
  'total-timeout',
  'interrupted',
  'too-large',
  'request-failed',
];

/** Bytes as base64 (btoa on a binary string: in browsers and Node alike). */
export function bytesToBase64(bytes: Uint8Array): string {
  let binary = '';
  const step = 0x8000;
  for (let i = 0; i < bytes.length; i += step) binary += String.fromCharCode(...bytes.subarray(i, i + step));
  return btoa(binary);
}

export function base64ToBytes(text: string): Uint8Array {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** A capture file's text for a recording. */
export function formatCaptureFile(recording: Recording, capturedBy?: string): string {
  const file: CaptureFile = {
    format: CAPTURE_FORMAT,
    version: 1,
    reads: recording.reads.map((read) => ({ atMs: read.atMs ?? 0, base64: bytesToBase64(read.bytes) })),
    end: recording.end,
  };
  if (capturedBy !== undefined) file.capturedBy = capturedBy;
  if (recording.dialect !== undefined) file.dialect = recording.dialect;
  if (recording.request !== undefined) file.request = recording.request;
  if (recording.response !== undefined) {
    const { status, statusText, headers, atMs } = recording.response;
    file.response = { status, statusText, headers };
    if (atMs !== undefined) file.response.atMs = atMs;
  }
  return `${JSON.stringify(file, null, 1)}\n`;
}

/**
 * The recording in a capture file, or undefined when `bytes` is not one (a raw body: the caller reads it
 * as such). Throws a TypeError naming what is wrong when it says it is a capture but is malformed.
 */
export function parseCaptureFile(bytes: Uint8Array, name?: string): Recording | undefined {
  let start = 0;
  while (start < bytes.length && (bytes[start] === 0x20 || bytes[start] === 0x0a || bytes[start] === 0x0d))
    start++;
  if (bytes[start] !== 0x7b) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return undefined;
  }
  if (
    typeof value !== 'object' ||
    value === null ||
    (value as { format?: unknown }).format !== CAPTURE_FORMAT
  )
    return undefined;
  const file = value as Partial<CaptureFile>;
  if (file.version !== 1)
    throw new TypeError(`unsupported ${CAPTURE_FORMAT} version ${String(file.version)}`);
  if (!Array.isArray(file.reads)) throw new TypeError(`${CAPTURE_FORMAT}: "reads" must be a list`);
  const recording: Recording = {
    source: 'file',
    reads: file.reads.map((read, i) => {
      if (typeof read?.base64 !== 'string' || typeof read.atMs !== 'number')
        throw new TypeError(`${CAPTURE_FORMAT}: read ${i} needs "atMs" (a number) and "base64"`);
      return { atMs: read.atMs, bytes: base64ToBytes(read.base64) };
    }),
    end: { kind: 'eof' },
  };
  const end = file.end;
  if (end !== undefined && END_KINDS.includes(end.kind)) {
    recording.end = { kind: end.kind };
    if (typeof end.atMs === 'number') recording.end.atMs = end.atMs;
    if (typeof end.message === 'string') recording.end.message = end.message;
  }
  if (name !== undefined) recording.name = name;
  if (typeof file.dialect === 'string' && (DIALECT_IDS as readonly string[]).includes(file.dialect)) {
    recording.dialect = file.dialect;
    recording.dialectSource = 'flag';
  }
  if (file.request !== undefined) recording.request = file.request;
  const response = file.response;
  if (response !== undefined && typeof response.status === 'number') {
    recording.response = {
      status: response.status,
      statusText: typeof response.statusText === 'string' ? response.statusText : '',
      headers: response.headers ?? {},
      atMs: response.atMs,
    };
  }
  return recording;
}

/** The raw body of a recording: every read's bytes in order (what `inspect --file` reads as a body). */
export function recordingBody(recording: Recording): Uint8Array {
  const total = recording.reads.reduce((sum, read) => sum + read.bytes.length, 0);
  const out = new Uint8Array(total);
  let offset = 0;
  for (const read of recording.reads) {
    out.set(read.bytes, offset);
    offset += read.bytes.length;
  }
  return out;
}
