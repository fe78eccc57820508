import { continuationSeam } from '../../capture/continuation-seam.ts';
import type { StreamEvent } from '../../events/stream-event.ts';
import { chatFigures, formatMs } from '../chat/chat-outcome.ts';
import type { Style } from '../cli-io.ts';
import type { Analysis, DecodedFrame } from './analyze-recording.ts';
import type { Finding } from './finding.ts';
import { type FailOn, summarize } from './inspect-report.ts';
import type { WireComment } from './scan-wire.ts';

export interface RenderOptions {
  style: Style;
  /** Terminal width: frames are abbreviated to fit. */
  width: number;
  /** Print frames whole. */
  full: boolean;
  /** Print the wire listing (otherwise only the summary and the diagnosis). */
  wire: boolean;
  failOn: FailOn;
}

/** The human report: request, response head, the wire read by read, the client's verdict, the diagnosis. */
export function renderInspect(
  analysis: Analysis,
  findings: readonly Finding[],
  options: RenderOptions,
): string {
  const { style } = options;
  const out: string[] = [];
  const recording = analysis.recording;
  const request = recording.request;
  if (recording.source === 'file') {
    out.push(
      style.bold(
        `file ${recording.name ?? ''} (${formatBytes(analysis.bodyBytes)}, captured: no timings, no headers)`,
      ),
    );
  } else if (request !== undefined) {
    out.push(style.bold(`> ${request.method} ${request.url}`));
    for (const [name, value] of Object.entries(request.headers)) out.push(style.dim(`  ${name}: ${value}`));
    if (request.body !== undefined)
      out.push(style.dim(`  ${abbreviate(request.body, options.full ? Infinity : 400)}`));
  }
  const response = recording.response;
  if (response !== undefined) {
    const ok = response.status >= 200 && response.status < 300;
    const status = `< HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}`;
    const when = response.atMs === undefined ? '' : style.dim(` (headers after ${formatMs(response.atMs)})`);
    out.push(`${ok ? style.bold(status) : style.red(status)}${when}`);
    for (const [name, value] of Object.entries(response.headers)) out.push(style.dim(`  ${name}: ${value}`));
  } else if (recording.end.kind === 'request-failed') {
    out.push(style.red(`< no response: ${recording.end.message ?? 'the request failed'}`));
  }
  out.push('');

  if (analysis.bodyText !== undefined && analysis.frames.length === 0) {
    out.push(style.bold(`Body (${formatBytes(analysis.bodyBytes)}):`));
    out.push(abbreviate(analysis.bodyText, options.full ? Infinity : 2000));
    out.push('');
  } else if (options.wire && recording.reads.length > 0) {
    out.push(...wireListing(analysis, options));
    out.push('');
  }

  const result = analysis.result;
  if (result !== undefined) {
    const verdict = result.complete
      ? style.green(
          `complete, finish ${result.finishReason ?? 'none'}${result.truncated ? ' (TRUNCATED)' : ''}`,
        )
      : style.red(`INCOMPLETE (${result.incomplete}): ${result.error?.message ?? ''}`);
    out.push(`${style.bold('Client verdict:')} ${verdict}`);
    if (recording.source === 'live') out.push(style.dim(`                ${chatFigures(result)}`));
  }
  if (analysis.text !== '') {
    out.push(
      `${style.bold('Text:')}           ${abbreviate(JSON.stringify(analysis.text), options.full ? Infinity : 300)}`,
    );
  }
  out.push('');
  out.push(style.bold('Diagnosis:'));
  const idWidth = Math.max(...findings.map((f) => f.id.length), 8);
  for (const f of findings) {
    const colour = f.severity === 'error' ? style.red : f.severity === 'warning' ? style.yellow : style.cyan;
    out.push(`  ${colour(f.severity.padEnd(7))} ${style.bold(f.id.padEnd(idWidth))}  ${f.message}`);
    if (f.hint !== undefined)
      out.push(style.dim(`  ${' '.repeat(7)} ${' '.repeat(idWidth)}  fix: ${f.hint}`));
  }
  const summary = summarize(analysis, findings, options.failOn);
  out.push('');
  if (summary.exitCode === 130) out.push(style.yellow('Interrupted: partial diagnosis.'));
  else if (summary.problems === 0) out.push(style.green('No problems found.'));
  else {
    const parts = [`${summary.errors} error${summary.errors === 1 ? '' : 's'}`];
    if (options.failOn === 'warning')
      parts.push(`${summary.warnings} warning${summary.warnings === 1 ? '' : 's'}`);
    out.push(
      style.red(
        `${summary.problems} problem${summary.problems === 1 ? '' : 's'} found (${parts.join(', ')}).`,
      ),
    );
  }
  return `${out.join('\n')}\n`;
}

/** The wire, read by read: each read's time and size, the frames and comments it completed. */
function wireListing(analysis: Analysis, options: RenderOptions): string[] {
  const { style } = options;
  const recording = analysis.recording;
  const lines: string[] = [];
  const split = analysis.frames.filter((f) => f.firstRead !== f.lastRead).length;
  lines.push(
    style.bold(
      `Wire: ${formatBytes(analysis.bodyBytes)} in ${recording.reads.length} read(s), ${analysis.frames.length} frame(s)` +
        `${analysis.comments.length > 0 ? `, ${analysis.comments.length} comment(s)` : ''}` +
        `${split > 0 ? `, ${split} frame(s) split across reads` : ''}` +
        ` · ${analysis.bodyFraming === 'sse' || analysis.bodyFraming === 'ndjson' ? analysis.bodyFraming.toUpperCase() : analysis.bodyFraming}`,
    ),
  );
  lines.push(
    style.dim(
      `${'time'.padStart(10)}  ${'read'.padStart(5)} ${'bytes'.padStart(7)}  frames and comments completed in that read`,
    ),
  );
  type Item = { start: number; text: string };
  const byRead = new Map<number, Item[]>();
  const push = (read: number, item: Item) => {
    const list = byRead.get(read) ?? [];
    list.push(item);
    byRead.set(read, list);
  };
  const prefixWidth = 10 + 2 + 5 + 1 + 7 + 2;
  const room = Math.max(40, options.width - prefixWidth);
  const frameDigits = String(analysis.frames.length).length;
  for (const frame of analysis.frames) {
    push(frame.lastRead, { start: frame.start, text: frameLine(frame, room, { ...options, frameDigits }) });
    if (frame.firstRead !== frame.lastRead) {
      push(frame.firstRead, {
        start: frame.start,
        text: style.yellow(`frame ${frame.n} begins here… (split: it ends in read ${frame.lastRead})`),
      });
    }
  }
  for (const comment of analysis.comments)
    push(comment.read, { start: comment.start, text: commentLine(comment, style) });
  const tail = analysis.scan?.partialTail;
  if (tail !== undefined) {
    push(tail.firstRead, {
      start: tail.start,
      text: style.red(
        `an event begins here that never ends: ${abbreviate(JSON.stringify(tail.raw), room - 40)}`,
      ),
    });
  }
  recording.reads.forEach((read, i) => {
    const n = i + 1;
    const items = (byRead.get(n) ?? []).sort((a, b) => a.start - b.start);
    const time = read.atMs === undefined ? '-' : `+${formatMs(read.atMs)}`;
    const head = `${time.padStart(10)}  ${`#${n}`.padStart(5)} ${`${read.bytes.length} B`.padStart(7)}  `;
    if (items.length === 0) {
      lines.push(`${head}${style.dim('(inside a frame: no frame ends in this read)')}`);
      return;
    }
    items.forEach((item, k) => {
      lines.push(`${k === 0 ? head : ' '.repeat(prefixWidth)}${item.text}`);
    });
  });
  const end = recording.end;
  const endAt = end.atMs === undefined ? '' : `+${formatMs(end.atMs)}`;
  const endText: Record<string, string> = {
    eof: 'end of body',
    'read-error': `the connection broke: ${end.message ?? ''}`,
    'idle-timeout': 'stopped: no byte for the idle timeout',
    'total-timeout': 'stopped: the total timeout',
    interrupted: 'stopped: Ctrl-C',
    'too-large': 'stopped: the body passed the capture limit',
    'request-failed': `no response: ${end.message ?? ''}`,
  };
  const line = `${endAt.padStart(10)}  ${endText[end.kind] ?? end.kind}`;
  lines.push(end.kind === 'eof' ? style.dim(line) : style.red(line));
  return lines;
}

function frameLine(
  frame: DecodedFrame,
  room: number,
  options: RenderOptions & { frameDigits: number },
): string {
  const { style } = options;
  const label = `frame ${String(frame.n).padEnd(options.frameDigits)}`;
  const summary =
    frame.decodeError !== undefined
      ? style.red(`MALFORMED: ${frame.decodeError}`)
      : eventsSummary(frame, style);
  const flags: string[] = [];
  if (frame.firstRead !== frame.lastRead)
    flags.push(style.yellow(`[split: reads ${frame.firstRead}-${frame.lastRead}]`));
  if (frame.invalidUtf8At !== undefined)
    flags.push(style.red(`[invalid UTF-8 at byte ${frame.invalidUtf8At}]`));
  if (frame.unterminated === true) flags.push(style.yellow('[no final newline]'));
  const after = `${summary}${flags.length > 0 ? ` ${flags.join(' ')}` : ''}`;
  // Payloads of one stream share their head (ids, object, model): the tail is where they differ.
  const fit = Math.max(30, room - label.length - visibleLength(after) - 6);
  const raw = options.full ? frame.raw : elide(frame.raw.replace(/\r?\n/g, '⏎'), fit);
  return `${label}  ${raw}  ${style.cyan('→')} ${after}`;
}

function commentLine(comment: WireComment, style: Style): string {
  if (continuationSeam(comment.text) !== undefined)
    return style.yellow(`comment ${JSON.stringify(`:${comment.text}`)} (the seam: another replica goes on)`);
  return style.dim(`comment ${JSON.stringify(`:${comment.text}`)} (keepalive)`);
}

function eventsSummary(frame: DecodedFrame, style: Style): string {
  if (frame.sentinel) return style.green('[DONE]');
  if (frame.events.length === 0) return style.dim('(no event)');
  const parts = frame.events
    .filter((e) => e.type !== 'start' || frame.events.length === 1)
    .map((e) => describeEvent(e, style));
  return parts.join(', ');
}

function describeEvent(event: StreamEvent, style: Style): string {
  switch (event.type) {
    case 'start':
      return 'start';
    case 'text':
      return `text ${abbreviate(JSON.stringify(event.text), 40)}`;
    case 'reasoning':
      return `reasoning ${abbreviate(JSON.stringify(event.text), 40)}`;
    case 'tool-call-delta':
      return `tool-call-delta #${event.index}${event.name === undefined ? '' : ` ${event.name}`}`;
    case 'tool-call':
      return `tool-call ${event.name}`;
    case 'usage':
      return `usage in ${event.usage.inputTokens ?? '?'} / out ${event.usage.outputTokens ?? '?'}`;
    case 'timings':
      return 'timings';
    case 'finish': {
      const text = `finish ${event.reason}${event.raw !== null && event.raw !== event.reason ? ` (${JSON.stringify(event.raw)})` : ''}`;
      return event.reason === 'length' ? style.yellow(text) : style.green(text);
    }
    case 'error':
      return style.red(`ERROR ${abbreviate(JSON.stringify(event.message), 60)}`);
  }
}

function visibleLength(text: string): number {
  return text.replace(/\u001b\[[0-9;]*m/g, '').length;
}

/** Keeps the start and the end of a long text, with an ellipsis between. */
function elide(text: string, max: number): string {
  if (text.length <= max) return text;
  const head = Math.min(14, Math.floor(max / 4));
  return `${text.slice(0, head)}…${text.slice(text.length - (max - head - 1))}`;
}

function abbreviate(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${text.slice(0, Math.max(1, max - 1))}…`;
}

function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} kB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}
