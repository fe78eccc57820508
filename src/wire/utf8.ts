import { quickUtf8 } from './byte-search.ts';
import { WireError } from './wire-error.ts';

export type InvalidUtf8Policy = 'error' | 'replace';

/** Decodes whole lines. Lines never split a character, so no streaming state is needed. */
export class LineDecoder {
  // Made on first use: where Buffer decodes (quickUtf8) they are needed only for invalid bytes, and two
  // TextDecoders cost about 3 µs per stream in Node 20 (bench/gateway-request-cost.ts, --cpu-prof).
  #strict: InstanceType<typeof TextDecoder> | undefined;
  #lenient: InstanceType<typeof TextDecoder> | undefined;
  readonly #policy: InvalidUtf8Policy;
  /** Count of lines that held invalid UTF-8 (only grows under the `replace` policy). */
  invalidLines = 0;

  constructor(policy: InvalidUtf8Policy = 'error') {
    this.#policy = policy;
  }

  decode(bytes: Uint8Array, start: number, end: number, byteOffset: number): string {
    if (start === end) return '';
    const quick = quickUtf8(bytes, start, end);
    if (quick !== undefined) return quick;
    const view = start === 0 && end === bytes.length ? bytes : bytes.subarray(start, end);
    try {
      this.#strict ??= new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
      return this.#strict.decode(view);
    } catch (cause) {
      if (this.#policy === 'replace') {
        this.invalidLines += 1;
        this.#lenient ??= new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });
        return this.#lenient.decode(view);
      }
      throw new WireError('invalid-utf8', `the stream holds invalid UTF-8 near byte ${byteOffset}`, {
        byteOffset,
        cause,
      });
    }
  }
}
