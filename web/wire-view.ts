/**
 * The raw wire panel: on the left each network read as it arrived (its time, size, bytes, and where it
 * split a character or a line), on the right what the client made of it (frames, keepalive comments),
 * each column closed by how the stream ended, and the summary line above them.
 */
import { continuationSeam } from '../src/capture/continuation-seam.ts';
import { getDialect } from '../src/dialects/registry.ts';
import type { Result } from '../src/events/result.ts';
import type { Frame } from '../src/wire/frame.ts';
import { byId } from './by-id.ts';
import { describeEnding, type Ending } from './describe-outcome.ts';
import { type Run, session } from './run.ts';

/** Rows kept in each wire view; later ones are counted, not drawn (a long answer stays responsive). */
const MAX_WIRE_ROWS = 3000;

const wire = byId<HTMLOListElement>('wire');
const wireReads = byId<HTMLOListElement>('wire-reads');
const wireSummary = byId<HTMLParagraphElement>('wire-summary');

/** True while the reader is at the bottom of a wire view: new rows then scroll into sight. */
const following = new Map<HTMLElement, boolean>([
  [wire, true],
  [wireReads, true],
]);
let scrollPending = false;

for (const list of [wire, wireReads]) {
  list.addEventListener('scroll', () => {
    if (list.dataset.autoScroll === String(list.scrollTop)) return;
    following.set(list, list.scrollTop + list.clientHeight >= list.scrollHeight - 8);
  });
}

/** Empties both columns for a new run. */
export function clearWire(): void {
  wire.replaceChildren();
  wireReads.replaceChildren();
  following.set(wire, true);
  following.set(wireReads, true);
}

/** One network read, left column: its time, size, bytes, and where it split things. */
export function addRead(run: Run, chunk: Uint8Array, atMs: number): void {
  run.reads += 1;
  run.bytes += chunk.length;
  // The client may reuse its buffer: keep a copy for the capture.
  run.recording.reads.push({ atMs, bytes: chunk.slice() });
  const view = run.viewer.view(chunk);
  if (view.endsInsideCharacter) run.splitCharacters += 1;
  const row = addRow(run, wireReads, atMs, view.comments > 0 ? 'read comment' : 'read');
  if (row === undefined) return;
  row.append(tag(`${view.bytes} B`));
  if (view.endsInsideCharacter) row.append(tag('split inside a character', true));
  else if (view.endsMidLine) row.append(tag('split mid-line'));
  if (view.comments > 0) row.append(tag(view.comments === 1 ? 'comment' : `${view.comments} comments`));
  const data = document.createElement('code');
  data.textContent = view.text;
  row.append(data);
}

/** One frame the client decoded, right column. */
export function addFrame(run: Run, frame: Frame, atMs: number): void {
  run.frames += 1;
  run.lastFrameData = frame.data;
  const row = addRow(run, wire, atMs, 'frame');
  if (row === undefined) return;
  if (frame.id !== undefined) row.append(tag(`id: ${frame.id}`));
  if (frame.event !== undefined) row.append(tag(`event: ${frame.event}`, frame.event === 'error'));
  if (frame.legacyError === true) row.append(tag('error: line', true));
  if (frame.retry !== undefined) row.append(tag(`retry: ${frame.retry}`));
  const data = document.createElement('code');
  data.textContent = frame.data;
  row.append(data);
}

/** A comment line (a keepalive, or the seam where another replica went on), right column. */
export function addComment(run: Run, text: string, atMs: number): void {
  const seam = continuationSeam(text);
  if (seam === undefined) run.keepalives += 1;
  // The summary names every replica that went on (the response headers name the first one only).
  else if (run.response !== undefined)
    run.response += ` · continued on ${seam.upstream} after ${seam.afterTokens} tokens`;
  const row = addRow(run, wire, atMs, 'comment');
  if (row === undefined) return;
  row.append(
    tag(seam === undefined ? 'keepalive' : `seam: ${seam.upstream} went on after ${seam.afterTokens} tokens`),
  );
  const data = document.createElement('code');
  data.textContent = `:${text}`;
  row.append(data);
}

/** A row for the run in flight (`ended`: the run's closing rows, drawn once it is no longer current). */
function addRow(
  run: Run,
  list: HTMLOListElement,
  atMs: number,
  kind: string,
  ended = false,
): HTMLLIElement | undefined {
  if ((!ended && session.current !== run) || list.childElementCount >= MAX_WIRE_ROWS) return undefined;
  const row = document.createElement('li');
  row.className = kind;
  const time = document.createElement('span');
  time.className = 'time';
  time.textContent = `+${atMs.toFixed(1)} ms`;
  row.append(time);
  list.append(row);
  followWire();
  return row;
}

/** How the run ended, from its Result alone (describe-outcome.ts `describeEnding`). */
export function runEnding(run: Run, result: Result | undefined): Ending {
  const dialect = result?.dialect ?? run.dialect;
  if (dialect === undefined) return describeEnding(result, 'the terminal event', undefined);
  if (dialect !== 'openai-chat' && dialect !== 'openai-completions')
    return describeEnding(result, getDialect(dialect).terminalEvent, undefined);
  // OpenAI's routes: the finish is the terminal marker; [DONE] after it is optional (wire-formats.md).
  const sawDone = run.lastFrameData === '[DONE]';
  return describeEnding(result, sawDone ? getDialect(dialect).terminalEvent : 'a finish_reason', sawDone);
}

/** The last row of each column: how the wire ended, and what the client concluded. */
export function endRows(run: Run, result: Result | undefined): void {
  const atMs = run.recording.end.atMs ?? 0;
  const ending = runEnding(run, result);
  const wireEnd = addRow(run, wireReads, atMs, ending.terminal ? 'end' : 'end missing', true);
  if (wireEnd !== undefined) {
    const endText =
      run.recording.end.kind === 'read-error'
        ? 'the connection broke'
        : run.recording.end.kind === 'interrupted'
          ? 'stopped by you'
          : 'end of body';
    wireEnd.append(tag(endText, run.recording.end.kind !== 'eof'));
    wireEnd.append(tag(ending.wire, !ending.terminal));
    if (ending.note !== undefined) wireEnd.append(tag(ending.note));
  }
  const clientEnd = addRow(run, wire, atMs, result?.complete === true ? 'end' : 'end missing', true);
  if (clientEnd !== undefined) {
    const verdict =
      result === undefined
        ? 'no stream'
        : result.complete
          ? `complete · finish ${result.finishReason ?? 'not given'}`
          : `incomplete: ${result.incomplete ?? 'unknown'}`;
    clientEnd.append(tag(verdict, result?.complete !== true));
    if (result !== undefined) clientEnd.append(tag(`${result.text.length} characters of text`));
  }
}

/** Scrolls the wire views (only them, never the page) to their newest row, once per animation frame. */
function followWire(): void {
  if (scrollPending) return;
  scrollPending = true;
  requestAnimationFrame(() => {
    scrollPending = false;
    for (const [list, follow] of following) {
      if (!follow) continue;
      list.scrollTop = list.scrollHeight;
      list.dataset.autoScroll = String(list.scrollTop);
    }
  });
}

function tag(text: string, alert = false): HTMLSpanElement {
  const span = document.createElement('span');
  span.className = alert ? 'tag alert' : 'tag';
  span.textContent = text;
  return span;
}

/** The line above the columns: the response, the counts, and (once it ended) how the stream ended. */
export function updateWireSummary(run: Run, result: Result | undefined, ended = false): void {
  const parts = [
    `${run.reads} reads · ${run.bytes} bytes`,
    `${run.splitCharacters} split inside a character`,
    `${run.keepalives} keepalive comments`,
    `${run.frames} frames`,
  ];
  if (run.response !== undefined) parts.unshift(run.response);
  if (ended) {
    const ending = runEnding(run, result);
    parts.push(ending.summary);
    if (ending.note !== undefined) parts.push(ending.note);
  }
  if (run.frames + run.keepalives > MAX_WIRE_ROWS) parts.push(`first ${MAX_WIRE_ROWS} shown`);
  wireSummary.textContent = parts.join(' · ');
}
