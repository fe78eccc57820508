import type {
  Dialect,
  DialectDecoder,
  EncoderOptions,
  FrameKind,
  MidStreamError,
} from '../../src/dialects/dialect.ts';
import { frameText } from '../../src/dialects/frame-text.ts';
import { StreamDecoder } from '../../src/dialects/stream-decoder.ts';
import type { StreamEvent } from '../../src/events/stream-event.ts';
import type { Frame } from '../../src/wire/frame.ts';

export interface Decoded {
  events: StreamEvent[];
  complete: boolean;
  terminated: boolean;
  sawTerminator: boolean;
  /** The bytes ended inside a frame. */
  partial: boolean;
}

/** Bytes (as reads) -> events, through the same StreamDecoder the client uses. */
export function decodeChunks(dialect: Dialect, chunks: Iterable<Uint8Array>): Decoded {
  const events: StreamEvent[] = [];
  const decoder = new StreamDecoder(dialect, (event) => events.push(event));
  for (const chunk of chunks) decoder.feed(chunk);
  const partial = decoder.end();
  return {
    events,
    complete: decoder.state.complete,
    terminated: decoder.state.terminated,
    sawTerminator: decoder.state.sawTerminator,
    partial,
  };
}

export interface EncodeOptions extends EncoderOptions {
  /** How the stream ends: cleanly (default), with a mid-stream error, or cut with nothing more. */
  ending?: { kind: 'complete' } | { kind: 'error'; error: MidStreamError } | { kind: 'cut' };
}

/** Events -> the wire text the dialect's server would write. */
export function encodeEvents(
  dialect: Dialect,
  events: readonly StreamEvent[],
  options: EncodeOptions = {},
): string {
  const encoder = dialect.createEncoder(options);
  let out = '';
  const sink = (data: string, kind?: FrameKind) => {
    // FrameSink's contract: relays frame payloads without searching them for line breaks.
    if (/[\r\n]/.test(data)) throw new Error(`a payload holds a line break: ${JSON.stringify(data)}`);
    out += frameText(encoder, data, kind);
  };
  for (const event of events) encoder.event(event, sink);
  const ending = options.ending ?? { kind: 'complete' };
  if (ending.kind === 'complete') encoder.end(sink);
  else if (ending.kind === 'error') encoder.error(ending.error, sink);
  return out;
}

/** What a decoder makes of one frame: its events, or the message of the error it threw. */
export type Outcome = { events: StreamEvent[] } | { error: string };

export function outcome(decoder: DialectDecoder, frame: Frame): Outcome {
  const events: StreamEvent[] = [];
  try {
    decoder.frame(frame, (event) => events.push(event));
    return { events };
  } catch (error) {
    return { error: (error as Error).message };
  }
}
