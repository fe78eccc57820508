import { TokenwireError } from '../errors.ts';

/**
 * What went wrong below the dialect level. Overflow and invalid UTF-8 are fatal: the decoder stops
 * and reports; it never grows memory past its limit.
 */
export type WireErrorCode =
  | 'line-too-long'
  | 'event-too-large'
  | 'invalid-utf8'
  | 'invalid-sse-field'
  | 'invalid-json'
  | 'decoder-failed';

export class WireError extends TokenwireError {
  declare readonly code: WireErrorCode;
  /** Offset in the byte stream where the problem was found, when known. */
  readonly byteOffset: number | undefined;

  constructor(code: WireErrorCode, message: string, options: { byteOffset?: number; cause?: unknown } = {}) {
    super(code, message, options.cause === undefined ? {} : { cause: options.cause });
    this.name = 'WireError';
    this.byteOffset = options.byteOffset;
  }
}

/** Default bound on one line (and one SSE event): 1 MiB. */
export const DEFAULT_MAX_LINE_BYTES = 1024 * 1024;
