import type { Analysis } from './analyze-recording.ts';
import { type Finding, isProblem } from './finding.ts';
import { joinReads } from './scan-wire.ts';

/** Exit statuses of `tokenwire inspect`. */
export const INSPECT_EXIT = { clean: 0, problems: 1, usage: 2, interrupted: 130 } as const;

export type FailOn = 'error' | 'warning';

export interface ReportSummary {
  errors: number;
  warnings: number;
  infos: number;
  /** Findings at or above the --fail-on severity. */
  problems: number;
  failOn: FailOn;
  exitCode: number;
}

/** Counts the findings and picks the exit status. */
export function summarize(analysis: Analysis, findings: readonly Finding[], failOn: FailOn): ReportSummary {
  const count = (severity: Finding['severity']) => findings.filter((f) => f.severity === severity).length;
  const problems = findings.filter((f) => isProblem(f, failOn)).length;
  const exitCode =
    analysis.recording.end.kind === 'interrupted'
      ? INSPECT_EXIT.interrupted
      : problems > 0
        ? INSPECT_EXIT.problems
        : INSPECT_EXIT.clean;
  return {
    errors: count('error'),
    warnings: count('warning'),
    infos: count('info'),
    problems,
    failOn,
    exitCode,
  };
}

/** The whole report as plain data (`--json`): request, response, reads, frames, findings, summary. */
export function inspectReport(
  analysis: Analysis,
  findings: readonly Finding[],
  failOn: FailOn,
): Record<string, unknown> {
  const recording = analysis.recording;
  const { readStarts } = joinReads(recording.reads);
  let requestBody: unknown = recording.request?.body;
  if (analysis.requestBody !== undefined) requestBody = analysis.requestBody;
  const response = recording.response;
  return {
    tool: 'tokenwire inspect',
    source: recording.source,
    request:
      recording.request === undefined
        ? undefined
        : {
            method: recording.request.method,
            url: recording.request.url,
            headers: recording.request.headers,
            body: requestBody,
          },
    response:
      response === undefined
        ? undefined
        : {
            status: response.status,
            statusText: response.statusText,
            headers: response.headers,
            headersMs: response.atMs,
          },
    dialect:
      analysis.dialect === undefined
        ? undefined
        : {
            id: analysis.dialect.id,
            source: analysis.dialectSource,
            framing: analysis.dialect.framing,
            detectedFromPayload: analysis.detectedDialect,
          },
    server: analysis.server,
    framing: {
      body: analysis.bodyFraming,
      expected: analysis.expectedFraming,
      announced: analysis.announcedFraming,
      contentType: analysis.contentType,
    },
    reads: recording.reads.map((read, i) => ({
      n: i + 1,
      atMs: read.atMs,
      offset: readStarts[i],
      bytes: read.bytes.length,
    })),
    frames: analysis.frames.map((frame) => ({
      n: frame.n,
      start: frame.start,
      end: frame.end,
      bytes: frame.end - frame.start,
      firstRead: frame.firstRead,
      lastRead: frame.lastRead,
      split: frame.firstRead !== frame.lastRead,
      atMs: frame.atMs,
      data: frame.frame.data,
      event: frame.frame.event,
      id: frame.frame.id,
      legacyError: frame.frame.legacyError,
      sentinel: frame.sentinel,
      raw: frame.raw,
      invalidUtf8At: frame.invalidUtf8At,
      unterminated: frame.unterminated,
      decodeError: frame.decodeError,
      events: frame.events,
    })),
    comments: analysis.comments,
    localStalls: recording.localStalls,
    partialTail: analysis.scan?.partialTail,
    end: recording.end,
    body: analysis.bodyText,
    text: analysis.text,
    endEvents: analysis.endEvents,
    result: analysis.result,
    buffering: analysis.buffering,
    findings,
    summary: summarize(analysis, findings, failOn),
  };
}
