/**
 * The playground page: sends one streaming request through the gateway with the project's own client
 * (`stream()` from src/client, bundled by scripts/build-web.mjs), shows the answer as it arrives, the
 * live figures, how it ended, and every frame on the wire.
 */
import { stream } from '../src/client/token-stream.ts';
import { DIALECT_IDS } from '../src/dialects/dialect.ts';
import { getDialect } from '../src/dialects/registry.ts';
import type { ChatRequest } from '../src/events/chat-request.ts';
import type { Result, StreamMetrics, ToolCall } from '../src/events/result.ts';
import type { StreamEvent } from '../src/events/stream-event.ts';
import type { Timings, Usage } from '../src/events/usage.ts';
import { FAULTS, parseFaults } from '../src/sim/faults.ts';
import type { Frame } from '../src/wire/frame.ts';
import { describeFailure, describeResult, type Outcome } from './describe-outcome.ts';
import { DEFAULT_IDLE_MS, FAULT_PRESETS, findPreset } from './fault-presets.ts';
import { renderMarkdown } from './render-markdown.ts';

/** The fault header the gateway forwards to the simulator. */
const FAULT_HEADER = 'x-tokenwire-fault';
/** Rows kept in the wire view; later frames are counted, not drawn (a long answer stays responsive). */
const MAX_WIRE_ROWS = 3000;
const FIGURE_TICK_MS = 100;

function byId<T extends HTMLElement>(id: string): T {
  const element = document.getElementById(id);
  if (element === null) throw new Error(`the page has no #${id}`);
  return element as T;
}

const form = byId<HTMLFormElement>('request-form');
const promptInput = byId<HTMLTextAreaElement>('prompt');
const modelInput = byId<HTMLInputElement>('model');
const modelList = byId<HTMLDataListElement>('model-list');
const dialectSelect = byId<HTMLSelectElement>('dialect');
const dialectHint = byId<HTMLParagraphElement>('dialect-hint');
const maxTokensInput = byId<HTMLInputElement>('max-tokens');
const idleInput = byId<HTMLInputElement>('idle-ms');
const apiKeyInput = byId<HTMLInputElement>('api-key');
const presetSelect = byId<HTMLSelectElement>('fault-preset');
const specInput = byId<HTMLInputElement>('fault-spec');
const faultHint = byId<HTMLParagraphElement>('fault-hint');
const faultError = byId<HTMLParagraphElement>('fault-error');
const faultList = byId<HTMLDListElement>('fault-list');
const sendButton = byId<HTMLButtonElement>('send');
const stopButton = byId<HTMLButtonElement>('stop');
const banner = byId<HTMLDivElement>('banner');
const bannerTitle = byId<HTMLElement>('banner-title');
const bannerDetail = byId<HTMLElement>('banner-detail');
const statusLine = byId<HTMLParagraphElement>('status');
const answer = byId<HTMLDivElement>('answer');
const reasoningBox = byId<HTMLDetailsElement>('reasoning-box');
const reasoningText = byId<HTMLDivElement>('reasoning');
const toolCallsBox = byId<HTMLDivElement>('tool-calls');
const wire = byId<HTMLOListElement>('wire');
const wireSummary = byId<HTMLParagraphElement>('wire-summary');
const gatewayInfo = byId<HTMLParagraphElement>('gateway-info');
const figures = {
  ttft: byId<HTMLElement>('fig-ttft'),
  tps: byId<HTMLElement>('fig-tps'),
  chunks: byId<HTMLElement>('fig-chunks'),
  elapsed: byId<HTMLElement>('fig-elapsed'),
  finish: byId<HTMLElement>('fig-finish'),
  usage: byId<HTMLElement>('fig-usage'),
};

/** One request in flight. */
interface Run {
  readonly controller: AbortController;
  readonly startedAt: number;
  firstContentAt: number | undefined;
  /** Events carrying text, reasoning or tool-call fragments: the live chunk count and token estimate. */
  contentEvents: number;
  frames: number;
  keepalives: number;
  reads: number;
  bytes: number;
  response: string | undefined;
  text: string;
  readonly textNode: Text;
  readonly reasoningNode: Text;
  usage: Usage | undefined;
  readonly ticker: ReturnType<typeof setInterval>;
}

let current: Run | undefined;

/** True while the reader is at the bottom of the wire view: new frames then scroll into sight. */
let wireFollowing = true;
let wireScrollPending = false;
/** Where our own scrolling left the view, so its scroll event is not mistaken for the reader's. */
let wireAutoScrollTop = -1;

// ---- set-up ---------------------------------------------------------------------------------------

for (const id of DIALECT_IDS) dialectSelect.append(new Option(id, id));
showEndpoint();

for (const preset of FAULT_PRESETS) presetSelect.append(new Option(preset.label, preset.id));
presetSelect.append(new Option('Custom', 'custom'));
applyPreset('none');

for (const fault of FAULTS) {
  const term = document.createElement('dt');
  const code = document.createElement('code');
  code.textContent = fault.value === undefined ? fault.name : `${fault.name}=${fault.value}`;
  term.append(code);
  const description = document.createElement('dd');
  description.textContent = fault.description;
  faultList.append(term, description);
}

void loadModels();
apiKeyInput.addEventListener('change', () => void loadModels());

form.addEventListener('submit', (event) => {
  event.preventDefault();
  void send();
});
stopButton.addEventListener('click', stop);
document.addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
    event.preventDefault();
    void send();
  } else if (event.key === 'Escape' && current !== undefined) {
    event.preventDefault();
    stop();
  }
});
wire.addEventListener('scroll', () => {
  if (wire.scrollTop === wireAutoScrollTop) return;
  wireFollowing = wire.scrollTop + wire.clientHeight >= wire.scrollHeight - 8;
});
dialectSelect.addEventListener('change', showEndpoint);
presetSelect.addEventListener('change', () => applyPreset(presetSelect.value));
specInput.addEventListener('input', () => {
  const preset = findPreset(presetSelect.value);
  if (preset !== undefined && preset.spec !== specInput.value.trim()) presetSelect.value = 'custom';
  checkSpec();
});

// ---- the request ----------------------------------------------------------------------------------

async function send(): Promise<void> {
  if (current !== undefined) return;
  const prompt = promptInput.value;
  if (prompt.trim() === '') {
    showStatus('Write a prompt first.');
    promptInput.focus();
    return;
  }
  const spec = checkSpec();
  if (spec === undefined) {
    specInput.focus();
    return;
  }
  const dialect = getDialect(dialectSelect.value);
  const request: ChatRequest = { messages: [{ role: 'user', content: prompt }], includeUsage: true };
  const model = modelInput.value.trim();
  if (model !== '') request.model = model;
  const maxTokens = wholeNumber(maxTokensInput.value);
  if (maxTokens !== undefined && maxTokens > 0) request.maxTokens = maxTokens;
  const idleMs = wholeNumber(idleInput.value) ?? DEFAULT_IDLE_MS;
  const headers = authHeaders();
  if (spec !== '') headers[FAULT_HEADER] = spec;

  const run = startRun();
  showStatus(`Streaming from ${dialect.paths[0]} (${dialect.id})…`);
  // A relative URL, so the page also works behind a proxy that mounts the gateway under a prefix.
  const url = new URL(dialect.paths[0]!.slice(1), window.location.href);
  const tokens = stream(
    { url, dialect: dialect.id, request, headers },
    {
      // Stop aborts the fetch: the connection closes and the gateway aborts its upstream.
      signal: run.controller.signal,
      timeouts: idleMs > 0 ? { idleMs } : {},
      onFrame: (frame, atMs) => addFrame(run, frame, atMs),
      onComment: (text, atMs) => addComment(run, text, atMs),
      onChunk: (chunk) => {
        run.reads += 1;
        run.bytes += chunk.length;
      },
      onResponse: (response) => {
        run.response = `HTTP ${response.status} · ${response.headers.get('content-type') ?? 'no Content-Type'}`;
      },
    },
  );
  try {
    for await (const event of tokens) onEvent(run, event);
    const result = await tokens.result;
    endRun(run, describeResult(result), result);
  } catch (error) {
    endRun(run, describeFailure(error), undefined);
  }
}

function stop(): void {
  if (current === undefined) return;
  showStatus('Stopping…');
  current.controller.abort();
}

function startRun(): Run {
  answer.replaceChildren();
  const textNode = document.createTextNode('');
  const plain = document.createElement('div');
  plain.className = 'plain';
  plain.append(textNode);
  answer.append(plain);
  answer.dataset.state = 'streaming';
  answer.setAttribute('aria-busy', 'true');
  reasoningText.replaceChildren();
  const reasoningNode = document.createTextNode('');
  reasoningText.append(reasoningNode);
  reasoningBox.hidden = true;
  toolCallsBox.hidden = true;
  toolCallsBox.replaceChildren();
  banner.hidden = true;
  delete banner.dataset.kind;
  wire.replaceChildren();
  wireFollowing = true;
  for (const figure of Object.values(figures)) figure.textContent = '–';
  const sendHadFocus = document.activeElement === sendButton;
  sendButton.disabled = true;
  stopButton.disabled = false;
  // A disabled button drops focus to <body>: hand it to Stop, the next thing a keyboard user needs.
  if (sendHadFocus) stopButton.focus();
  const run: Run = {
    controller: new AbortController(),
    startedAt: performance.now(),
    firstContentAt: undefined,
    contentEvents: 0,
    frames: 0,
    keepalives: 0,
    reads: 0,
    bytes: 0,
    response: undefined,
    text: '',
    textNode,
    reasoningNode,
    usage: undefined,
    ticker: setInterval(() => liveFigures(run), FIGURE_TICK_MS),
  };
  current = run;
  updateWireSummary(run);
  return run;
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
      countContent(run);
      return;
    case 'usage':
      run.usage = { ...run.usage, ...event.usage };
      figures.usage.textContent = formatUsage(run.usage, undefined);
      return;
    default:
      return;
  }
}

function countContent(run: Run): void {
  run.contentEvents += 1;
  run.firstContentAt ??= performance.now();
}

function endRun(run: Run, outcome: Outcome, result: Result | undefined): void {
  clearInterval(run.ticker);
  current = undefined;
  const text = result?.text ?? run.text;
  // Settled: the plain text becomes Markdown (sanitized; see render-markdown.ts).
  if (text === '') {
    const empty = document.createElement('p');
    empty.className = 'muted';
    empty.textContent = '(no text)';
    answer.replaceChildren(empty);
  } else {
    answer.innerHTML = renderMarkdown(text);
  }
  answer.dataset.state = outcome.kind;
  answer.setAttribute('aria-busy', 'false');
  if (result !== undefined && result.toolCalls.length > 0) showToolCalls(result.toolCalls);

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
  updateWireSummary(run);

  const stopHadFocus = document.activeElement === stopButton;
  stopButton.disabled = true;
  sendButton.disabled = false;
  if (stopHadFocus) sendButton.focus();
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
  updateWireSummary(run);
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

// ---- the wire view --------------------------------------------------------------------------------

function addFrame(run: Run, frame: Frame, atMs: number): void {
  run.frames += 1;
  const row = wireRow(run, atMs, 'frame');
  if (row === undefined) return;
  if (frame.id !== undefined) row.append(tag(`id: ${frame.id}`));
  if (frame.event !== undefined) row.append(tag(`event: ${frame.event}`, frame.event === 'error'));
  if (frame.legacyError === true) row.append(tag('error: line', true));
  if (frame.retry !== undefined) row.append(tag(`retry: ${frame.retry}`));
  const data = document.createElement('code');
  data.textContent = frame.data;
  row.append(data);
}

function addComment(run: Run, text: string, atMs: number): void {
  run.keepalives += 1;
  const row = wireRow(run, atMs, 'comment');
  if (row === undefined) return;
  const data = document.createElement('code');
  data.textContent = `:${text}`;
  row.append(data);
}

function wireRow(run: Run, atMs: number, kind: string): HTMLLIElement | undefined {
  if (current !== run || wire.childElementCount >= MAX_WIRE_ROWS) return undefined;
  const row = document.createElement('li');
  row.className = kind;
  const time = document.createElement('span');
  time.className = 'time';
  time.textContent = `+${atMs.toFixed(1)} ms`;
  row.append(time);
  wire.append(row);
  followWire();
  return row;
}

/** Scrolls the wire view (only it, never the page) to its newest row, once per animation frame. */
function followWire(): void {
  if (!wireFollowing || wireScrollPending) return;
  wireScrollPending = true;
  requestAnimationFrame(() => {
    wireScrollPending = false;
    if (!wireFollowing) return;
    wire.scrollTop = wire.scrollHeight;
    wireAutoScrollTop = wire.scrollTop;
  });
}

function tag(text: string, alert = false): HTMLSpanElement {
  const span = document.createElement('span');
  span.className = alert ? 'tag alert' : 'tag';
  span.textContent = text;
  return span;
}

function updateWireSummary(run: Run): void {
  const parts = [
    `${run.frames} frames`,
    `${run.keepalives} keepalive comments`,
    `${run.bytes} bytes in ${run.reads} reads`,
  ];
  if (run.response !== undefined) parts.unshift(run.response);
  if (run.frames + run.keepalives > MAX_WIRE_ROWS) parts.push(`first ${MAX_WIRE_ROWS} shown`);
  wireSummary.textContent = parts.join(' · ');
}

// ---- small pieces ---------------------------------------------------------------------------------

function showToolCalls(calls: readonly ToolCall[]): void {
  const heading = document.createElement('h3');
  heading.textContent = 'Tool calls';
  toolCallsBox.replaceChildren(heading);
  for (const call of calls) {
    const pre = document.createElement('pre');
    pre.textContent = `${call.name}(${call.arguments})${call.inputError === undefined ? '' : `\n! ${call.inputError}`}`;
    toolCallsBox.append(pre);
  }
  toolCallsBox.hidden = false;
}

function showStatus(text: string): void {
  statusLine.textContent = text;
}

function showEndpoint(): void {
  const dialect = getDialect(dialectSelect.value);
  const framing = dialect.framing === 'sse' ? 'SSE' : 'NDJSON';
  dialectHint.textContent = `The page calls POST ${dialect.paths[0]} on this gateway (${framing}).`;
}

function applyPreset(id: string): void {
  const preset = findPreset(id);
  if (preset === undefined) return;
  presetSelect.value = preset.id;
  specInput.value = preset.spec;
  maxTokensInput.value = preset.maxTokens === undefined ? '' : String(preset.maxTokens);
  idleInput.value = String(preset.idleMs);
  faultHint.textContent = preset.hint;
  checkSpec();
}

/** The fault spec when valid ('' for none); undefined (and a message by the field) when not. */
function checkSpec(): string | undefined {
  const spec = specInput.value.trim();
  try {
    // The simulator's own parser: the page rejects what the simulator would.
    parseFaults(spec);
    if (/[^\u0020-\u007e]/.test(spec))
      throw new TypeError('use ASCII characters only (it travels in a header)');
    faultError.hidden = true;
    specInput.removeAttribute('aria-invalid');
    return spec;
  } catch (error) {
    faultError.textContent = error instanceof Error ? error.message : String(error);
    faultError.hidden = false;
    specInput.setAttribute('aria-invalid', 'true');
    return undefined;
  }
}

/** The Authorization header when an API key was given. */
function authHeaders(): Record<string, string> {
  const key = apiKeyInput.value.trim();
  return key === '' ? {} : { authorization: `Bearer ${key}` };
}

function wholeNumber(value: string): number | undefined {
  const trimmed = value.trim();
  if (!/^\d+$/.test(trimmed)) return undefined;
  return Number(trimmed);
}

async function loadModels(): Promise<void> {
  try {
    const response = await fetch(new URL('v1/models', window.location.href), { headers: authHeaders() });
    if (!response.ok) return;
    const body = (await response.json()) as { data?: { id?: unknown }[] };
    const ids = (body.data ?? [])
      .map((model) => model.id)
      .filter((id): id is string => typeof id === 'string');
    modelList.replaceChildren(...ids.map((id) => new Option(id, id)));
    if (ids.length > 0)
      gatewayInfo.textContent = `Gateway at ${window.location.host} · models: ${ids.join(', ')}`;
  } catch {
    // The page still works without the list.
  }
}
