import type { DialectId } from '../../dialects/dialect.ts';
import { snippet } from '../../errors.ts';
import type { DecodedFrame } from './analyze-recording.ts';
import { errorShape } from './error-shape.ts';
import { type Finding, finding } from './finding.ts';

// What the payloads say: bytes that are not UTF-8, frames that do not decode, errors inside the stream.

export function invalidUtf8Finding(frames: readonly DecodedFrame[]): Finding | undefined {
  const bad = frames.filter((frame) => frame.invalidUtf8At !== undefined);
  if (bad.length === 0) return undefined;
  const first = bad[0]!;
  return finding(
    'invalid-utf8',
    `${bad.length} frame(s) hold bytes that are not UTF-8 (first at body byte ${first.invalidUtf8At}, frame ${first.n}); shown as U+FFFD`,
    'strict clients fail on the whole stream: the server (or a proxy re-encoding it) writes raw bytes of broken characters; a server must hold back partial UTF-8 sequences',
    { frames: bad.map((frame) => frame.n), firstOffset: first.invalidUtf8At },
  );
}

export function malformedFinding(frames: readonly DecodedFrame[]): Finding | undefined {
  const bad = frames.filter((frame) => frame.decodeError !== undefined);
  if (bad.length === 0) return undefined;
  const first = bad[0]!;
  return finding(
    'malformed-payload',
    `${bad.length} frame(s) could not be decoded; frame ${first.n}: ${first.decodeError}`,
    'the payload is not JSON or not this dialect: check --dialect, and whether a proxy rewrites or splits the events',
    { frames: bad.map((frame) => frame.n) },
  );
}

export function serverErrorFindings(
  frames: readonly DecodedFrame[],
  dialect: DialectId | undefined,
): Finding[] {
  const out: Finding[] = [];
  for (const frame of frames) {
    for (const event of frame.events) {
      if (event.type !== 'error') continue;
      const shape = errorShape(frame, event, dialect);
      const status = event.status === undefined ? '' : ` (status ${event.status})`;
      const type = event.errorType === undefined ? '' : ` [${event.errorType}]`;
      out.push(
        finding(
          'server-error',
          `frame ${frame.n}: the server reported an error inside the stream${status}${type}: ${snippet(event.message, 160)} — ${shape}`,
          'the answer is incomplete: the server log has the cause; clients must check every payload for an error, since the HTTP status was already 200',
          { frame: frame.n, message: event.message, status: event.status, errorType: event.errorType, shape },
        ),
      );
      if (frame.frame.legacyError === true) {
        out.push(
          finding(
            'legacy-error-field',
            `frame ${frame.n} is an \`error: {...}\` line, which is not an SSE field (llama-server before Sep 2025)`,
            'spec-compliant SSE parsers (EventSource, most SDKs) drop it silently and show a cut answer as finished: upgrade llama.cpp, or use a client that reads it',
          ),
        );
      }
    }
  }
  return out;
}
