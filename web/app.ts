/**
 * The playground page: a conversation with the model through the gateway, using the project's own
 * client (`stream()` from src/client, bundled by scripts/build-web.mjs). It shows the answer as it
 * arrives (reasoning collapsed above it, tool calls as they assemble), the live figures, how it ended,
 * and side by side what arrived on the wire (each read, its split points and comments) and what the
 * client made of it (frames, the terminal event or its absence). With the simulator as the upstream
 * the page can read the simulator's own bytes (`/sim/<path>`), where wire-level faults survive. A
 * stream can be saved as a capture (`tokenwire inspect --file` reads it) and loaded to replay it.
 */

import {
  bytesToBase64,
  CAPTURE_FORMAT,
  formatCaptureFile,
  parseCaptureFile,
  recordingBody,
} from '../src/capture/capture-file.ts';
import type { Recording } from '../src/capture/recording.ts';
import { stream } from '../src/client/token-stream.ts';
import { DIALECT_IDS, type DialectId } from '../src/dialects/dialect.ts';
import { getDialect } from '../src/dialects/registry.ts';
import { fieldRow } from '../src/dialects/request-field-table.ts';
import type { ChatImage, ChatMessage, ChatRequest, ToolDefinition } from '../src/events/chat-request.ts';
import type { Result, StreamMetrics } from '../src/events/result.ts';
import type { StreamEvent } from '../src/events/stream-event.ts';
import type { Timings, Usage } from '../src/events/usage.ts';
import { FAULTS } from '../src/sim/faults.ts';
import type { Frame } from '../src/wire/frame.ts';
import { describeFaults, wireLevelFaults } from './describe-faults.ts';
import { describeFailure, describeResult, type Outcome } from './describe-outcome.ts';
import { DEFAULT_IDLE_MS, FAULT_PRESETS, findPreset, presetSummary } from './fault-presets.ts';
import { renderMarkdown } from './render-markdown.ts';
import { ReadViewer } from './wire-reads.ts';

/** The fault header the gateway forwards to the simulator. */
const FAULT_HEADER = 'x-tokenwire-fault';
/** Where the gateway mounts the simulator's own endpoints (src/sim/sim-raw-route.ts). */
const SIM_PREFIX = 'sim/';
/** Rows kept in each wire view; later ones are counted, not drawn (a long answer stays responsive). */
const MAX_WIRE_ROWS = 3000;
const FIGURE_TICK_MS = 100;
/** A replayed capture waits at most this long between reads (a capture of a long stall plays quickly). */
const MAX_REPLAY_GAP_MS = 1500;

/** The tool "Offer a tool" adds. */
const WEATHER_TOOL: ToolDefinition = {
  name: 'get_weather',
  description: 'The current weather in a city',
  parameters: {
    type: 'object',
    properties: {
      city: { type: 'string', description: 'The city' },
      unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
    },
    required: ['city'],
  },
};

function byId<T extends HTMLElement>(id: string): T {
  const element = document.getElementById(id);
  if (element === null) throw new Error(`the page has no #${id}`);
  return element as T;
}

const form = byId<HTMLFormElement>('request-form');
const promptInput = byId<HTMLTextAreaElement>('prompt');
const systemInput = byId<HTMLTextAreaElement>('system-prompt');
const modelInput = byId<HTMLInputElement>('model');
const modelList = byId<HTMLDataListElement>('model-list');
const dialectSelect = byId<HTMLSelectElement>('dialect');
const dialectHint = byId<HTMLParagraphElement>('dialect-hint');
const maxTokensInput = byId<HTMLInputElement>('max-tokens');
const idleInput = byId<HTMLInputElement>('idle-ms');
const temperatureInput = byId<HTMLInputElement>('temperature');
const topPInput = byId<HTMLInputElement>('top-p');
const seedInput = byId<HTMLInputElement>('seed');
const stopInput = byId<HTMLInputElement>('stop-strings');
const apiKeyInput = byId<HTMLInputElement>('api-key');
const toolInput = byId<HTMLInputElement>('offer-tool');
const reasoningInput = byId<HTMLInputElement>('want-reasoning');
const rawInput = byId<HTMLInputElement>('raw-sim');
const rawHint = byId<HTMLParagraphElement>('raw-hint');
const presetSelect = byId<HTMLSelectElement>('fault-preset');
const specInput = byId<HTMLInputElement>('fault-spec');
const faultHint = byId<HTMLParagraphElement>('fault-hint');
const presetSets = byId<HTMLParagraphElement>('preset-sets');
const faultError = byId<HTMLParagraphElement>('fault-error');
const faultList = byId<HTMLDListElement>('fault-list');
const sendButton = byId<HTMLButtonElement>('send');
const stopButton = byId<HTMLButtonElement>('stop');
const newChatButton = byId<HTMLButtonElement>('new-chat');
const copyButton = byId<HTMLButtonElement>('copy');
const regenerateButton = byId<HTMLButtonElement>('regenerate');
const saveCaptureButton = byId<HTMLButtonElement>('save-capture');
const saveBodyButton = byId<HTMLButtonElement>('save-body');
const loadCaptureInput = byId<HTMLInputElement>('load-capture');
const imageInput = byId<HTMLInputElement>('image');
const banner = byId<HTMLDivElement>('banner');
const bannerTitle = byId<HTMLElement>('banner-title');
const bannerDetail = byId<HTMLElement>('banner-detail');
const statusLine = byId<HTMLElement>('status');
const thread = byId<HTMLDivElement>('thread');
const conversation = byId<HTMLOListElement>('conversation');
const answer = byId<HTMLDivElement>('answer');
const currentPrompt = byId<HTMLDivElement>('current-prompt');
const currentPromptText = byId<HTMLDivElement>('current-prompt-text');
const reasoningBox = byId<HTMLDetailsElement>('reasoning-box');
const reasoningText = byId<HTMLDivElement>('reasoning');
const toolCallsBox = byId<HTMLDivElement>('tool-calls');
const wire = byId<HTMLOListElement>('wire');
const wireReads = byId<HTMLOListElement>('wire-reads');
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

/** One tool call as it assembles. */
interface ToolView {
  readonly args: Text;
  readonly parsed: HTMLPreElement;
}

/** One request in flight (or one capture replaying). */
interface Run {
  readonly controller: AbortController;
  readonly startedAt: number;
  readonly dialect: DialectId;
  /** The conversation turn this run answers; undefined for a replayed capture. */
  readonly prompt: string | undefined;
  firstContentAt: number | undefined;
  /** Events carrying text, reasoning or tool-call fragments: the live chunk count and token estimate. */
  contentEvents: number;
  frames: number;
  lastFrameData: string | undefined;
  keepalives: number;
  reads: number;
  bytes: number;
  splitCharacters: number;
  readonly viewer: ReadViewer;
  readonly recording: Recording;
  response: string | undefined;
  text: string;
  readonly textNode: Text;
  readonly reasoningNode: Text;
  readonly tools: Map<number, ToolView>;
  usage: Usage | undefined;
  readonly ticker: ReturnType<typeof setInterval>;
}

let current: Run | undefined;
/** The finished turns, oldest first: what the next request sends as history. */
let history: ChatMessage[] = [];
/** The last settled exchange (its prompt and answer), kept for Copy and Regenerate. */
let lastExchange: { prompt: string; text: string; partial: boolean } | undefined;
/** History indexes of answers that did not finish (shown marked, never as whole answers). */
let partialTurns = new Set<number>();
/** The capture of the last stream, for Save. */
let lastRecording: Recording | undefined;
/** Whether the gateway serves the simulator's own bytes at /sim/. */
let simRawAvailable = false;

/** True while the reader is at the bottom of a wire view: new rows then scroll into sight. */
const following = new Map<HTMLElement, boolean>([
  [wire, true],
  [wireReads, true],
]);
let scrollPending = false;

// ---- set-up ---------------------------------------------------------------------------------------

// Every dialect in the registry (new ones appear here as they are registered).
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
void detectSimRaw();
apiKeyInput.addEventListener('change', () => void loadModels());

form.addEventListener('submit', (event) => {
  event.preventDefault();
  void send();
});
stopButton.addEventListener('click', stop);
newChatButton.addEventListener('click', newChat);
copyButton.addEventListener('click', () => void copyAnswer());
regenerateButton.addEventListener('click', regenerate);
saveCaptureButton.addEventListener('click', saveCapture);
saveBodyButton.addEventListener('click', saveBody);
loadCaptureInput.addEventListener('change', () => void loadCapture());
document.addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
    event.preventDefault();
    void send();
  } else if (event.key === 'Escape' && current !== undefined) {
    event.preventDefault();
    stop();
  }
});
for (const list of [wire, wireReads]) {
  list.addEventListener('scroll', () => {
    if (list.dataset.autoScroll === String(list.scrollTop)) return;
    following.set(list, list.scrollTop + list.clientHeight >= list.scrollHeight - 8);
  });
}
dialectSelect.addEventListener('change', showEndpoint);
dialectSelect.addEventListener('change', showImageSupport);
showImageSupport();
rawInput.addEventListener('change', showEndpoint);
presetSelect.addEventListener('change', () => applyPreset(presetSelect.value));
specInput.addEventListener('input', () => {
  const preset = findPreset(presetSelect.value);
  if (preset !== undefined && preset.spec !== specInput.value.trim()) presetSelect.value = 'custom';
  checkSpec();
});

// ---- the conversation -----------------------------------------------------------------------------

async function send(promptOverride?: string): Promise<void> {
  if (current !== undefined) return;
  const prompt = promptOverride ?? promptInput.value;
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
  commitLastExchange();
  const dialect = getDialect(dialectSelect.value);
  const messages: ChatMessage[] = [];
  const system = systemInput.value.trim();
  if (system !== '') messages.push({ role: 'system', content: system });
  const turn: ChatMessage = { role: 'user', content: prompt };
  // The picked image goes with this prompt only, in the dialect's own shape (its request mapping).
  const image = takesImages(dialect.id) ? await attachedImage() : undefined;
  if (image !== undefined) turn.images = [image];
  messages.push(...history, turn);
  const request: ChatRequest = { messages, includeUsage: true };
  const model = modelInput.value.trim();
  if (model !== '') request.model = model;
  const maxTokens = wholeNumber(maxTokensInput.value);
  if (maxTokens !== undefined && maxTokens > 0) request.maxTokens = maxTokens;
  const temperature = decimal(temperatureInput.value);
  if (temperature !== undefined) request.temperature = temperature;
  const topP = decimal(topPInput.value);
  if (topP !== undefined) request.topP = topP;
  const seed = wholeNumber(seedInput.value);
  if (seed !== undefined) request.seed = seed;
  const stops = stopInput.value
    .split(',')
    .map((stop) => stop.trim())
    .filter((stop) => stop !== '');
  if (stops.length > 0) request.stop = stops;
  if (toolInput.checked) request.tools = [WEATHER_TOOL];
  // An effort, which every dialect maps (OpenAI's reasoning_effort, Ollama's think).
  if (reasoningInput.checked) request.reasoning = 'medium';
  const idleMs = wholeNumber(idleInput.value) ?? DEFAULT_IDLE_MS;
  const headers = authHeaders();
  if (spec !== '') headers[FAULT_HEADER] = spec;

  const raw = rawInput.checked && simRawAvailable;
  const path = dialect.paths[0]!.slice(1);
  // A relative URL, so the page also works behind a proxy that mounts the gateway under a prefix.
  const url = new URL(raw ? `${SIM_PREFIX}${path}` : path, window.location.href);
  const run = startRun(dialect.id, prompt);
  promptInput.value = '';
  imageInput.value = '';
  showStatus(
    `Streaming from ${raw ? `/${SIM_PREFIX}${path} (the simulator's own bytes)` : `/${path}`} (${dialect.id})…`,
  );
  run.recording.request = { method: 'POST', url: url.href, headers: redact(headers) };
  const tokens = stream(
    { url, dialect: dialect.id, request, headers },
    {
      // Stop aborts the fetch: the connection closes and the gateway aborts its upstream.
      signal: run.controller.signal,
      timeouts: idleMs > 0 ? { idleMs } : {},
      fetch: async (outgoing: Request) => {
        const body = await outgoing.clone().text();
        if (run.recording.request !== undefined) run.recording.request.body = body;
        return fetch(outgoing);
      },
      ...wireHooks(run),
    },
  );
  await consume(run, tokens);
}

/** The client hooks that feed the wire views and the capture. */
function wireHooks(run: Run) {
  return {
    onFrame: (frame: Frame, atMs: number) => addFrame(run, frame, atMs),
    onComment: (text: string, atMs: number) => addComment(run, text, atMs),
    onChunk: (chunk: Uint8Array, atMs: number) => addRead(run, chunk, atMs),
    onResponse: (response: Response) => {
      run.response = `HTTP ${response.status} · ${response.headers.get('content-type') ?? 'no Content-Type'}`;
      run.recording.response = {
        status: response.status,
        statusText: response.statusText,
        headers: Object.fromEntries(response.headers),
        atMs: performance.now() - run.startedAt,
      };
    },
  };
}

async function consume(run: Run, tokens: ReturnType<typeof stream>): Promise<void> {
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

/** Moves the last settled exchange into the history list (it becomes context for the next turn). */
function commitLastExchange(): void {
  if (lastExchange === undefined) return;
  const { prompt, text, partial } = lastExchange;
  history.push({ role: 'user', content: prompt }, { role: 'assistant', content: text });
  if (partial) partialTurns.add(history.length - 1);
  renderHistory();
  lastExchange = undefined;
}

function renderHistory(): void {
  conversation.replaceChildren();
  history.forEach((message, index) => {
    const item = document.createElement('li');
    item.className = `turn ${message.role}`;
    item.dataset.index = String(index);
    const who = document.createElement('span');
    who.className = 'who';
    who.textContent = message.role === 'user' ? 'You' : 'Model';
    const body = document.createElement('div');
    body.className = 'body';
    if (message.role === 'assistant') body.innerHTML = renderMarkdown(message.content);
    else body.textContent = message.content;
    item.append(who, body);
    if (partialTurns.has(index)) {
      item.classList.add('partial');
      const note = document.createElement('p');
      note.className = 'partial-note';
      note.textContent = 'This answer did not finish (see its notice when it streamed).';
      item.append(note);
    }
    if (message.role === 'user') {
      const edit = document.createElement('button');
      edit.type = 'button';
      edit.className = 'edit';
      edit.textContent = 'Edit';
      edit.setAttribute('aria-label', `Edit and resend: ${message.content.slice(0, 40)}`);
      edit.addEventListener('click', () => editTurn(index));
      item.append(edit);
    }
    conversation.append(item);
  });
}

/** Edit-and-resend: the turn goes back into the prompt box; it and everything after it are dropped. */
function editTurn(index: number): void {
  if (current !== undefined) return;
  const message = history[index];
  if (message === undefined) return;
  history = history.slice(0, index);
  partialTurns = new Set([...partialTurns].filter((turn) => turn < index));
  lastExchange = undefined;
  renderHistory();
  clearCurrent();
  promptInput.value = message.content;
  promptInput.focus();
  showStatus('Edit the prompt and send it again.');
}

/** Asks the last question again, in place of its answer. */
function regenerate(): void {
  if (current !== undefined || lastExchange === undefined) return;
  const { prompt } = lastExchange;
  lastExchange = undefined;
  void send(prompt);
}

function newChat(): void {
  if (current !== undefined) stop();
  history = [];
  partialTurns = new Set();
  lastExchange = undefined;
  renderHistory();
  clearCurrent();
  showStatus('Ready.');
}

async function copyAnswer(): Promise<void> {
  const text = lastExchange?.text ?? '';
  try {
    await navigator.clipboard.writeText(text);
    showStatus('Copied the answer.');
  } catch {
    showStatus('The browser did not allow copying.');
  }
}

function clearCurrent(): void {
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

/** The dialects whose requests carry images (the request field table's `images` row). */
function takesImages(dialect: string): boolean {
  return typeof fieldRow('images')?.wire[dialect as DialectId] === 'string';
}

function showImageSupport(): void {
  const takes = takesImages(dialectSelect.value);
  imageInput.disabled = !takes;
  if (!takes) imageInput.value = '';
}

/** The picked image as base64 with its media type, or undefined when none is picked. */
async function attachedImage(): Promise<ChatImage | undefined> {
  const file = imageInput.files?.[0];
  if (file === undefined) return undefined;
  const bytes = new Uint8Array(await file.arrayBuffer());
  const image: ChatImage = { data: bytesToBase64(bytes) };
  // With no type the mapping reads it from the bytes where a dialect needs one (Anthropic's media_type).
  if (file.type !== '') image.mediaType = file.type;
  return image;
}

// ---- one run --------------------------------------------------------------------------------------

function startRun(dialect: DialectId, prompt: string | undefined): Run {
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
  wire.replaceChildren();
  wireReads.replaceChildren();
  following.set(wire, true);
  following.set(wireReads, true);
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
  current = run;
  updateWireSummary(run, undefined);
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
  if (result !== undefined && result.incomplete === 'connection-closed') {
    end.kind = 'read-error';
    // What broke, not the client's sentence about it (a replay says that again).
    end.message = 'the connection broke before the end of the body';
  } else if (result?.incomplete === 'aborted') end.kind = 'interrupted';
  else if (result?.incomplete === 'idle-timeout') end.kind = 'idle-timeout';
  else if (result === undefined && run.recording.response === undefined) end.kind = 'request-failed';
  updateWireSummary(run, result);
  endRows(run, result);
  lastRecording = run.recording;
  saveCaptureButton.disabled = run.recording.response === undefined;
  saveBodyButton.disabled = run.recording.reads.length === 0;
  if (run.prompt !== undefined) {
    lastExchange = { prompt: run.prompt, text, partial: outcome.kind !== 'finished' };
    copyButton.disabled = false;
    regenerateButton.disabled = false;
  }
  thread.scrollTop = thread.scrollHeight;

  const stopHadFocus = document.activeElement === stopButton;
  stopButton.disabled = true;
  sendButton.disabled = false;
  if (stopHadFocus) sendButton.focus();
}

// ---- the wire views -------------------------------------------------------------------------------

/** One network read, left column: its time, size, bytes, and where it split things. */
function addRead(run: Run, chunk: Uint8Array, atMs: number): void {
  run.reads += 1;
  run.bytes += chunk.length;
  // The client may reuse its buffer: keep a copy for the capture.
  run.recording.reads.push({ atMs, bytes: chunk.slice() });
  const view = run.viewer.view(chunk);
  if (view.endsInsideCharacter) run.splitCharacters += 1;
  const row = row_(run, wireReads, atMs, view.comments > 0 ? 'read comment' : 'read');
  if (row === undefined) return;
  row.append(tag(`${view.bytes} B`));
  if (view.endsInsideCharacter) row.append(tag('split inside a character', true));
  else if (view.endsMidLine) row.append(tag('split mid-line'));
  if (view.comments > 0) row.append(tag(view.comments === 1 ? 'comment' : `${view.comments} comments`));
  const data = document.createElement('code');
  data.textContent = view.text;
  row.append(data);
}

function addFrame(run: Run, frame: Frame, atMs: number): void {
  run.frames += 1;
  run.lastFrameData = frame.data;
  const row = row_(run, wire, atMs, 'frame');
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
  const row = row_(run, wire, atMs, 'comment');
  if (row === undefined) return;
  row.append(tag('keepalive'));
  const data = document.createElement('code');
  data.textContent = `:${text}`;
  row.append(data);
}

function row_(run: Run, list: HTMLOListElement, atMs: number, kind: string): HTMLLIElement | undefined {
  if (current !== run || list.childElementCount >= MAX_WIRE_ROWS) return undefined;
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

/**
 * The terminal event, or its absence: OpenAI's routes end with `[DONE]`; the others with their own
 * final event, which the client reports as a finish reason.
 */
function terminalEvent(run: Run, result: Result | undefined): { present: boolean; what: string } {
  if (run.dialect.startsWith('openai-c')) {
    const done = run.lastFrameData === '[DONE]';
    return { present: done, what: '[DONE]' };
  }
  return { present: result?.finishReason !== undefined, what: 'the final event' };
}

/** The last row of each column: how the wire ended, and what the client concluded. */
function endRows(run: Run, result: Result | undefined): void {
  const atMs = run.recording.end.atMs ?? 0;
  const terminal = terminalEvent(run, result);
  // The run has ended (`current` is cleared): let its last two rows through.
  current = run;
  const wireEnd = row_(run, wireReads, atMs, terminal.present ? 'end' : 'end missing');
  if (wireEnd !== undefined) {
    const endText =
      run.recording.end.kind === 'read-error'
        ? 'the connection broke'
        : run.recording.end.kind === 'interrupted'
          ? 'stopped by you'
          : 'end of body';
    wireEnd.append(tag(endText, run.recording.end.kind !== 'eof'));
    wireEnd.append(
      terminal.present
        ? tag(`terminal event: ${terminal.what}`)
        : tag(`no terminal event (${terminal.what} never came)`, true),
    );
  }
  const clientEnd = row_(run, wire, atMs, result?.complete === true ? 'end' : 'end missing');
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
  current = undefined;
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

function updateWireSummary(run: Run, result: Result | undefined): void {
  const parts = [
    `${run.reads} reads · ${run.bytes} bytes`,
    `${run.splitCharacters} split inside a character`,
    `${run.keepalives} keepalive comments`,
    `${run.frames} frames`,
  ];
  if (run.response !== undefined) parts.unshift(run.response);
  if (result !== undefined || run.recording.end.atMs !== undefined) {
    const terminal = terminalEvent(run, result);
    parts.push(terminal.present ? 'terminal event received' : 'no terminal event');
  }
  if (run.frames + run.keepalives > MAX_WIRE_ROWS) parts.push(`first ${MAX_WIRE_ROWS} shown`);
  wireSummary.textContent = parts.join(' · ');
}

// ---- captures -------------------------------------------------------------------------------------

function saveCapture(): void {
  if (lastRecording === undefined) return;
  download(
    formatCaptureFile(lastRecording, `tokenwire playground ${new Date().toISOString()}`),
    `tokenwire-${lastRecording.dialect ?? 'stream'}.capture.json`,
    'application/json',
  );
}

function saveBody(): void {
  if (lastRecording === undefined) return;
  const framing = lastRecording.dialect === undefined ? 'sse' : getDialect(lastRecording.dialect).framing;
  download(
    recordingBody(lastRecording),
    `tokenwire-${lastRecording.dialect ?? 'stream'}.${framing}`,
    'application/octet-stream',
  );
}

function download(content: string | Uint8Array, name: string, type: string): void {
  const blob = new Blob([content as BlobPart], { type });
  const link = document.createElement('a');
  link.href = URL.createObjectURL(blob);
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 1000);
}

/** Replays a saved capture (or a raw body) through the client, at its recorded pace. */
async function loadCapture(): Promise<void> {
  const file = loadCaptureInput.files?.[0];
  loadCaptureInput.value = '';
  if (file === undefined || current !== undefined) return;
  const bytes = new Uint8Array(await file.arrayBuffer());
  let recording: Recording | undefined;
  try {
    recording = parseCaptureFile(bytes, file.name);
  } catch (error) {
    showStatus(`${file.name} is not a readable ${CAPTURE_FORMAT}: ${(error as Error).message}`);
    return;
  }
  recording ??= { source: 'file', name: file.name, reads: [{ atMs: 0, bytes }], end: { kind: 'eof' } };
  const dialectId = recording.dialect ?? (getDialect(dialectSelect.value).id as DialectId);
  const dialect = getDialect(dialectId);
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
  const headers = new Headers(head?.headers ?? {});
  if (!headers.has('content-type'))
    headers.set('content-type', dialect.framing === 'sse' ? 'text/event-stream' : 'application/x-ndjson');
  const response = new Response(body, { status: head?.status ?? 200, headers });
  const run = startRun(dialect.id, undefined);
  showStatus(`Replaying ${file.name} (${reads.length} reads, ${dialect.id})…`);
  const tokens = stream(
    { url: new URL(dialect.paths[0]!.slice(1), window.location.href), dialect: dialect.id, body: {} },
    { signal: run.controller.signal, fetch: async () => response, ...wireHooks(run) },
  );
  await consume(run, tokens);
  showStatus(`Replayed ${file.name}: ${answer.dataset.state ?? ''}.`);
}

// ---- small pieces ---------------------------------------------------------------------------------

function showStatus(text: string): void {
  statusLine.textContent = text;
}

function showEndpoint(): void {
  const dialect = getDialect(dialectSelect.value);
  const framing = dialect.framing === 'sse' ? 'SSE' : 'NDJSON';
  const raw = rawInput.checked && simRawAvailable;
  dialectHint.textContent = raw
    ? `The page calls POST /${SIM_PREFIX}${dialect.paths[0]!.slice(1)}: the simulator's own bytes (${framing}).`
    : `The page calls POST ${dialect.paths[0]} on this gateway (${framing}).`;
  rawHint.textContent = simRawAvailable
    ? raw
      ? "Reading the simulator's own bytes: wire-level faults (splits, keepalives, a missing [DONE]) arrive as written."
      : 'Through the gateway: it decodes and re-encodes, so wire-level faults do not reach the page.'
    : 'The gateway fronts a real upstream: there is no simulator to read.';
}

function applyPreset(id: string): void {
  const preset = findPreset(id);
  if (preset === undefined) return;
  presetSelect.value = preset.id;
  specInput.value = preset.spec;
  maxTokensInput.value = preset.maxTokens === undefined ? '' : String(preset.maxTokens);
  idleInput.value = String(preset.idleMs);
  if (simRawAvailable) rawInput.checked = preset.raw === true;
  faultHint.textContent = preset.hint;
  presetSets.textContent = presetSummary(preset);
  showEndpoint();
  checkSpec();
}

/** The fault spec when valid ('' for none); undefined (and a message by the field) when not. */
function checkSpec(): string | undefined {
  const spec = specInput.value.trim();
  try {
    // The simulator's own parser: the page rejects what the simulator would.
    const described = describeFaults(spec);
    if (/[^\u0020-\u007e]/.test(spec))
      throw new TypeError('use ASCII characters only (it travels in a header)');
    faultError.hidden = true;
    specInput.removeAttribute('aria-invalid');
    if (presetSelect.value === 'custom') {
      const wireOnly = wireLevelFaults(spec);
      faultHint.textContent =
        described === ''
          ? 'No fault: a clean stream.'
          : `${described}.${wireOnly.length > 0 && !rawInput.checked ? ` (${wireOnly.join(', ')} only show with "Simulator's own bytes".)` : ''}`;
      presetSets.textContent = '';
    }
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

/** Headers for a capture: no credentials. */
function redact(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers))
    out[name] = name === 'authorization' ? '[redacted]' : value;
  return out;
}

function wholeNumber(value: string): number | undefined {
  const trimmed = value.trim();
  if (!/^\d+$/.test(trimmed)) return undefined;
  return Number(trimmed);
}

function decimal(value: string): number | undefined {
  const trimmed = value.trim();
  if (trimmed === '' || !Number.isFinite(Number(trimmed))) return undefined;
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

/** Whether the gateway mounts the simulator's own endpoints (only when the simulator is its upstream). */
async function detectSimRaw(): Promise<void> {
  try {
    const response = await fetch(new URL(`${SIM_PREFIX}v1/models`, window.location.href), {
      headers: authHeaders(),
    });
    simRawAvailable = response.ok;
  } catch {
    simRawAvailable = false;
  }
  rawInput.disabled = !simRawAvailable;
  if (simRawAvailable) rawInput.checked = findPreset(presetSelect.value)?.raw === true;
  document.body.dataset.simRaw = String(simRawAvailable);
  showEndpoint();
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
