import { describeFraming } from '../../client/framing.ts';
import { DIALECT_IDS } from '../../dialects/dialect.ts';
import { snippet } from '../../errors.ts';
import type { Analysis } from './analyze-recording.ts';
import {
  bookkeepingFindings,
  completenessFinding,
  endedEarlyFinding,
  truncatedFinding,
} from './ending-findings.ts';
import { type Finding, finding, SEVERITY_ORDER } from './finding.ts';
import { invalidUtf8Finding, malformedFinding, serverErrorFindings } from './payload-findings.ts';
import {
  compressionFinding,
  contentTypeFinding,
  framingMismatchFinding,
  httpErrorFinding,
  requestFailedFinding,
} from './response-findings.ts';
import {
  controlTokensFinding,
  cumulativeFinding,
  ignoredStopFinding,
  usageFinding,
} from './text-findings.ts';
import {
  bufferingFinding,
  continuedFinding,
  keepaliveFinding,
  localStallFinding,
} from './timing-findings.ts';

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
    add(requestFailedFinding(end.message ?? 'the request failed', recording.request?.url));
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
    add(httpErrorFinding(response.status, response.statusText, analysis.bodyText ?? ''));
    return sorted(findings);
  }
  if (response !== undefined) add(compressionFinding(response.headers));
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
  if (response !== undefined) add(contentTypeFinding(analysis));

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
    else add(endedEarlyFinding(analysis));
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
  add(framingMismatchFinding(analysis));
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
  add(invalidUtf8Finding(analysis.frames));
  add(malformedFinding(analysis.frames));
  findings.push(...serverErrorFindings(analysis.frames, analysis.dialect?.id));
  findings.push(...bookkeepingFindings(analysis));
  add(completenessFinding(analysis));
  add(controlTokensFinding(analysis.text));
  add(ignoredStopFinding(analysis));
  add(truncatedFinding(analysis));
  add(bufferingFinding(analysis));
  add(localStallFinding(analysis));
  add(keepaliveFinding(analysis));
  add(continuedFinding(analysis));
  add(usageFinding(analysis));
  add(cumulativeFinding(analysis.textPieces));
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
