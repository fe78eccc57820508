import type { FrameKind, Framing } from '../dialects/dialect.ts';
import { frameText } from '../dialects/frame-text.ts';
import { encodeSseComment } from '../wire/sse-encoder.ts';
import type { Faults } from './faults.ts';
import { type Rng, randomInt } from './prng.ts';

export interface WireWriterOptions {
  /** The framing the encoder writes for; the `framing` fault overrides it. */
  framing: Framing;
  sseSpace: boolean;
  faults: Faults;
  /** For `split=random`. */
  rng: Rng;
  now: () => number;
  /** Where each (possibly split) write goes. */
  write: (bytes: Uint8Array) => void;
}

/** The byte that is never valid in UTF-8, injected by the `invalid-utf8` fault. */
export const INVALID_UTF8_BYTE = 0xff;

/**
 * Encoded payloads -> bytes on the wire, with the byte-level faults applied after the encoder has
 * done its job: wrong framing, injected invalid UTF-8, proxy-style buffering, and split writes.
 */
export class WireWriter {
  readonly framing: Framing;
  readonly #options: WireWriterOptions;
  readonly #encoder = new TextEncoder();
  #pending: Uint8Array[] = [];
  #lastRelease: number;

  constructor(options: WireWriterOptions) {
    this.#options = options;
    this.framing = options.faults.framing ?? options.framing;
    this.#lastRelease = options.now();
  }

  /**
   * Writes one payload, framed. With `corrupt`, an invalid byte goes at the start of that text where
   * it is a JSON string value in the payload; returns false when it is not there (nothing injected).
   */
  payload(data: string, kind?: FrameKind, corrupt?: string): boolean {
    // NDJSON encoders have no say on SSE spacing: forced SSE uses the common `data: `.
    const sseSpace = this.#options.framing === 'sse' ? this.#options.sseSpace : true;
    const text = frameText({ framing: this.framing, sseSpace }, data, kind);
    let bytes = this.#encoder.encode(text);
    let injected = false;
    if (corrupt !== undefined && corrupt !== '') {
      const at = text.indexOf(JSON.stringify(corrupt));
      if (at !== -1) {
        const offset = this.#encoder.encode(text.slice(0, at + 1)).length;
        const out = new Uint8Array(bytes.length + 1);
        out.set(bytes.subarray(0, offset));
        out[offset] = INVALID_UTF8_BYTE;
        out.set(bytes.subarray(offset), offset + 1);
        bytes = out;
        injected = true;
      }
    }
    this.#send(bytes);
    return injected;
  }

  /** A keepalive comment; nothing in NDJSON framing, which has no comments. */
  comment(): boolean {
    if (this.framing !== 'sse') return false;
    this.#send(this.#encoder.encode(encodeSseComment()));
    return true;
  }

  /** Releases anything the `buffer` fault holds (at the end of the stream). */
  flush(): void {
    if (this.#pending.length > 0) this.#release();
  }

  #send(bytes: Uint8Array): void {
    const hold = this.#options.faults.buffer;
    if (hold === undefined) {
      this.#split(bytes);
      return;
    }
    this.#pending.push(bytes);
    if (this.#options.now() - this.#lastRelease >= hold) this.#release();
  }

  #release(): void {
    const total = this.#pending.reduce((sum, chunk) => sum + chunk.length, 0);
    const burst = new Uint8Array(total);
    let offset = 0;
    for (const chunk of this.#pending) {
      burst.set(chunk, offset);
      offset += chunk.length;
    }
    this.#pending = [];
    this.#lastRelease = this.#options.now();
    this.#split(burst);
  }

  #split(bytes: Uint8Array): void {
    const cuts = this.#cuts(bytes);
    let previous = 0;
    for (const cut of cuts) {
      this.#options.write(bytes.slice(previous, cut));
      previous = cut;
    }
    if (previous < bytes.length) this.#options.write(previous === 0 ? bytes : bytes.slice(previous));
  }

  /** Sorted cut offsets strictly inside the write. */
  #cuts(bytes: Uint8Array): number[] {
    const { faults, rng } = this.#options;
    const length = bytes.length;
    if (length < 2) return [];
    const cuts = new Set<number>();
    if (faults.bytewise === true) for (let i = 1; i < length; i++) cuts.add(i);
    if (faults.split === 'random') {
      const count = randomInt(rng, 1, 3);
      for (let i = 0; i < count; i++) cuts.add(randomInt(rng, 1, length - 1));
    } else if (faults.split !== undefined) {
      for (const cut of faults.split) if (cut > 0 && cut < length) cuts.add(cut);
    }
    if (faults.splitUtf8 === true) {
      // After the lead byte of every multi-byte character (lead bytes are 11xxxxxx).
      for (let i = 0; i < length - 1; i++) if (((bytes[i] as number) & 0xc0) === 0xc0) cuts.add(i + 1);
    }
    return [...cuts].sort((a, b) => a - b);
  }
}
