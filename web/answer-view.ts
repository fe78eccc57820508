/**
 * The answer being streamed: its text as it arrives (Markdown once it settles, code highlighted),
 * reasoning collapsed above it, tool calls as they assemble, the banner that says how it ended when it
 * did not finish, the live figures, and the life of one run (start, events, end) that feeds the wire
 * view beside it.
 */
import type { stream } from '../src/client/token-stream.ts';
import type { DialectId } from '../src/dialects/dialect.ts';
import type { Result, StreamMetrics } from '../src/events/result.ts';
import type { StreamEvent } from '../src/events/stream-event.ts';
import type { Timings, Usage } from '../src/events/usage.ts';
import type { Frame } from '../src/wire/frame.ts';
import { byId, showStatus } from './by-id.ts';
import { describeFailure, describeResult, type Outcome } from './describe-outcome.ts';
import { highlightCodeIn } from './highlight-code.ts';
import { renderMarkdown } from './render-markdown.ts';
import { type Run, session, type ToolView } from './run.ts';
import { ReadViewer } from './wire-reads.ts';
import { addComment, addFrame, addRead, clearWire, endRows, updateWireSummary } from './wire-view.ts';

const FIGURE_TICK_MS = 100;

const answer = byId<HTMLDivElement>('answer');
const banner = byId<HTMLDivElement>('banner');
const bannerTitle = byId<HTMLElement>('banner-title');
const bannerDetail = byId<HTMLElement>('banner-detail');
const thread = byId<HTMLDivElement>('thread');
const currentPrompt = byId<HTMLDivElement>('current-prompt');
const currentPromptText = byId<HTMLDivElement>('current-prompt-text');
const reasoningBox = byId<HTMLDetailsElement>('reasoning-box');
const reasoningText = byId<HTMLDivElement>('reasoning');
const toolCallsBox = byId<HTMLDivElement>('tool-calls');
const sendButton = byId<HTMLButtonElement>('send');
const stopButton = byId<HTMLButtonElement>('stop');
const copyButton = byId<HTMLButtonElement>('copy');
const regenerateButton = byId<HTMLButtonElement>('regenerate');
const saveCaptureButton = byId<HTMLButtonElement>('save-capture');
const saveBodyButton = byId<HTMLButtonElement>('save-body');
const figures = {
  ttft: byId<HTMLElement>('fig-ttft'),
  tps: byId<HTMLElement>('fig-tps'),
  chunks: byId<HTMLElement>('fig-chunks'),
  elapsed: byId<HTMLElement>('fig-elapsed'),
  finish: byId<HTMLElement>('fig-finish'),
  usage: byId<HTMLElement>('fig-usage'),
};

/** How a run ended: what the conversation keeps of it. */
export interface RunEnd {
  outcome: Outcome;
  result: Result | undefined;
  text: string;
}

/** Empties the answer area (the banner, reasoning, tool calls and the prompt above it). */
export function clearCurrent(): void {
  answer.replaceChildren();
  answer.dataset.state = 'idle';
  reasoningBox.hidden = true;
  toolCallsBox.hidden = true;
  toolCallsBox.replaceChildren();
  banner.hidden = true;
  copyButton.disabled = true;
  regenerateButton.disabled = true;
  delete answer.dataset.prompt;
  currentPrompt.hidden = true;
}

/** Renders settled Markdown (sanitized: render-markdown.ts) and highlights its code blocks. */
export function showMarkdown(target: HTMLElement, markdown: string): void {
  target.innerHTML = renderMarkdown(markdown);
  highlightCodeIn(target);
}

/** A new run: the answer area and the wire views emptied, Send off and Stop on. */
export function startRun(dialect: DialectId | undefined, prompt: string | undefined): Run {
  clearCurrent();
  const textNode = document.createTextNode('');
  const plain = document.createElement('div');
  plain.className = 'plain';
  plain.append(textNode);
  answer.append(plain);
  answer.dataset.state = 'streaming';
  if (prompt !== undefined) {
    answer.dataset.prompt = prompt;
    currentPromptText.textContent = prompt;
    currentPrompt.hidden = false;
  }
  answer.setAttribute('aria-busy', 'true');
  reasoningText.replaceChildren();
  const reasoningNode = document.createTextNode('');
  reasoningText.append(reasoningNode);
  delete banner.dataset.kind;
  clearWire();
  for (const figure of Object.values(figures)) figure.textContent = '–';
  const sendHadFocus = document.activeElement === sendButton;
  sendButton.disabled = true;
  stopButton.disabled = false;
  saveCaptureButton.disabled = true;
  saveBodyButton.disabled = true;
  // A disabled button drops focus to <body>: hand it to Stop, the next thing a keyboard user needs.
  if (sendHadFocus) stopButton.focus();
  const run: Run = {
    controller: new AbortController(),
    startedAt: performance.now(),
    dialect,
    prompt,
    firstContentAt: undefined,
    contentEvents: 0,
    frames: 0,
    lastFrameData: undefined,
    keepalives: 0,
    reads: 0,
    bytes: 0,
    splitCharacters: 0,
    viewer: new ReadViewer(),
    recording: { source: 'live', dialect, reads: [], end: { kind: 'eof' } },
    response: undefined,
    text: '',
    textNode,
    reasoningNode,
    tools: new Map(),
    usage: undefined,
    ticker: setInterval(() => liveFigures(run), FIGURE_TICK_MS),
  };
  current(run);
  updateWireSummary(run, undefined);
  return run;
}

function current(run: Run | undefined): void {
  session.current = run;
}

/** The client hooks that feed the wire views and the capture. */
export function wireHooks(run: Run) {
  return {
    onFrame: (frame: Frame, atMs: number) => addFrame(run, frame, atMs),
    onComment: (text: string, atMs: number) => addComment(run, text, atMs),
    onChunk: (chunk: Uint8Array, atMs: number) => addRead(run, chunk, atMs),
    onResponse: (response: Response) => {
      run.response = `HTTP ${response.status} · ${response.headers.get('content-type') ?? 'no Content-Type'}`;
      // The gateway names the upstream that answered, and those that failed before it.
      const upstream = response.headers.get('x-tokenwire-upstream');
      if (upstream !== null) run.response += ` · answered by ${upstream}`;
      const attempts = response.headers.get('x-tokenwire-attempts');
      if (attempts !== null) run.response += ` (attempts: ${attempts})`;
      run.recording.response = {
        status: response.status,
        statusText: response.statusText,
        headers: Object.fromEntries(response.headers),
        atMs: performance.now() - run.startedAt,
      };
    },
  };
}

/** Reads the stream to its end and shows how it ended. */
export async function consume(run: Run, tokens: ReturnType<typeof stream>): Promise<RunEnd> {
  try {
    for await (const event of tokens) onEvent(run, event);
    const result = await tokens.result;
    return endRun(run, describeResult(result), result);
  } catch (error) {
    return endRun(run, describeFailure(error), undefined);
  }
}

/** Stop: aborts the fetch (the connection closes and the gateway aborts its upstream). */
export function stopRun(): void {
  if (session.current === undefined) return;
  showStatus('Stopping…');
  session.current.controller.abort();
}

function onEvent(run: Run, event: StreamEvent): void {
  switch (event.type) {
    case 'text':
      run.text += event.text;
      // Appending to one text node costs O(piece), however long the answer grows.
      run.textNode.appendData(event.text);
      countContent(run);
      return;
    case 'reasoning':
      reasoningBox.hidden = false;
      run.reasoningNode.appendData(event.text);
      countContent(run);
      return;
    case 'tool-call-delta':
      toolView(run, event.index, event.name).args.appendData(event.argumentsDelta);
      countContent(run);
      return;
    case 'tool-call': {
      const view = toolView(run, event.index, event.name);
      view.parsed.textContent =
        event.inputError === undefined
          ? `input: ${JSON.stringify(event.input, null, 2)}`
          : `! the arguments are not valid JSON: ${event.inputError}`;
      view.parsed.hidden = false;
      return;
    }
    case 'usage':
      run.usage = { ...run.usage, ...event.usage };
      figures.usage.textContent = formatUsage(run.usage, undefined);
      return;
    default:
      return;
  }
}

/** The box of one tool call: its name, the arguments as they grow, then the parsed input. */
function toolView(run: Run, index: number, name: string | undefined): ToolView {
  let view = run.tools.get(index);
  if (view === undefined) {
    if (run.tools.size === 0) {
      const heading = document.createElement('h3');
      heading.textContent = 'Tool calls';
      toolCallsBox.replaceChildren(heading);
    }
    const box = document.createElement('div');
    box.className = 'tool-call';
    const title = document.createElement('code');
    title.className = 'tool-name';
    title.textContent = `${name ?? 'tool'}(…)`;
    const argsPre = document.createElement('pre');
    argsPre.className = 'tool-args';
    const args = document.createTextNode('');
    argsPre.append(args);
    const parsed = document.createElement('pre');
    parsed.className = 'tool-input';
    parsed.hidden = true;
    box.append(title, argsPre, parsed);
    toolCallsBox.append(box);
    toolCallsBox.hidden = false;
    view = { args, parsed };
    run.tools.set(index, view);
  }
  return view;
}

function countContent(run: Run): void {
  run.contentEvents += 1;
  run.firstContentAt ??= performance.now();
}

function endRun(run: Run, outcome: Outcome, result: Result | undefined): RunEnd {
  clearInterval(run.ticker);
  current(undefined);
  const text = result?.text ?? run.text;
  // Settled: the plain text becomes Markdown (sanitized; see render-markdown.ts).
  if (text === '') {
    const empty = document.createElement('p');
    empty.className = 'muted';
    empty.textContent = '(no text)';
    answer.replaceChildren(empty);
  } else {
    showMarkdown(answer, text);
  }
  answer.dataset.state = outcome.kind;
  answer.setAttribute('aria-busy', 'false');

  if (outcome.kind === 'finished') {
    banner.hidden = true;
    delete banner.dataset.kind;
  } else {
    banner.dataset.kind = outcome.kind;
    bannerTitle.textContent = outcome.title;
    bannerDetail.textContent = outcome.detail;
    banner.hidden = false;
  }
  showStatus(
    outcome.kind === 'finished'
      ? `${outcome.title}. ${outcome.detail}`
      : 'Stream ended: see the notice above.',
  );
  finalFigures(run, result);
  const end = run.recording.end;
  end.atMs = performance.now() - run.startedAt;
  if (result?.dialect !== undefined) run.recording.dialect = result.dialect as DialectId;
  if (result !== undefined && result.incomplete === 'connection-closed') {
    end.kind = 'read-error';
    // What broke, not the client's sentence about it (a replay says that again).
    end.message = 'the connection broke before the end of the body';
  } else if (result?.incomplete === 'aborted') end.kind = 'interrupted';
  else if (result?.incomplete === 'idle-timeout') end.kind = 'idle-timeout';
  else if (result === undefined && run.recording.response === undefined) end.kind = 'request-failed';
  updateWireSummary(run, result, true);
  endRows(run, result);
  session.lastRecording = run.recording;
  saveCaptureButton.disabled = run.recording.response === undefined;
  saveBodyButton.disabled = run.recording.reads.length === 0;
  if (run.prompt !== undefined) {
    copyButton.disabled = false;
    regenerateButton.disabled = false;
  }
  thread.scrollTop = thread.scrollHeight;

  const stopHadFocus = document.activeElement === stopButton;
  stopButton.disabled = true;
  sendButton.disabled = false;
  if (stopHadFocus) sendButton.focus();
  return { outcome, result, text };
}

// ---- figures --------------------------------------------------------------------------------------

function liveFigures(run: Run): void {
  const now = performance.now();
  figures.elapsed.textContent = formatMs(now - run.startedAt);
  figures.chunks.textContent = String(run.contentEvents);
  if (run.firstContentAt !== undefined) {
    figures.ttft.textContent = formatMs(run.firstContentAt - run.startedAt);
    const seconds = (now - run.firstContentAt) / 1000;
    // Live, a content event stands for a token: an estimate until the server's count arrives.
    if (run.contentEvents > 1 && seconds > 0)
      figures.tps.textContent = `≈ ${((run.contentEvents - 1) / seconds).toFixed(1)}`;
  }
  updateWireSummary(run, undefined);
}

function finalFigures(run: Run, result: Result | undefined): void {
  if (result === undefined) {
    liveFigures(run);
    return;
  }
  const metrics: StreamMetrics = result.metrics;
  figures.elapsed.textContent = metrics.totalMs === undefined ? '–' : formatMs(metrics.totalMs);
  figures.ttft.textContent = metrics.ttftMs === undefined ? '–' : formatMs(metrics.ttftMs);
  figures.chunks.textContent = String(metrics.chunkCount);
  figures.tps.textContent =
    metrics.outputTokensPerSecond === undefined
      ? '–'
      : `${metrics.outputTokensPerSecond.toFixed(1)}${metrics.outputTokensEstimated ? ' (est.)' : ''}`;
  const raw = result.rawFinishReason;
  figures.finish.textContent =
    result.finishReason === undefined
      ? 'none (no terminal event)'
      : `${result.finishReason}${typeof raw === 'string' && raw !== result.finishReason ? ` (${raw})` : ''}`;
  figures.usage.textContent = formatUsage(result.usage, result.timings);
}

function formatUsage(usage: Usage | undefined, timings: Timings | undefined): string {
  const parts: string[] = [];
  if (usage?.inputTokens !== undefined) parts.push(`in ${usage.inputTokens}`);
  if (usage?.outputTokens !== undefined) parts.push(`out ${usage.outputTokens}`);
  if (usage?.totalTokens !== undefined) parts.push(`total ${usage.totalTokens}`);
  if (usage?.cachedInputTokens !== undefined) parts.push(`cached ${usage.cachedInputTokens}`);
  if (usage?.reasoningTokens !== undefined) parts.push(`reasoning ${usage.reasoningTokens}`);
  const text = parts.length === 0 ? 'not reported' : `${parts.join(' · ')} tokens`;
  const server: string[] = [];
  if (timings?.loadMs !== undefined) server.push(`load ${formatMs(timings.loadMs)}`);
  if (timings?.promptEvalMs !== undefined) server.push(`prompt ${formatMs(timings.promptEvalMs)}`);
  if (timings?.evalMs !== undefined) server.push(`generation ${formatMs(timings.evalMs)}`);
  return server.length === 0 ? text : `${text}; server: ${server.join(', ')}`;
}

function formatMs(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(2)} s`;
}
