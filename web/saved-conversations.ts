/**
 * Conversations kept in the browser's storage (localStorage), and their exports as JSON and Markdown.
 * Pure apart from the `Storage` it is given: tested in Node (test/web/saved-conversations.test.ts).
 */

/** The storage key every conversation is kept under (one JSON list). */
export const STORAGE_KEY = 'tokenwire.playground.conversations';
/** Conversations kept; the oldest beyond this are dropped (storage is a few MB per origin). */
export const MAX_SAVED = 50;
export const EXPORT_FORMAT = 'tokenwire-conversation';

export interface SavedTurn {
  role: 'user' | 'assistant';
  content: string;
  /** An answer that did not finish (cut off, cancelled, failed): exported and shown marked. */
  partial?: boolean | undefined;
}

export interface SavedConversation {
  id: string;
  /** The first prompt, shortened. */
  title: string;
  /** ISO time of the last change. */
  updatedAt: string;
  dialect: string;
  model?: string | undefined;
  system?: string | undefined;
  turns: SavedTurn[];
}

/** The part of the Web Storage API used here (localStorage, or a Map-backed stand-in in tests). */
export interface KeyValueStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
}

/** A title for a conversation: its first prompt on one line, at most 60 characters. */
export function conversationTitle(turns: readonly SavedTurn[]): string {
  const first =
    turns
      .find((turn) => turn.role === 'user')
      ?.content.replace(/\s+/g, ' ')
      .trim() ?? '';
  if (first === '') return 'Untitled';
  return first.length > 60 ? `${first.slice(0, 59)}…` : first;
}

export class ConversationStore {
  readonly #storage: KeyValueStorage;

  constructor(storage: KeyValueStorage) {
    this.#storage = storage;
  }

  /** Every kept conversation, the most recently changed first; unreadable storage reads as none. */
  list(): SavedConversation[] {
    let parsed: unknown;
    try {
      parsed = JSON.parse(this.#storage.getItem(STORAGE_KEY) ?? '[]');
    } catch {
      return [];
    }
    if (!Array.isArray(parsed)) return [];
    return parsed
      .filter(isConversation)
      .sort((a, b) => (a.updatedAt < b.updatedAt ? 1 : a.updatedAt > b.updatedAt ? -1 : 0));
  }

  get(id: string): SavedConversation | undefined {
    return this.list().find((conversation) => conversation.id === id);
  }

  /** Keeps `conversation` (replacing the one with its id). Throws when the storage refuses (quota). */
  save(conversation: SavedConversation): void {
    const rest = this.list().filter((kept) => kept.id !== conversation.id);
    this.#write([conversation, ...rest].slice(0, MAX_SAVED));
  }

  remove(id: string): void {
    this.#write(this.list().filter((kept) => kept.id !== id));
  }

  #write(conversations: SavedConversation[]): void {
    this.#storage.setItem(STORAGE_KEY, JSON.stringify(conversations));
  }
}

function isConversation(value: unknown): value is SavedConversation {
  if (typeof value !== 'object' || value === null) return false;
  const { id, title, updatedAt, turns } = value as Partial<SavedConversation>;
  return (
    typeof id === 'string' &&
    typeof title === 'string' &&
    typeof updatedAt === 'string' &&
    Array.isArray(turns) &&
    turns.every(
      (turn) =>
        typeof turn === 'object' &&
        turn !== null &&
        (turn.role === 'user' || turn.role === 'assistant') &&
        typeof turn.content === 'string',
    )
  );
}

/** The conversation as a JSON file: every field kept, with a format tag. */
export function conversationJson(conversation: SavedConversation): string {
  return `${JSON.stringify({ format: EXPORT_FORMAT, version: 1, ...conversation }, null, 2)}\n`;
}

/**
 * The conversation as Markdown: a heading per turn; answers are Markdown already and go in as they
 * are; a prompt goes in as written; an answer that did not finish is marked.
 */
export function conversationMarkdown(conversation: SavedConversation): string {
  const lines = [`# ${conversation.title}`, ''];
  const about = [`Dialect: ${conversation.dialect}`];
  if (conversation.model !== undefined) about.push(`model: ${conversation.model}`);
  about.push(`saved ${conversation.updatedAt}`);
  lines.push(`_${about.join(' · ')}_`, '');
  if (conversation.system !== undefined && conversation.system !== '')
    lines.push('## System', '', conversation.system, '');
  for (const turn of conversation.turns) {
    lines.push(turn.role === 'user' ? '## You' : '## Model', '', turn.content.trim(), '');
    if (turn.partial === true) lines.push('> This answer did not finish.', '');
  }
  return `${lines.join('\n').trimEnd()}\n`;
}
