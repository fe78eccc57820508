import { quickUtf8 } from './byte-search.ts';
import { WireError } from './wire-error.ts';

export type InvalidUtf8Policy = 'error' | 'replace';

/** Decodes whole lines. Lines never split a character, so no streaming state is needed. */
export class LineDecoder {
  readonly #strict = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  readonly #lenient = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });
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
      return this.#strict.decode(view);
    } catch (cause) {
      if (this.#policy === 'replace') {
        this.invalidLines += 1;
        return this.#lenient.decode(view);
      }
      throw new WireError('invalid-utf8', `the stream holds invalid UTF-8 near byte ${byteOffset}`, {
        byteOffset,
        cause,
      });
    }
  }
}
