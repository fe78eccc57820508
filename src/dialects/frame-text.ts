import { encodeSseEvent } from '../wire/sse-encoder.ts';
import type { DialectEncoder, FrameKind } from './dialect.ts';

/**
 * Frames one encoded payload as wire text: an SSE event (optionally with an `event:` name and an `id:`),
 * the legacy llama-server `error:` line, or an NDJSON line.
 */
export function frameText(
  encoder: Pick<DialectEncoder, 'framing' | 'sseSpace'>,
  data: string,
  kind?: FrameKind,
  id?: string,
): string {
  if (encoder.framing === 'ndjson') return `${data}\n`;
  if (kind === 'legacy-error-field') return `error: ${data}\n\n`;
  // An event name comes from the encoder (a constant); the line order is the servers' own: `event:` first.
  const named = kind === undefined ? '' : `event: ${kind}\n`;
  if (id === undefined) return encoder.sseSpace ? `${named}data: ${data}\n\n` : `${named}data:${data}\n\n`;
  // A payload is one line (FrameSink's contract: JSON or a sentinel), so it is not searched for line
  // breaks: that search would flatten the encoder's string into a copy of its own, which a stored frame
  // (resume-store.ts) would then keep. Ids come from elsewhere (a resumed stream's is the client's):
  // checked, and anything but the gateway's own alphabet goes through the full encoder.
  if (SAFE_ID.test(id)) {
    return encoder.sseSpace ? `${named}id: ${id}\ndata: ${data}\n\n` : `${named}id: ${id}\ndata:${data}\n\n`;
  }
  return encodeSseEvent({ data, id, event: kind }, { space: encoder.sseSpace });
}

const SAFE_ID = /^[A-Za-z0-9._-]+$/;
