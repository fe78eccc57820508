import { encodeSseEvent } from '../wire/sse-encoder.ts';
import type { DialectEncoder } from './dialect.ts';

/**
 * Frames one encoded payload as wire text: an SSE event (optionally with an `id:`), the legacy
 * llama-server `error:` line, or an NDJSON line.
 */
export function frameText(
  encoder: Pick<DialectEncoder, 'framing' | 'sseSpace'>,
  data: string,
  kind?: 'legacy-error-field',
  id?: string,
): string {
  if (encoder.framing === 'ndjson') return `${data}\n`;
  if (kind === 'legacy-error-field') return `error: ${data}\n\n`;
  if (id === undefined) return encoder.sseSpace ? `data: ${data}\n\n` : `data:${data}\n\n`;
  // A payload is one line (FrameSink's contract: JSON or a sentinel), so it is not searched for line
  // breaks: that search would flatten the encoder's string into a copy of its own, which a stored frame
  // (resume-store.ts) would then keep. Ids come from elsewhere (a resumed stream's is the client's):
  // checked, and anything but the gateway's own alphabet goes through the full encoder.
  if (SAFE_ID.test(id)) {
    return encoder.sseSpace ? `id: ${id}\ndata: ${data}\n\n` : `id: ${id}\ndata:${data}\n\n`;
  }
  return encodeSseEvent({ data, id }, { space: encoder.sseSpace });
}

const SAFE_ID = /^[A-Za-z0-9._-]+$/;
