import type { LocalStall, RecordedRead, Recording, RecordingEndKind } from '../../capture/recording.ts';
import type { FetchLike } from '../../server/upstream/upstream.ts';
import { redactHeaders } from '../chat/parse-headers.ts';

export interface CaptureOptions {
  url: string;
  method: string;
  headers: Record<string, string>;
  body?: string | undefined;
  fetch: FetchLike;
  /** Ctrl-C. */
  signal: AbortSignal;
  /** Stop after this long in all. */
  totalMs?: number | undefined;
  /** Stop when no byte arrives for this long (also before the headers). */
  idleMs?: number | undefined;
  /** Stop reading past this many body bytes. Default 64 MiB. */
  maxBytes?: number | undefined;
  /** Called after each read (progress display). */
  onRead?: ((reads: number, bytes: number, atMs: number) => void) | undefined;
  now?: (() => number) | undefined;
}

const DEFAULT_MAX_BYTES = 64 * 1024 * 1024;
const STALL_TICK_MS = 10;
/** Timer lateness that counts as a stall (timers are a few ms late on an idle machine). */
const STALL_MIN_MS = 20;

/**
 * Sends one request and records the raw exchange: the response head and every body read with its
 * arrival time, to the end of the body, whatever the bytes are. Unlike the client it never stops at
 * the first bad frame — someone debugging a stream needs to see all of it. Never throws for network
 * trouble: a failure before the response is a recording with no response (`request-failed`).
 */
export async function captureStream(options: CaptureOptions): Promise<Recording> {
  const now = options.now ?? (() => performance.now());
  const started = now();
  const at = () => now() - started;
  const recording: Recording = {
    source: 'live',
    request: {
      method: options.method,
      url: options.url,
      headers: redactHeaders(options.headers),
      body: options.body,
    },
    reads: [],
    end: { kind: 'eof' },
  };
  const controller = new AbortController();
  let stopped: RecordingEndKind | undefined;
  const stop = (kind: RecordingEndKind) => {
    if (stopped !== undefined) return;
    stopped = kind;
    controller.abort(new Error(kind));
  };
  const onInterrupt = () => stop('interrupted');
  if (options.signal.aborted) onInterrupt();
  else options.signal.addEventListener('abort', onInterrupt, { once: true });
  const total =
    options.totalMs === undefined ? undefined : setTimeout(() => stop('total-timeout'), options.totalMs);
  // A timer that should fire every 10 ms: when it fires late, this process was busy and could not read.
  const stalls: LocalStall[] = [];
  recording.localStalls = stalls;
  let tickAt = at();
  const watch = setInterval(() => {
    const t = at();
    if (t - tickAt - STALL_TICK_MS >= STALL_MIN_MS) stalls.push({ fromMs: tickAt + STALL_TICK_MS, toMs: t });
    tickAt = t;
  }, STALL_TICK_MS);
  let idle: ReturnType<typeof setTimeout> | undefined;
  const armIdle = () => {
    if (options.idleMs === undefined) return;
    clearTimeout(idle);
    idle = setTimeout(() => stop('idle-timeout'), options.idleMs);
  };

  try {
    armIdle();
    const init: RequestInit = { method: options.method, headers: options.headers, signal: controller.signal };
    if (options.body !== undefined) init.body = options.body;
    let response: Response;
    try {
      response = await options.fetch(new Request(options.url, init));
    } catch (error) {
      const message =
        stopped === 'idle-timeout' || stopped === 'total-timeout'
          ? `no response headers within the ${stopped === 'idle-timeout' ? 'idle' : 'total'} timeout`
          : failureText(error, stopped);
      recording.end = {
        kind: stopped === 'interrupted' ? 'interrupted' : 'request-failed',
        atMs: at(),
        message,
      };
      return recording;
    }
    recording.response = {
      status: response.status,
      statusText: response.statusText,
      headers: Object.fromEntries(response.headers),
      atMs: at(),
    };
    armIdle();
    const body = response.body;
    if (body === null) {
      recording.end = { kind: 'eof', atMs: at() };
      return recording;
    }
    const reader = body.getReader();
    const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
    let bytes = 0;
    const reads: RecordedRead[] = recording.reads;
    try {
      for (;;) {
        const next = await reader.read();
        if (next.done) break;
        if (next.value.length === 0) continue;
        const atMs = at();
        reads.push({ atMs, bytes: next.value });
        bytes += next.value.length;
        armIdle();
        options.onRead?.(reads.length, bytes, atMs);
        if (bytes > maxBytes) {
          stop('too-large');
          break;
        }
      }
      recording.end = stopped === undefined ? { kind: 'eof', atMs: at() } : { kind: stopped, atMs: at() };
    } catch (error) {
      recording.end = { kind: stopped ?? 'read-error', atMs: at(), message: failureText(error, stopped) };
    } finally {
      reader.cancel().catch(() => {});
    }
    return recording;
  } finally {
    clearTimeout(total);
    clearTimeout(idle);
    clearInterval(watch);
    options.signal.removeEventListener('abort', onInterrupt);
  }
}

function failureText(error: unknown, stopped: RecordingEndKind | undefined): string {
  if (stopped !== undefined) return stopped;
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause;
  if (cause instanceof Error) {
    const code = (cause as { code?: unknown }).code;
    return `${error.message}: ${typeof code === 'string' ? `${code} ` : ''}${cause.message}`;
  }
  return error.message;
}
