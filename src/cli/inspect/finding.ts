/**
 * How bad a finding is.
 * - `error`: the stream is broken or the answer is wrong: a client gets an incomplete, failed or
 *   garbled answer, or cannot read the stream at all.
 * - `warning`: the answer arrives, but something will bite: it was cut off, held back by a buffer,
 *   lacks `[DONE]` or usage, or the headers invite proxies to mangle it.
 * - `info`: facts worth knowing (the dialect, the server, keepalives).
 * `tokenwire inspect` exits non-zero when any error or warning is found (`--fail-on error` narrows it).
 */
export type Severity = 'error' | 'warning' | 'info';

/** One conclusion about a stream. `id` is stable: CI scripts and tests key on it. */
export interface Finding {
  id: FindingId;
  severity: Severity;
  /** One line: what was seen. */
  message: string;
  /** One line: what to do about it. */
  hint?: string | undefined;
  /** Figures behind the conclusion (for --json). */
  details?: Record<string, unknown> | undefined;
}

/** Every finding inspect can report, with its fixed severity and a title (for --help and docs). */
export const FINDINGS = {
  dialect: { severity: 'info', title: 'the wire dialect, and how it was decided' },
  server: {
    severity: 'info',
    title: "which server wrote the stream (from its headers' and payloads' fingerprints)",
  },
  keepalive: { severity: 'info', title: 'SSE comment lines (keepalives) arrived' },
  continued: {
    severity: 'info',
    title: 'the gateway continued the answer on another replica after its server failed (a seam comment)',
  },
  'usage-not-requested': {
    severity: 'info',
    title: 'no token usage, and the request did not ask for it',
  },
  interrupted: { severity: 'info', title: 'the capture was stopped with Ctrl-C' },
  'local-stall': {
    severity: 'info',
    title: "inspect's own process was too busy to read for a while: read times near that are ours",
  },
  'request-failed': { severity: 'error', title: 'no response: refused, unreachable or timed out' },
  'http-error': { severity: 'error', title: 'the server answered with an HTTP error status' },
  'not-streaming': { severity: 'error', title: 'one JSON document instead of a stream' },
  'empty-body': { severity: 'error', title: 'a 2xx response with no body bytes' },
  'unknown-dialect': {
    severity: 'error',
    title: 'the dialect could not be told from the path or the payloads',
  },
  'unknown-framing': { severity: 'error', title: 'the body is neither SSE nor NDJSON' },
  'ndjson-instead-of-sse': { severity: 'error', title: 'NDJSON lines where the dialect sends SSE' },
  'sse-instead-of-ndjson': { severity: 'error', title: 'SSE events where the dialect sends NDJSON' },
  'missing-terminal-event': {
    severity: 'error',
    title: "the stream ended without its dialect's terminal event",
  },
  stalled: { severity: 'error', title: 'the server went silent mid-stream (idle timeout)' },
  'server-error': { severity: 'error', title: 'the server reported an error inside the stream' },
  'malformed-payload': { severity: 'error', title: 'a frame that is not JSON or not this dialect' },
  'control-tokens': { severity: 'error', title: 'control tokens (<|eot_id|>, </s>…) leaked into the text' },
  'ignored-stop': { severity: 'error', title: 'a stop string from the request appears in the text' },
  'invalid-utf8': { severity: 'error', title: 'bytes that are not UTF-8' },
  'content-type-missing': { severity: 'warning', title: 'no Content-Type header' },
  'content-type-wrong': { severity: 'warning', title: 'a Content-Type that does not match the body' },
  compressed: { severity: 'warning', title: 'a compressed (Content-Encoding) stream' },
  'missing-done': { severity: 'warning', title: 'no data: [DONE] where the dialect sends one' },
  'legacy-error-field': {
    severity: 'warning',
    title: 'the non-SSE `error:` line of llama-server before Sep 2025',
  },
  truncated: { severity: 'warning', title: 'finish "length": the output cap cut the answer off' },
  'completed-at-cap': {
    severity: 'warning',
    title: 'a Responses stream says "completed" but its output count reached the cap (llama-server)',
  },
  'sequence-gap': {
    severity: 'error',
    title: 'a Responses sequence_number skipped or went back: an event was lost or reordered',
  },
  'sequence-missing': {
    severity: 'warning',
    title: 'a Responses event without the sequence_number the others carry',
  },
  'after-terminal': {
    severity: 'warning',
    title: 'events after the terminal one (response.completed, .incomplete, .failed)',
  },
  buffering: { severity: 'warning', title: 'events held back and released in bursts (a buffering proxy)' },
  'usage-absent': { severity: 'warning', title: 'no token usage where the server should send it' },
  'cumulative-text': { severity: 'warning', title: 'every event repeats the whole text so far' },
} as const satisfies Record<string, { severity: Severity; title: string }>;

export type FindingId = keyof typeof FINDINGS;

/** Makes a finding with its catalogue severity. */
export function finding(
  id: FindingId,
  message: string,
  hint?: string,
  details?: Record<string, unknown>,
): Finding {
  const out: Finding = { id, severity: FINDINGS[id].severity, message };
  if (hint !== undefined) out.hint = hint;
  if (details !== undefined) out.details = details;
  return out;
}

export const SEVERITY_ORDER: Record<Severity, number> = { error: 0, warning: 1, info: 2 };

/** True when the finding counts as a problem at this threshold. */
export function isProblem(f: Finding, failOn: 'error' | 'warning'): boolean {
  return f.severity === 'error' || (failOn === 'warning' && f.severity === 'warning');
}
