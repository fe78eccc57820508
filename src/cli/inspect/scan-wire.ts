import type { RecordedRead } from '../../capture/recording.ts';
import type { Framing } from '../../dialects/dialect.ts';
import type { Frame } from '../../wire/frame.ts';
import { NdjsonDecoder } from '../../wire/ndjson-decoder.ts';
import { SseDecoder } from '../../wire/sse-decoder.ts';
import { firstInvalidUtf8 } from './first-invalid-utf8.ts';

/** One frame on the wire: an SSE event or an NDJSON line, with where its bytes sat. */
export interface WireFrame {
  /** 1-based, in arrival order. */
  n: number;
  frame: Frame;
  /** Byte range [start, end) in the body, its terminator included. */
  start: number;
  end: number;
  /** 1-based reads holding its first and last byte: different when the reads split it. */
  firstRead: number;
  lastRead: number;
  /** When it was whole: the arrival time of its last read. */
  atMs: number | undefined;
  /** The frame's bytes as text (invalid UTF-8 shown as U+FFFD), without the final line ends. */
  raw: string;
  /** Body offset of the first byte that is not UTF-8, when there is one. */
  invalidUtf8At?: number | undefined;
  /** An NDJSON line the body ended in without its newline. */
  unterminated?: boolean | undefined;
}

/** An SSE comment line (`:` first): the keepalives of TGI and llama-server. */
export interface WireComment {
  text: string;
  start: number;
  end: number;
  read: number;
  atMs: number | undefined;
}

export interface WireScan {
  framing: Framing;
  frames: WireFrame[];
  comments: WireComment[];
  /** Bytes after the last complete event that never became one (the body ended inside an event). */
  partialTail?: { start: number; end: number; firstRead: number; raw: string } | undefined;
  /** SSE `data:` lines written without the space after the colon (TGI up to 2.0.x). */
  dataWithoutSpace: number;
  dataWithSpace: number;
  /** The wire decoder gave up (a line past the size limit): frames stop there. */
  failure?: string | undefined;
}

/** The body as one byte array, with where each read starts. */
export interface Body {
  bytes: Uint8Array;
  /** Body offset of each read's first byte. */
  readStarts: number[];
}

export function joinReads(reads: readonly RecordedRead[]): Body {
  let total = 0;
  for (const read of reads) total += read.bytes.length;
  const bytes = new Uint8Array(total);
  const readStarts: number[] = [];
  let at = 0;
  for (const read of reads) {
    readStarts.push(at);
    bytes.set(read.bytes, at);
    at += read.bytes.length;
  }
  return { bytes, readStarts };
}

/** The 1-based read that holds body offset `offset`. */
export function readAt(readStarts: readonly number[], offset: number): number {
  let lo = 0;
  let hi = readStarts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (readStarts[mid]! <= offset) lo = mid;
    else hi = mid - 1;
  }
  return lo + 1;
}

const LF = 0x0a;
const CR = 0x0d;
const COLON = 0x3a;

/**
 * Splits a recorded body into frames and comments with the project's own wire decoders, fed one line
 * at a time so every frame gets its exact byte range, and so its reads (a frame whose bytes came in
 * two reads was split by the network). Invalid UTF-8 is decoded as U+FFFD and pointed at, never fatal.
 */
export function scanWire(
  reads: readonly RecordedRead[],
  framing: Framing,
  body = joinReads(reads),
): WireScan {
  const { bytes, readStarts } = body;
  const lossy = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });
  const scan: WireScan = { framing, frames: [], comments: [], dataWithoutSpace: 0, dataWithSpace: 0 };
  const timeOf = (read: number) => reads[read - 1]?.atMs;
  let eventStart: number | undefined;
  let line = { start: 0, end: 0 };

  const addFrame = (frame: Frame, start: number, end: number, unterminated = false) => {
    const firstRead = readAt(readStarts, start);
    const lastRead = readAt(readStarts, Math.max(start, end - 1));
    let rawEnd = end;
    while (rawEnd > start && (bytes[rawEnd - 1] === LF || bytes[rawEnd - 1] === CR)) rawEnd -= 1;
    const wire: WireFrame = {
      n: scan.frames.length + 1,
      frame,
      start,
      end,
      firstRead,
      lastRead,
      atMs: timeOf(lastRead),
      raw: lossy.decode(bytes.subarray(start, rawEnd)),
    };
    const bad = firstInvalidUtf8(bytes, start, end);
    if (bad !== -1) wire.invalidUtf8At = bad;
    if (unterminated) wire.unterminated = true;
    scan.frames.push(wire);
  };

  const decoder =
    framing === 'sse'
      ? new SseDecoder({
          invalidUtf8: 'replace',
          onFrame: (frame) => {
            addFrame(frame, eventStart ?? line.start, line.end);
            eventStart = undefined;
          },
          onComment: (text) => {
            const read = readAt(readStarts, line.start);
            scan.comments.push({ text, start: line.start, end: line.end, read, atMs: timeOf(read) });
          },
        })
      : new NdjsonDecoder({
          invalidUtf8: 'replace',
          onFrame: (frame) => addFrame(frame, line.start, line.end),
        });

  let pos = 0;
  try {
    while (pos < bytes.length) {
      const start = pos;
      let end = -1;
      let next = bytes.length;
      for (let i = pos; i < bytes.length; i++) {
        const b = bytes[i];
        if (b === LF) {
          end = i;
          next = i + 1;
          break;
        }
        if (b === CR && framing === 'sse') {
          end = i;
          next = bytes[i + 1] === LF ? i + 2 : i + 1;
          break;
        }
      }
      if (end === -1) break;
      line = { start, end: next };
      if (framing === 'sse') {
        const blank = end === start || (start === 0 && isBom(bytes, start, end));
        if (blank) {
          decoder.feed(bytes.subarray(start, next));
          eventStart = undefined;
        } else {
          if (bytes[start] !== COLON) {
            eventStart ??= start;
            countDataSpacing(scan, bytes, start, end);
          }
          decoder.feed(bytes.subarray(start, next));
        }
      } else {
        decoder.feed(bytes.subarray(start, next));
      }
      pos = next;
    }
    if (pos < bytes.length) {
      // The body ended without a final line end.
      const start = pos;
      line = { start, end: bytes.length };
      if (framing === 'sse' && bytes[start] !== COLON) eventStart ??= start;
      decoder.feed(bytes.subarray(start));
      if (framing === 'ndjson') {
        const before = scan.frames.length;
        decoder.end();
        const last = scan.frames[before];
        if (last !== undefined) last.unterminated = true;
      } else if (decoder.end()) {
        const tailStart = eventStart ?? start;
        scan.partialTail = tail(bytes, readStarts, tailStart, lossy);
      }
    } else if (framing === 'sse' && decoder.end() && eventStart !== undefined) {
      scan.partialTail = tail(bytes, readStarts, eventStart, lossy);
    } else if (framing === 'ndjson') {
      decoder.end();
    }
  } catch (error) {
    scan.failure = error instanceof Error ? error.message : String(error);
  }
  return scan;
}

function tail(
  bytes: Uint8Array,
  readStarts: readonly number[],
  start: number,
  lossy: { decode(input: Uint8Array): string },
): NonNullable<WireScan['partialTail']> {
  return {
    start,
    end: bytes.length,
    firstRead: readAt(readStarts, start),
    raw: lossy.decode(bytes.subarray(start)),
  };
}

function isBom(bytes: Uint8Array, start: number, end: number): boolean {
  return end - start === 3 && bytes[start] === 0xef && bytes[start + 1] === 0xbb && bytes[start + 2] === 0xbf;
}

/** Counts `data:` lines with and without the optional space (the TGI <= 2.0 fingerprint). */
function countDataSpacing(scan: WireScan, bytes: Uint8Array, start: number, end: number): void {
  // "data:" = 64 61 74 61 3a
  if (
    end - start >= 5 &&
    bytes[start] === 0x64 &&
    bytes[start + 1] === 0x61 &&
    bytes[start + 2] === 0x74 &&
    bytes[start + 3] === 0x61 &&
    bytes[start + 4] === COLON
  ) {
    if (bytes[start + 5] === 0x20) scan.dataWithSpace += 1;
    else scan.dataWithoutSpace += 1;
  }
}
