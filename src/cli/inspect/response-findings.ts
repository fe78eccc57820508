import { describeFraming } from '../../client/framing.ts';
import { snippet } from '../../errors.ts';
import type { Analysis } from './analyze-recording.ts';
import { type Finding, finding } from './finding.ts';

// What the response says before any payload: no response, an HTTP error status, compression, the
// Content-Type, and a body framed otherwise than the dialect expects.

export function requestFailedFinding(message: string, url: string | undefined): Finding {
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

export function httpErrorFinding(status: number, statusText: string, body: string): Finding {
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

export function compressionFinding(headers: Record<string, string>): Finding | undefined {
  const encoding = headers['content-encoding'];
  if (encoding === undefined || encoding === '' || encoding.toLowerCase() === 'identity') return undefined;
  return finding(
    'compressed',
    `the stream is compressed (Content-Encoding: ${encoding})`,
    'compressors hold bytes until a block fills, which delays tokens: turn compression off for text/event-stream (nginx gzip_types, a CDN setting)',
  );
}

export function contentTypeFinding(analysis: Analysis): Finding | undefined {
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

export function framingMismatchFinding(analysis: Analysis): Finding | undefined {
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
