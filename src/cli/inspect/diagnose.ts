import { CumulativeTextFilter } from '../../client/cumulative-text.ts';
import { describeFraming } from '../../client/framing.ts';
import { DIALECT_IDS, type DialectId } from '../../dialects/dialect.ts';
import { snippet } from '../../errors.ts';
import type { ErrorEvent, FinishEvent } from '../../events/stream-event.ts';
import type { Analysis, DecodedFrame } from './analyze-recording.ts';
import { findControlTokens } from './find-control-tokens.ts';
import { type Finding, finding, SEVERITY_ORDER } from './finding.ts';

/**
 * The diagnosis: every finding the analysis supports, most severe first. Pure: the same analysis
 * always gives the same findings, so each can be tested from a recording.
 */
export function diagnose(analysis: Analysis): Finding[] {
  const findings: Finding[] = [];
  const add = (f: Finding | undefined) => {
    if (f !== undefined) findings.push(f);
  };
  const recording = analysis.recording;
  const response = recording.response;
  const end = recording.end;

  add(dialectFinding(analysis));
  if (end.kind === 'request-failed') {
    add(requestFailed(end.message ?? 'the request failed', recording.request?.url));
    return sorted(findings);
  }
  if (end.kind === 'interrupted') {
    add(finding('interrupted', 'stopped with Ctrl-C: the diagnosis covers what arrived until then'));
    if (response === undefined) return sorted(findings);
  }
  if (analysis.server !== undefined) {
    const { server, evidence, others } = analysis.server;
    const gateway = server === 'the tokenwire gateway';
    const mixed =
      others.length === 0
        ? ''
        : gateway
          ? `; writing the bytes ${others.join(', ')} writes`
          : `; also traces of ${others.join(', ')} (a gateway or proxy in between?)`;
    add(
      finding('server', `looks like ${server}: ${evidence.join('; ')}${mixed}`, undefined, {
        ...analysis.server,
      }),
    );
  }
  if (response !== undefined && (response.status < 200 || response.status > 299)) {
    add(httpError(response.status, response.statusText, analysis.bodyText ?? ''));
    return sorted(findings);
  }
  if (response !== undefined) add(compression(response.headers));
  if (analysis.wholeJson) {
    add(
      finding(
        'not-streaming',
        response === undefined
          ? 'the capture is one JSON document (a whole answer) instead of a stream'
          : `the server answered with one JSON document (Content-Type: ${analysis.contentType}) instead of a stream`,
        'send "stream": true in the body (OpenAI routes default to false), or use an endpoint that streams',
        { body: snippet(analysis.bodyText ?? '') },
      ),
    );
    return sorted(findings);
  }
  if (response !== undefined) add(contentType(analysis));

  if (analysis.bodyFraming === 'empty') {
    if (end.kind === 'interrupted') return sorted(findings);
    if (end.kind === 'eof')
      add(
        finding(
          'empty-body',
          `HTTP ${response?.status ?? 200} with an empty body: no event at all`,
          'check the server log; a proxy may have dropped the body',
        ),
      );
    else add(endedEarly(analysis));
    return sorted(findings);
  }
  if (analysis.bodyFraming === 'unknown') {
    const text = analysis.bodyText ?? '';
    add(
      finding(
        'unknown-framing',
        `the body is neither SSE nor NDJSON; it starts with ${snippet(text, 80)}`,
        'is this the streaming endpoint? an HTML page means a proxy or login page answered instead of the model server',
      ),
    );
    return sorted(findings);
  }
  add(framingMismatch(analysis));
  if (analysis.dialect === undefined) {
    add(
      finding(
        'unknown-dialect',
        'neither the URL path nor the first payload says which dialect this is',
        `pass --dialect (${DIALECT_IDS.join(', ')})`,
      ),
    );
  }
  if (analysis.scan?.failure !== undefined) {
    add(
      finding(
        'malformed-payload',
        `the wire decoder gave up: ${analysis.scan.failure}`,
        'the frames after this point are not shown',
      ),
    );
  }
  add(invalidUtf8(analysis.frames));
  add(malformed(analysis.frames));
  findings.push(...serverErrors(analysis.frames, analysis.dialect?.id));
  findings.push(...bookkeeping(analysis));
  add(completeness(analysis));
  add(controlTokens(analysis.text));
  add(ignoredStop(analysis));
  add(truncated(analysis));
  add(buffering(analysis));
  add(localStall(analysis));
  add(keepalives(analysis));
  add(usage(analysis));
  add(cumulative(analysis.textPieces));
  return sorted(findings);
}

function sorted(findings: Finding[]): Finding[] {
  return findings
    .map((f, i) => [f, i] as const)
    .sort((a, b) => SEVERITY_ORDER[a[0].severity] - SEVERITY_ORDER[b[0].severity] || a[1] - b[1])
    .map(([f]) => f);
}

function dialectFinding(analysis: Analysis): Finding | undefined {
  const dialect = analysis.dialect;
  if (dialect === undefined) return undefined;
  const path =
    analysis.recording.request === undefined ? undefined : new URL(analysis.recording.request.url).pathname;
  const how =
    analysis.dialectSource === 'flag'
      ? 'as given by --dialect'
      : analysis.dialectSource === 'path'
        ? `from the URL path ${path}`
        : analysis.dialectSource === 'probe'
          ? "from probing the server's info routes"
          : 'detected from the first payload';
  const detected = analysis.detectedDialect;
  const differs =
    detected !== undefined && detected !== dialect.id && analysis.dialectSource !== 'payload'
      ? `; the payloads look like ${detected}`
      : '';
  return finding(
    'dialect',
    `${dialect.id} (${how}), framed as ${describeFraming(dialect.framing)}${differs}`,
    undefined,
    {
      dialect: dialect.id,
      source: analysis.dialectSource,
      detected,
    },
  );
}

function requestFailed(message: string, url: string | undefined): Finding {
  const target = url === undefined ? 'the server' : new URL(url).host;
  let hint = 'check the URL, and that the server is up and reachable from here';
  if (/ECONNREFUSED/.test(message))
    hint = `nothing listens on ${target}: is the server running, on that port and address?`;
  else if (/ENOTFOUND|EAI_AGAIN/.test(message)) hint = `the host name of ${target} does not resolve`;
  else if (/timeout/i.test(message))
    hint =
      'no response headers in time: the server is overloaded, loading a model, or a firewall drops the packets';
  else if (/ECONNRESET|socket hang up|other side closed/i.test(message))
    hint =
      'the connection was closed before the response: a TLS/HTTP mismatch (https to an http port?) or a crashing server';
  return finding('request-failed', `no response from ${target}: ${message}`, hint);
}

function httpError(status: number, statusText: string, body: string): Finding {
  let detail = body.trim();
  try {
    const parsed = JSON.parse(body) as { error?: unknown; message?: unknown; detail?: unknown };
    const error = parsed.error;
    if (typeof error === 'string') detail = error;
    else if (
      typeof error === 'object' &&
      error !== null &&
      typeof (error as { message?: unknown }).message === 'string'
    )
      detail = (error as { message: string }).message;
    else if (typeof parsed.message === 'string') detail = parsed.message;
    else if (parsed.detail !== undefined) detail = JSON.stringify(parsed.detail);
  } catch {
    // Not JSON: the body as it is.
  }
  let hint = 'the server refused the request before streaming; its message says why';
  if (status === 404)
    hint =
      'wrong path for this server, or a model name it does not know (list them: GET /v1/models or /api/tags)';
  else if (status === 401 || status === 403)
    hint = "credentials missing or refused: add --header 'Authorization: Bearer …'";
  else if (status === 400 || status === 422)
    hint = 'the server rejected the body: check the field it names (model, max_tokens, stream_options…)';
  else if (status === 429 || status === 503)
    hint = 'the server is overloaded or still loading: retry later (see Retry-After)';
  else if (status >= 300 && status < 400)
    hint = 'a redirect: use the final URL (a proxy may redirect http to https)';
  else if (status >= 500) hint = 'the server failed: its log says why';
  return finding(
    'http-error',
    `HTTP ${status}${statusText ? ` ${statusText}` : ''}: ${snippet(detail, 160)}`,
    hint,
    { status },
  );
}

function compression(headers: Record<string, string>): Finding | undefined {
  const encoding = headers['content-encoding'];
  if (encoding === undefined || encoding === '' || encoding.toLowerCase() === 'identity') return undefined;
  return finding(
    'compressed',
    `the stream is compressed (Content-Encoding: ${encoding})`,
    'compressors hold bytes until a block fills, which delays tokens: turn compression off for text/event-stream (nginx gzip_types, a CDN setting)',
  );
}

function contentType(analysis: Analysis): Finding | undefined {
  const announced = analysis.announcedFraming;
  const body = analysis.bodyFraming;
  const want = analysis.expectedFraming ?? (body === 'sse' || body === 'ndjson' ? body : undefined);
  const proper = want === 'ndjson' ? 'application/x-ndjson' : 'text/event-stream';
  if (analysis.contentType === undefined || analysis.contentType.trim() === '') {
    return finding(
      'content-type-missing',
      'the response has no Content-Type',
      `send Content-Type: ${proper}; without it browsers (EventSource) refuse the stream and proxies may buffer or sniff it`,
    );
  }
  if (announced === undefined) {
    return finding(
      'content-type-wrong',
      `Content-Type is ${analysis.contentType}, not a streaming type`,
      `send Content-Type: ${proper}; proxies buffer other types, and EventSource refuses anything but text/event-stream`,
    );
  }
  if ((body === 'sse' || body === 'ndjson') && announced !== body) {
    return finding(
      'content-type-wrong',
      `Content-Type ${analysis.contentType} announces ${describeFraming(announced)} but the body is ${describeFraming(body)}`,
      'make the header and the body agree: clients pick their parser from the Content-Type',
    );
  }
  return undefined;
}

function framingMismatch(analysis: Analysis): Finding | undefined {
  const expected = analysis.expectedFraming;
  const body = analysis.bodyFraming;
  if (expected === undefined || (body !== 'sse' && body !== 'ndjson') || expected === body) return undefined;
  const where = analysis.dialect === undefined ? '' : ` (the ${analysis.dialect.id} dialect)`;
  if (body === 'ndjson') {
    return finding(
      'ndjson-instead-of-sse',
      `the body is NDJSON (one JSON object per line) where SSE was expected${where}`,
      "an SSE client waits for `data:` lines and sees none: Ollama's native /api/chat and /api/generate send NDJSON; use its /v1 endpoints for SSE, or read this one as ollama-chat / ollama-generate",
    );
  }
  return finding(
    'sse-instead-of-ndjson',
    `the body is SSE (\`data:\` lines) where NDJSON was expected${where}`,
    'an NDJSON client fails on the `data:` prefix: OpenAI-style routes, llama-server /completion and TGI /generate_stream send SSE; use an SSE dialect for this endpoint',
  );
}

function invalidUtf8(frames: readonly DecodedFrame[]): Finding | undefined {
  const bad = frames.filter((frame) => frame.invalidUtf8At !== undefined);
  if (bad.length === 0) return undefined;
  const first = bad[0]!;
  return finding(
    'invalid-utf8',
    `${bad.length} frame(s) hold bytes that are not UTF-8 (first at body byte ${first.invalidUtf8At}, frame ${first.n}); shown as U+FFFD`,
    'strict clients fail on the whole stream: the server (or a proxy re-encoding it) writes raw bytes of broken characters; a server must hold back partial UTF-8 sequences',
    { frames: bad.map((frame) => frame.n), firstOffset: first.invalidUtf8At },
  );
}

function malformed(frames: readonly DecodedFrame[]): Finding | undefined {
  const bad = frames.filter((frame) => frame.decodeError !== undefined);
  if (bad.length === 0) return undefined;
  const first = bad[0]!;
  return finding(
    'malformed-payload',
    `${bad.length} frame(s) could not be decoded; frame ${first.n}: ${first.decodeError}`,
    'the payload is not JSON or not this dialect: check --dialect, and whether a proxy rewrites or splits the events',
    { frames: bad.map((frame) => frame.n) },
  );
}

function serverErrors(frames: readonly DecodedFrame[], dialect: DialectId | undefined): Finding[] {
  const out: Finding[] = [];
  for (const frame of frames) {
    for (const event of frame.events) {
      if (event.type !== 'error') continue;
      const shape = errorShape(frame, event, dialect);
      const status = event.status === undefined ? '' : ` (status ${event.status})`;
      const type = event.errorType === undefined ? '' : ` [${event.errorType}]`;
      out.push(
        finding(
          'server-error',
          `frame ${frame.n}: the server reported an error inside the stream${status}${type}: ${snippet(event.message, 160)} — ${shape}`,
          'the answer is incomplete: the server log has the cause; clients must check every payload for an error, since the HTTP status was already 200',
          { frame: frame.n, message: event.message, status: event.status, errorType: event.errorType, shape },
        ),
      );
      if (frame.frame.legacyError === true) {
        out.push(
          finding(
            'legacy-error-field',
            `frame ${frame.n} is an \`error: {...}\` line, which is not an SSE field (llama-server before Sep 2025)`,
            'spec-compliant SSE parsers (EventSource, most SDKs) drop it silently and show a cut answer as finished: upgrade llama.cpp, or use a client that reads it',
          ),
        );
      }
    }
  }
  return out;
}

/** Which server's error shape a frame is (wire-formats.md §9). */
function errorShape(frame: DecodedFrame, event: ErrorEvent, dialect: DialectId | undefined): string {
  if (frame.frame.legacyError === true) return "llama-server's legacy `error:` line";
  const data = frame.frame.data;
  let payload: Record<string, unknown> | undefined;
  try {
    payload = JSON.parse(data) as Record<string, unknown>;
  } catch {
    return 'a non-JSON error';
  }
  const error = payload.error;
  const named = frame.frame.event;
  if (payload.type === 'error' && typeof error === 'object' && error !== null)
    return named === 'error'
      ? "Anthropic's `event: error` shape ({type: error, error: {type, message}})"
      : 'an error event of type error with a nested error object';
  if (named === 'error' && typeof payload.code === 'number' && payload.type !== 'error')
    return "llama-server's Messages shape (a flat {code, message, type} after `event: error`)";
  if (payload.type === 'error') return 'the Responses `error` event ({type: error, code, message})';
  if (payload.type === 'response.failed') return 'a `response.failed` event (its response.error)';
  if (typeof error === 'object' && error !== null && named === undefined && dialect === 'openai-responses')
    return "llama-server's Responses shape (a bare data: {error: …}, no event: line)";
  if (typeof error === 'string')
    return 'error_type' in payload ? "TGI /generate_stream's shape" : "Ollama's native error line";
  if (typeof error === 'object' && error !== null) {
    if ('http_status_code' in error) return "TGI's OpenAI-route shape";
    if (data.startsWith('{"error": {')) return "vLLM's shape (json.dumps)";
    return 'the OpenAI / llama-server shape';
  }
  if (payload.object === 'error') return "vLLM's shape before 0.10.1";
  return event.errorType === undefined ? 'an error payload' : `an error payload of type ${event.errorType}`;
}

/**
 * The Responses decoder's notes on the stream's own bookkeeping: sequence numbers that skip or are
 * missing, events after the terminal one, and llama-server's `completed` at the output cap.
 */
function bookkeeping(analysis: Analysis): Finding[] {
  const out: Finding[] = [];
  const gaps = analysis.streamFindings.filter((f) => f.code === 'sequence-gap');
  if (gaps.length > 0) {
    out.push(
      finding(
        'sequence-gap',
        `${gaps.length} sequence_number gap(s); first at frame ${gaps[0]!.frame}: ${gaps[0]!.message}`,
        'an event was lost or reordered between the server and here (a proxy that drops or reorders events, a resume from the wrong cursor): the answer may miss text',
        { frames: gaps.map((f) => f.frame), messages: gaps.map((f) => f.message) },
      ),
    );
  }
  const missing = analysis.streamFindings.filter((f) => f.code === 'sequence-missing');
  if (missing.length > 0) {
    out.push(
      finding(
        'sequence-missing',
        `${missing.length} event(s) without sequence_number where the earlier ones had it; first at frame ${missing[0]!.frame}: ${missing[0]!.message}`,
        'something between the server and here writes events of its own (a gateway or proxy), or the server mixes writers: clients resuming by sequence_number will lose their place',
        { frames: missing.map((f) => f.frame) },
      ),
    );
  }
  const late = analysis.streamFindings.filter((f) => f.code === 'after-terminal');
  if (late.length > 0) {
    out.push(
      finding(
        'after-terminal',
        `${late.length} event(s) after the terminal event; first at frame ${late[0]!.frame}: ${late[0]!.message}`,
        'clients stop at the terminal event and drop these: the server (or a proxy joining two streams) writes past the end',
        { frames: late.map((f) => f.frame) },
      ),
    );
  }
  const capped = analysis.streamFindings.find((f) => f.code === 'completed-at-cap');
  if (capped !== undefined) {
    const usage = [...analysis.frames.flatMap((f) => f.events), ...analysis.endEvents].findLast(
      (event) => event.type === 'usage',
    );
    const output = usage?.type === 'usage' ? usage.usage.outputTokens : undefined;
    out.push(
      finding(
        'completed-at-cap',
        `the server says status "completed", but the output count (${output ?? '?'} tokens) reached the request's max_output_tokens (${analysis.outputCap}): the cap cut the answer, read as truncated`,
        'llama-server (b10108) writes "completed" where the spec says response.incomplete with incomplete_details.reason "max_output_tokens": clients that trust the status show a cut answer as finished; raise max_output_tokens, and check the count, not the status',
        { outputTokens: output, maxOutputTokens: analysis.outputCap, frame: capped.frame },
      ),
    );
  }
  return out;
}

function endedEarly(analysis: Analysis): Finding {
  const end = analysis.recording.end;
  if (end.kind === 'idle-timeout') {
    return finding(
      'stalled',
      `no byte arrived for the idle timeout after ${analysis.frames.length} frame(s); inspect stopped waiting`,
      'the server stalled or a proxy holds the stream: raise --idle-timeout-ms if the model is just slow (long prefill), else check the server log',
    );
  }
  if (end.kind === 'total-timeout') {
    return finding(
      'stalled',
      `the stream was still running at --timeout-ms after ${analysis.frames.length} frame(s); inspect stopped`,
      'a long answer (lower max tokens) or a stream that never ends: check that the server sends its terminal event',
    );
  }
  const name = analysis.dialect?.id ?? 'the';
  const how =
    end.kind === 'read-error'
      ? `the connection broke${end.message ? ` (${end.message})` : ''}`
      : analysis.scan?.partialTail !== undefined
        ? 'the body ended in the middle of an event'
        : 'the body ended';
  // A Messages stream's stop_reason comes in message_delta: a cut after it still lacks message_stop.
  const stopped =
    analysis.dialect?.id === 'anthropic-messages'
      ? analysis.frames.flatMap((f) => f.events).find((event) => event.type === 'finish')
      : undefined;
  const after =
    stopped?.type === 'finish'
      ? `; the message_delta (stop_reason ${JSON.stringify(stopped.raw ?? stopped.reason)}) came, message_stop did not`
      : '';
  return finding(
    'missing-terminal-event',
    `${how} before the ${name} stream's terminal event${analysis.dialect === undefined ? '' : ` (${analysis.dialect.terminalEvent})`}${after}: the answer is incomplete`,
    ollamaCompatHint(analysis) ??
      'a crash, a proxy timeout or a dropped connection cut the stream: a client must show this answer as incomplete, not finished',
  );
}

function completeness(analysis: Analysis): Finding | undefined {
  const end = analysis.recording.end;
  if (analysis.dialect === undefined || end.kind === 'interrupted') return undefined;
  const errored = analysis.frames.some((frame) => frame.events.some((event) => event.type === 'error'));
  if (errored) return undefined;
  if (!analysis.terminalSeen) return endedEarly(analysis);
  const hasDone = analysis.dialect.id === 'openai-chat' || analysis.dialect.id === 'openai-completions';
  if (hasDone && !analysis.sentinelSeen && end.kind === 'eof') {
    const tgi = analysis.server?.server === 'TGI' ? ' (TGI chat streams have it since v2.2.0)' : '';
    return finding(
      'missing-done',
      `the stream finished but never sent data: [DONE]${tgi}`,
      'clients that wait for [DONE] (many SDKs and proxies) hang until the connection closes; a proxy may also have cut the tail',
    );
  }
  return undefined;
}

/** Ollama's OpenAI layer turns a mid-stream error into an empty chunk with `model: ""`, then closes. */
function ollamaCompatHint(analysis: Analysis): string | undefined {
  const last = analysis.frames.at(-1);
  if (last === undefined) return undefined;
  try {
    const payload = JSON.parse(last.frame.data) as Record<string, unknown>;
    if (payload.system_fingerprint === 'fp_ollama' && payload.model === '')
      return 'Ollama\'s OpenAI layer reports a mid-stream error as an empty chunk with "model": "" and closes: the Ollama server log (or its native /api/chat) has the error';
  } catch {
    return undefined;
  }
  return undefined;
}

function controlTokens(text: string): Finding | undefined {
  const hits = findControlTokens(text);
  if (hits.length === 0) return undefined;
  const list = hits.map((hit) => `${hit.token} ×${hit.count}`).join(', ');
  const first = hits[0]!;
  const context = text.slice(Math.max(0, first.firstAt - 30), first.firstAt + first.token.length + 10);
  return finding(
    'control-tokens',
    `the text contains control tokens: ${list} (e.g. …${JSON.stringify(context).slice(1, -1)}…)`,
    "the server decodes special tokens as text or its chat template's end token is wrong: keep skip_special_tokens on (vLLM), fix the template / GGUF metadata (llama.cpp, Ollama), or add the token to the stop list",
    { tokens: hits },
  );
}

function ignoredStop(analysis: Analysis): Finding | undefined {
  const stops = (analysis.request?.stop ?? []).filter((stop) => stop !== '');
  if (stops.length === 0) return undefined;
  const text = analysis.text;
  const keepsStop = analysis.requestBody?.include_stop_str_in_output === true;
  const found = stops.filter((stop) => {
    const at = text.indexOf(stop);
    if (at === -1) return false;
    // vLLM's include_stop_str_in_output keeps the stop string at the very end, legitimately.
    return !(keepsStop && at + stop.length === text.length);
  });
  if (found.length === 0) return undefined;
  return finding(
    'ignored-stop',
    `the text contains the stop string(s) ${found.map((s) => JSON.stringify(s)).join(', ')} from the request: the server did not stop there`,
    'check the parameter name this server reads (stop, options.stop, parameters.stop), and that stop strings work while streaming on this server and version',
    { stops: found },
  );
}

function truncated(analysis: Analysis): Finding | undefined {
  let finish: FinishEvent | undefined;
  for (const frame of analysis.frames)
    for (const event of frame.events) if (event.type === 'finish') finish = event;
  if (finish?.reason !== 'length') return undefined;
  const cap = analysis.outputCap;
  const claimed = analysis.streamFindings.some((f) => f.code === 'completed-at-cap')
    ? ' (read from the output count: see completed-at-cap)'
    : '';
  const field = analysis.dialect?.id === 'openai-responses' ? 'max_output_tokens' : 'max_tokens';
  return finding(
    'truncated',
    `finish ${JSON.stringify(finish.raw ?? 'length')}${claimed}: the output cap${cap === undefined ? '' : ` (${cap} tokens)`} cut the answer off`,
    `raise ${field} (num_predict, n_predict, max_new_tokens), or the context size when the cap is the context; a client must show this answer as cut off`,
  );
}

function buffering(analysis: Analysis): Finding | undefined {
  const verdict = analysis.buffering;
  if (verdict === undefined || !verdict.buffered) return undefined;
  const share = Math.round((verdict.framesInBursts / verdict.contentFrames) * 100);
  return finding(
    'buffering',
    `${verdict.framesInBursts} of ${verdict.contentFrames} content events (${share} %) arrived in ${verdict.bursts} burst(s), after gaps of up to ${Math.round(verdict.longestBurstGapMs)} ms; ${Math.round(verdict.zeroGapShare * 100)} % of the gaps between events are zero`,
    'something between you and the model server holds the stream: nginx (proxy_buffering off, or send X-Accel-Buffering: no), a compressing load balancer or CDN, or a server that flushes late',
    { ...verdict },
  );
}

function localStall(analysis: Analysis): Finding | undefined {
  const stalls = analysis.recording.localStalls ?? [];
  const total = stalls.reduce((sum, stall) => sum + (stall.toMs - stall.fromMs), 0);
  if (total < 100) return undefined;
  const longest = Math.max(...stalls.map((stall) => stall.toMs - stall.fromMs));
  const piled = analysis.buffering?.framesInLocalBursts ?? 0;
  return finding(
    'local-stall',
    `inspect's own process was too busy to read for ${Math.round(total)} ms in all (longest ${Math.round(longest)} ms)` +
      (piled > 0 ? `; ${piled} events piled up meanwhile, which is not counted as buffering` : ''),
    'the machine running inspect is overloaded: read times near those stalls are late because of it, not the network',
    { totalMs: total, longestMs: longest, stalls: stalls.length },
  );
}

function keepalives(analysis: Analysis): Finding | undefined {
  const comments = analysis.comments;
  if (comments.length === 0) return undefined;
  const times = comments.map((c) => c.atMs).filter((t): t is number => t !== undefined);
  const gaps = times.slice(1).map((t, i) => t - times[i]!);
  gaps.sort((a, b) => a - b);
  const median = gaps.length === 0 ? undefined : gaps[Math.floor(gaps.length / 2)]!;
  const every = median === undefined ? '' : `, about every ${Math.round(median)} ms`;
  const sample = JSON.stringify(`:${comments[0]!.text}`);
  return finding(
    'keepalive',
    `${comments.length} keepalive comment line(s) (${sample})${every}`,
    'harmless, and they keep proxies from timing out a long prefill; a client must skip comment lines (a parser that expects only data: lines breaks on them)',
    { count: comments.length, medianGapMs: median },
  );
}

function usage(analysis: Analysis): Finding | undefined {
  const dialect = analysis.dialect;
  // Usage comes last: a stream cut short or failed says nothing about it.
  if (dialect === undefined || !analysis.complete) return undefined;
  const all = [...analysis.frames.flatMap((f) => f.events), ...analysis.endEvents];
  if (all.some((event) => event.type === 'usage' && event.usage.outputTokens !== undefined)) return undefined;
  const body = analysis.requestBody;
  const known = body !== undefined;
  switch (dialect.id) {
    case 'openai-chat':
    case 'openai-completions': {
      const options = body?.stream_options;
      const asked =
        typeof options === 'object' &&
        options !== null &&
        (options as Record<string, unknown>).include_usage === true;
      if (asked) {
        return finding(
          'usage-absent',
          'the request asked for usage (stream_options.include_usage) but no usage chunk came',
          'the server or a gateway in between ignores stream_options (Ollama before v0.5.2, some proxies); token counts will be estimates',
        );
      }
      return finding(
        'usage-not-requested',
        `no token usage in the stream${known ? ' (the request did not ask for it)' : ''}`,
        'add "stream_options": {"include_usage": true} to the request to get the token counts in a final chunk',
      );
    }
    case 'tgi': {
      const parameters = body?.parameters;
      const asked =
        typeof parameters === 'object' &&
        parameters !== null &&
        (parameters as Record<string, unknown>).details === true;
      if (!asked) {
        return finding(
          'usage-not-requested',
          `no token counts in the stream${known ? ' (the request did not ask for details)' : ''}`,
          'add "parameters": {"details": true} to get generated_tokens and the finish reason on the last event',
        );
      }
      return finding(
        'usage-absent',
        'the request asked for details but the last event carries no generated_tokens',
        'the server or a proxy dropped the details object; token counts will be estimates',
      );
    }
    default:
      return finding(
        'usage-absent',
        `no token counts in the stream, which ${dialect.id} always sends on its last event`,
        'a proxy or gateway may have rewritten the final event; token counts will be estimates',
      );
  }
}

function cumulative(pieces: readonly string[]): Finding | undefined {
  if (pieces.length < 3) return undefined;
  const filter = new CumulativeTextFilter();
  for (const piece of pieces) filter.next(piece);
  if (!filter.detected) return undefined;
  return finding(
    'cumulative-text',
    `the text events repeat the whole answer so far instead of sending only the new part (${pieces.length} events)`,
    "naive clients print the answer over and over: the server should send deltas (tokenwire's client detects this and keeps only the new text)",
  );
}
