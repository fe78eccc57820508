/**
 * The conversation: the prompt box, the earlier turns (sent as history with each request), copy,
 * regenerate, edit-and-resend, new chat; the conversations kept in the browser's storage (a list to go
 * back to, restored on reload) and their export as JSON or Markdown.
 */
import { bytesToBase64 } from '../src/capture/capture-file.ts';
import { stream } from '../src/client/token-stream.ts';
import { getDialect } from '../src/dialects/registry.ts';
import type { ChatImage, ChatMessage } from '../src/events/chat-request.ts';
import { clearCurrent, consume, showMarkdown, startRun, stopRun, wireHooks } from './answer-view.ts';
import { byId, showStatus } from './by-id.ts';
import { download } from './download.ts';
import {
  redact,
  requestSettings,
  SIM_PREFIX,
  selectedDialect,
  selectedModel,
  setDialect,
  setModel,
  setSystemPrompt,
  systemPrompt,
} from './request-controls.ts';
import { session } from './run.ts';
import {
  ConversationStore,
  conversationJson,
  conversationMarkdown,
  conversationTitle,
  type SavedConversation,
  type SavedTurn,
} from './saved-conversations.ts';

const promptInput = byId<HTMLTextAreaElement>('prompt');
const imageInput = byId<HTMLInputElement>('image');
const conversation = byId<HTMLOListElement>('conversation');
const savedList = byId<HTMLUListElement>('saved-list');
const savedCount = byId<HTMLElement>('saved-count');
const exportJsonButton = byId<HTMLButtonElement>('export-json');
const exportMarkdownButton = byId<HTMLButtonElement>('export-markdown');

/** The finished turns, oldest first: what the next request sends as history. */
let history: ChatMessage[] = [];
/** The last settled exchange (its prompt and answer), kept for Copy and Regenerate. */
let lastExchange: { prompt: string; text: string; partial: boolean } | undefined;
/** History indexes of answers that did not finish (shown marked, never as whole answers). */
let partialTurns = new Set<number>();
/** The kept conversation this one is saved as (a new one gets an id on its first answer). */
let conversationId: string | undefined;
/** Undefined when the browser gives no storage (a private window may refuse it): nothing is kept. */
let store: ConversationStore | undefined;

/** Wires the conversation's buttons and restores the last kept conversation. */
export function initConversation(): void {
  try {
    store = new ConversationStore(window.localStorage);
  } catch {
    store = undefined;
  }
  byId('new-chat').addEventListener('click', newChat);
  byId('copy').addEventListener('click', () => void copyAnswer());
  byId('regenerate').addEventListener('click', regenerate);
  exportJsonButton.addEventListener('click', () => exportConversation('json'));
  exportMarkdownButton.addEventListener('click', () => exportConversation('markdown'));
  // A reload comes back to the conversation it showed (its id is in the URL's fragment).
  const shown = /^#chat=([\w-]+)$/.exec(window.location.hash)?.[1];
  if (shown !== undefined) openConversation(shown, false);
  renderSaved();
}

export async function send(promptOverride?: string): Promise<void> {
  if (session.current !== undefined) return;
  const prompt = promptOverride ?? promptInput.value;
  if (prompt.trim() === '') {
    showStatus('Write a prompt first.');
    promptInput.focus();
    return;
  }
  const settings = requestSettings();
  if (settings === undefined) return;
  commitLastExchange();
  const dialect = getDialect(selectedDialect());
  const messages: ChatMessage[] = [];
  const system = systemPrompt();
  if (system !== '') messages.push({ role: 'system', content: system });
  const turn: ChatMessage = { role: 'user', content: prompt };
  // The picked image goes with this prompt only, in the dialect's own shape (its request mapping).
  const image = imageInput.disabled ? undefined : await attachedImage();
  if (image !== undefined) turn.images = [image];
  messages.push(...history, turn);
  const request = settings.request;
  request.messages = messages;
  const { headers, idleMs, raw } = settings;
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
  const end = await consume(run, tokens);
  lastExchange = { prompt, text: end.text, partial: end.outcome.kind !== 'finished' };
  saveConversation();
}

export function stop(): void {
  stopRun();
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
    if (message.role === 'assistant') showMarkdown(body, message.content);
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
  if (session.current !== undefined) return;
  const message = history[index];
  if (message === undefined) return;
  history = history.slice(0, index);
  partialTurns = new Set([...partialTurns].filter((turn) => turn < index));
  lastExchange = undefined;
  renderHistory();
  clearCurrent();
  promptInput.value = message.content;
  promptInput.focus();
  saveConversation();
  showStatus('Edit the prompt and send it again.');
}

/** Asks the last question again, in place of its answer. */
function regenerate(): void {
  if (session.current !== undefined || lastExchange === undefined) return;
  const { prompt } = lastExchange;
  lastExchange = undefined;
  void send(prompt);
}

function newChat(): void {
  if (session.current !== undefined) stop();
  history = [];
  partialTurns = new Set();
  lastExchange = undefined;
  showConversationId(undefined);
  renderHistory();
  clearCurrent();
  renderSaved();
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

// ---- kept conversations ---------------------------------------------------------------------------

/** The conversation on the page as it is kept: history, then the last exchange. */
function currentConversation(): SavedConversation | undefined {
  const turns: SavedTurn[] = history.map((message, index) => {
    const turn: SavedTurn = {
      role: message.role === 'user' ? 'user' : 'assistant',
      content: message.content,
    };
    if (partialTurns.has(index)) turn.partial = true;
    return turn;
  });
  if (lastExchange !== undefined) {
    turns.push({ role: 'user', content: lastExchange.prompt });
    const reply: SavedTurn = { role: 'assistant', content: lastExchange.text };
    if (lastExchange.partial) reply.partial = true;
    turns.push(reply);
  }
  if (turns.length === 0) return undefined;
  const saved: SavedConversation = {
    id: conversationId ?? crypto.randomUUID(),
    title: conversationTitle(turns),
    updatedAt: new Date().toISOString(),
    dialect: selectedDialect(),
    turns,
  };
  const model = selectedModel();
  if (model !== '') saved.model = model;
  const system = systemPrompt();
  if (system !== '') saved.system = system;
  return saved;
}

/** The conversation on the page, named in the URL's fragment so that a reload opens it again. */
function showConversationId(id: string | undefined): void {
  conversationId = id;
  const url = new URL(window.location.href);
  url.hash = id === undefined ? '' : `chat=${id}`;
  window.history.replaceState(null, '', url);
}

/** Keeps the conversation on the page (after each answer, and when an edit drops turns). */
function saveConversation(): void {
  const saved = currentConversation();
  if (saved === undefined || store === undefined) {
    renderSaved();
    return;
  }
  showConversationId(saved.id);
  try {
    store.save(saved);
  } catch (error) {
    showStatus(`This conversation could not be kept in the browser's storage: ${(error as Error).message}`);
  }
  renderSaved();
}

/** Puts a kept conversation on the page: its turns as history, its dialect, model and system prompt. */
function openConversation(id: string, announce = true): void {
  if (session.current !== undefined) return;
  const saved = store?.get(id);
  if (saved === undefined) return;
  showConversationId(saved.id);
  history = saved.turns.map((turn) => ({ role: turn.role, content: turn.content }));
  partialTurns = new Set(saved.turns.flatMap((turn, index) => (turn.partial === true ? [index] : [])));
  lastExchange = undefined;
  setDialect(saved.dialect);
  setModel(saved.model);
  setSystemPrompt(saved.system ?? '');
  renderHistory();
  clearCurrent();
  renderSaved();
  if (announce) showStatus(`Opened "${saved.title}".`);
}

function renderSaved(): void {
  const kept = store?.list() ?? [];
  savedCount.textContent = String(kept.length);
  savedList.replaceChildren(
    ...kept.map((saved) => {
      const item = document.createElement('li');
      if (saved.id === conversationId) item.setAttribute('aria-current', 'true');
      const open = document.createElement('button');
      open.type = 'button';
      open.className = 'open-saved';
      open.textContent = saved.title;
      open.title = `${saved.turns.length / 2} exchanges · ${saved.dialect} · ${saved.updatedAt.slice(0, 16).replace('T', ' ')}`;
      open.addEventListener('click', () => openConversation(saved.id));
      const remove = document.createElement('button');
      remove.type = 'button';
      remove.className = 'remove-saved';
      remove.textContent = '×';
      remove.setAttribute('aria-label', `Delete "${saved.title}"`);
      remove.addEventListener('click', () => {
        store?.remove(saved.id);
        if (saved.id === conversationId) showConversationId(undefined);
        renderSaved();
      });
      item.append(open, remove);
      return item;
    }),
  );
  const empty = history.length === 0 && lastExchange === undefined;
  exportJsonButton.disabled = empty;
  exportMarkdownButton.disabled = empty;
}

function exportConversation(format: 'json' | 'markdown'): void {
  const saved = currentConversation();
  if (saved === undefined) return;
  const name = `tokenwire-chat-${saved.updatedAt.slice(0, 19).replace(/:/g, '-')}`;
  if (format === 'json') download(conversationJson(saved), `${name}.json`, 'application/json');
  else download(conversationMarkdown(saved), `${name}.md`, 'text/markdown');
}
