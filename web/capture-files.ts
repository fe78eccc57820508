/**
 * The capture files of the raw wire panel: "Save capture" (the stream's bytes and read timings, a
 * `tokenwire-capture` JSON file), "Save body" (the raw body), and "Load capture", which replays either
 * through the client at its recorded pace. A loaded body's dialect is found as `tokenwire inspect
 * --file` finds it: the client's detection (src/dialects/registry.ts `detectDialect`) from the body's
 * framing and first payload, never the dialect picked in the bar.
 */
import {
  CAPTURE_FORMAT,
  formatCaptureFile,
  parseCaptureFile,
  recordingBody,
} from '../src/capture/capture-file.ts';
import type { Recording } from '../src/capture/recording.ts';
import { stream } from '../src/client/token-stream.ts';
import { getDialect } from '../src/dialects/registry.ts';
import { consume, startRun, wireHooks } from './answer-view.ts';
import { byId, showStatus } from './by-id.ts';
import { download } from './download.ts';
import { session } from './run.ts';

/** A replayed capture waits at most this long between reads (a capture of a long stall plays quickly). */
const MAX_REPLAY_GAP_MS = 1500;
/**
 * The URL a replay is "fetched" from when the capture recorded none: a path no dialect serves, so the
 * client detects the dialect from the bytes alone.
 */
const NEUTRAL_PATH = 'replayed-capture';

const loadCaptureInput = byId<HTMLInputElement>('load-capture');

export function initCaptureFiles(): void {
  byId('save-capture').addEventListener('click', saveCapture);
  byId('save-body').addEventListener('click', saveBody);
  loadCaptureInput.addEventListener('change', () => void loadCapture());
}

function saveCapture(): void {
  const recording = session.lastRecording;
  if (recording === undefined) return;
  download(
    formatCaptureFile(recording, `tokenwire playground ${new Date().toISOString()}`),
    `tokenwire-${recording.dialect ?? 'stream'}.capture.json`,
    'application/json',
  );
}

function saveBody(): void {
  const recording = session.lastRecording;
  if (recording === undefined) return;
  const framing = recording.dialect === undefined ? 'sse' : getDialect(recording.dialect).framing;
  download(
    recordingBody(recording),
    `tokenwire-${recording.dialect ?? 'stream'}.${framing}`,
    'application/octet-stream',
  );
}

/** Replays a saved capture (or a raw body) through the client, at its recorded pace. */
async function loadCapture(): Promise<void> {
  const file = loadCaptureInput.files?.[0];
  loadCaptureInput.value = '';
  if (file === undefined || session.current !== undefined) return;
  const bytes = new Uint8Array(await file.arrayBuffer());
  let recording: Recording | undefined;
  try {
    recording = parseCaptureFile(bytes, file.name);
  } catch (error) {
    showStatus(`${file.name} is not a readable ${CAPTURE_FORMAT}: ${(error as Error).message}`);
    return;
  }
  recording ??= { source: 'file', name: file.name, reads: [{ atMs: 0, bytes }], end: { kind: 'eof' } };
  // The capture's own dialect when it names one; otherwise the client finds it from the recorded URL's
  // path, the Content-Type, the body's framing and its first payload.
  const dialect = recording.dialect;
  const reads = recording.reads;
  const end = recording.end;
  const head = recording.response;
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      let clock = 0;
      for (const read of reads) {
        const at = read.atMs ?? clock;
        await new Promise((resolve) =>
          setTimeout(resolve, Math.min(MAX_REPLAY_GAP_MS, Math.max(0, at - clock))),
        );
        clock = at;
        controller.enqueue(read.bytes);
      }
      if (end.kind === 'eof' || end.kind === 'interrupted') controller.close();
      else controller.error(new TypeError(end.message ?? end.kind));
    },
  });
  // Only the Content-Type the capture recorded: none for a raw body (the client reads the framing from
  // the bytes, as inspect does).
  const response = new Response(body, {
    status: head?.status ?? 200,
    headers: new Headers(head?.headers ?? {}),
  });
  const recordedUrl = recording.request?.url;
  const url = new URL(recordedUrl ?? NEUTRAL_PATH, window.location.href);
  const run = startRun(dialect, undefined);
  showStatus(
    `Replaying ${file.name} (${reads.length} reads, ${dialect ?? 'dialect detected from the body'})…`,
  );
  const tokens = stream(
    { url, dialect, body: {} },
    { signal: run.controller.signal, fetch: async () => response, ...wireHooks(run) },
  );
  const ended = await consume(run, tokens);
  const found = ended.result?.dialect;
  const how =
    dialect !== undefined ? 'as the capture says' : found === undefined ? 'not detected' : 'detected';
  showStatus(
    `Replayed ${file.name} (${found ?? dialect ?? 'unknown dialect'}, ${how}): ${ended.outcome.kind}.`,
  );
}
