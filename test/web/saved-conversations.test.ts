import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  ConversationStore,
  conversationJson,
  conversationMarkdown,
  conversationTitle,
  type KeyValueStorage,
  MAX_SAVED,
  type SavedConversation,
  STORAGE_KEY,
} from '../../web/saved-conversations.ts';

function memoryStorage(): KeyValueStorage & { items: Map<string, string> } {
  const items = new Map<string, string>();
  return {
    items,
    getItem: (key) => items.get(key) ?? null,
    setItem: (key, value) => {
      items.set(key, value);
    },
  };
}

function conversation(
  id: string,
  updatedAt: string,
  fields: Partial<SavedConversation> = {},
): SavedConversation {
  return {
    id,
    title: `chat ${id}`,
    updatedAt,
    dialect: 'openai-chat',
    turns: [
      { role: 'user', content: `question ${id}` },
      { role: 'assistant', content: `answer ${id}` },
    ],
    ...fields,
  };
}

describe('conversations kept in the browser', () => {
  it('lists the most recent first, replaces by id, removes, and keeps at most MAX_SAVED', () => {
    const storage = memoryStorage();
    const store = new ConversationStore(storage);
    store.save(conversation('a', '2026-01-01T00:00:00.000Z'));
    store.save(conversation('b', '2026-01-02T00:00:00.000Z'));
    assert.deepEqual(
      store.list().map((kept) => kept.id),
      ['b', 'a'],
    );
    store.save(conversation('a', '2026-01-03T00:00:00.000Z', { title: 'renamed' }));
    assert.deepEqual(
      store.list().map((kept) => [kept.id, kept.title]),
      [
        ['a', 'renamed'],
        ['b', 'chat b'],
      ],
    );
    store.remove('a');
    assert.deepEqual(
      store.list().map((kept) => kept.id),
      ['b'],
    );
    for (let i = 0; i < MAX_SAVED + 5; i++)
      store.save(conversation(`n${i}`, `2026-02-01T00:00:${String(i).padStart(2, '0')}.000Z`));
    assert.equal(store.list().length, MAX_SAVED);
    assert.equal(store.get('n0'), undefined, 'the oldest went first');
  });

  it('reads unreadable storage as none, and skips entries that are not conversations', () => {
    const storage = memoryStorage();
    storage.setItem(STORAGE_KEY, '{not json');
    assert.deepEqual(new ConversationStore(storage).list(), []);
    storage.setItem(
      STORAGE_KEY,
      JSON.stringify([{ id: 1 }, conversation('ok', '2026-01-01T00:00:00Z'), null]),
    );
    assert.deepEqual(
      new ConversationStore(storage).list().map((kept) => kept.id),
      ['ok'],
    );
  });

  it('titles a conversation by its first prompt, on one line', () => {
    assert.equal(conversationTitle([{ role: 'user', content: '  Hello\n  world ' }]), 'Hello world');
    assert.equal(conversationTitle([]), 'Untitled');
    assert.equal(conversationTitle([{ role: 'user', content: 'x'.repeat(80) }]).length, 60);
  });

  it('exports JSON with every field, and Markdown with a heading per turn and partial answers marked', () => {
    const kept = conversation('c', '2026-01-01T00:00:00.000Z', {
      model: 'md',
      system: 'Be brief.',
      turns: [
        { role: 'user', content: 'Give me a list' },
        { role: 'assistant', content: '1. one\n2. two', partial: true },
      ],
    });
    const json = JSON.parse(conversationJson(kept)) as Record<string, unknown>;
    assert.equal(json.format, 'tokenwire-conversation');
    assert.equal(json.version, 1);
    assert.deepEqual(
      { ...json, format: undefined, version: undefined },
      { ...kept, format: undefined, version: undefined },
    );
    assert.equal(
      conversationMarkdown(kept),
      [
        '# chat c',
        '',
        '_Dialect: openai-chat · model: md · saved 2026-01-01T00:00:00.000Z_',
        '',
        '## System',
        '',
        'Be brief.',
        '',
        '## You',
        '',
        'Give me a list',
        '',
        '## Model',
        '',
        '1. one',
        '2. two',
        '',
        '> This answer did not finish.',
        '',
      ].join('\n'),
    );
  });
});
