import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DialectId } from '../../src/dialects/dialect.ts';
import { getDialect } from '../../src/dialects/registry.ts';
import { droppedHints, untranslatableFields } from '../../src/dialects/request-field-table.ts';
import type { ChatRequest } from '../../src/events/chat-request.ts';

const PNG = 'iVBORw0KGgo=';
const PDF = 'JVBERi0xLjQK';

/** What becomes of one content part: carried (seen in the normalized turns), refused, or a dropped hint. */
type Fate = { carried: (request: ChatRequest) => boolean } | { refused: string } | { hint: string };

interface Case {
  dialect: DialectId;
  part: string;
  body: Record<string, unknown>;
  fate: Fate;
}

const textOf = (request: ChatRequest) => request.messages?.map((m) => m.content).join('|') ?? '';
const imageCount = (request: ChatRequest) =>
  request.messages?.reduce((n, m) => n + (m.images?.length ?? 0), 0) ?? 0;

/** An OpenAI chat body with one user turn of the given parts (or an assistant turn). */
const chat = (parts: unknown[], role = 'user') => ({
  model: 'm',
  messages: [{ role, content: parts }],
});
/** A Messages body with one turn of the given blocks. */
const messages = (blocks: unknown[], role = 'user') => ({
  model: 'm',
  max_tokens: 8,
  messages: [{ role, content: blocks }],
});
/** A Responses body with one message item of the given parts. */
const responses = (parts: unknown[], role = 'user') => ({
  model: 'm',
  input: [{ type: 'message', role, content: parts }],
});

/**
 * Every content part type each dialect documents either maps onto the normalized turns, or
 * is named — refused by a translation (400, or dropped and named under `drop_params`), or, for earlier
 * reasoning sent back, dropped and named as a hint. None vanishes without a word.
 */
const CASES: Case[] = [
  // OpenAI chat: text, image_url, input_audio, file, refusal.
  {
    dialect: 'openai-chat',
    part: 'text',
    body: chat([{ type: 'text', text: 'hello' }]),
    fate: { carried: (r) => textOf(r) === 'hello' },
  },
  {
    dialect: 'openai-chat',
    part: 'image_url',
    body: chat([{ type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } }]),
    fate: { carried: (r) => imageCount(r) === 1 },
  },
  {
    dialect: 'openai-chat',
    part: 'input_audio',
    body: chat([
      { type: 'text', text: 'hi' },
      { type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } },
    ]),
    fate: { refused: 'messages[0].content[1] (input_audio)' },
  },
  {
    dialect: 'openai-chat',
    part: 'file',
    body: chat([
      { type: 'file', file: { file_data: `data:application/pdf;base64,${PDF}`, filename: 'a.pdf' } },
    ]),
    fate: { refused: 'messages[0].content[0] (file)' },
  },
  {
    dialect: 'openai-chat',
    part: 'refusal',
    body: {
      model: 'm',
      messages: [
        { role: 'user', content: 'q' },
        { role: 'assistant', content: [{ type: 'refusal', refusal: 'I cannot' }] },
      ],
    },
    fate: { carried: (r) => textOf(r) === 'q|I cannot' },
  },
  // Anthropic Messages: text, image, document, search_result, tool_use, tool_result, thinking, redacted_thinking.
  {
    dialect: 'anthropic-messages',
    part: 'text',
    body: messages([{ type: 'text', text: 'hello' }]),
    fate: { carried: (r) => textOf(r) === 'hello' },
  },
  {
    dialect: 'anthropic-messages',
    part: 'image',
    body: messages([{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } }]),
    fate: { carried: (r) => imageCount(r) === 1 },
  },
  {
    dialect: 'anthropic-messages',
    part: 'document',
    body: messages([
      { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: PDF } },
      { type: 'text', text: 'summarize' },
    ]),
    fate: { refused: 'messages[0].content[0] (document)' },
  },
  {
    dialect: 'anthropic-messages',
    part: 'search_result',
    body: messages([
      {
        type: 'search_result',
        source: 'https://example.com',
        title: 't',
        content: [{ type: 'text', text: 'r' }],
      },
      { type: 'text', text: 'q' },
    ]),
    fate: { refused: 'messages[0].content[0] (search_result)' },
  },
  {
    dialect: 'anthropic-messages',
    part: 'tool_use',
    body: {
      model: 'm',
      max_tokens: 8,
      messages: [
        { role: 'user', content: 'q' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'f', input: { a: 1 } }] },
      ],
    },
    fate: { carried: (r) => r.messages?.[1]?.toolCalls?.[0]?.name === 'f' },
  },
  {
    dialect: 'anthropic-messages',
    part: 'tool_result',
    body: messages([
      { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: '42' }] },
    ]),
    fate: { carried: (r) => r.messages?.[0]?.role === 'tool' && r.messages[0].content === '42' },
  },
  {
    dialect: 'anthropic-messages',
    part: 'tool_result with an image',
    body: messages([
      {
        type: 'tool_result',
        tool_use_id: 'toolu_1',
        content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } }],
      },
    ]),
    fate: { refused: 'messages[0].content[0].content[0] (image)' },
  },
  {
    dialect: 'anthropic-messages',
    part: 'thinking',
    body: {
      model: 'm',
      max_tokens: 8,
      messages: [
        { role: 'user', content: 'q' },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'hmm', signature: 's' },
            { type: 'text', text: 'a' },
          ],
        },
        { role: 'user', content: 'more' },
      ],
    },
    fate: { hint: 'messages[1].content[0] (thinking)' },
  },
  {
    dialect: 'anthropic-messages',
    part: 'redacted_thinking',
    body: {
      model: 'm',
      max_tokens: 8,
      messages: [
        { role: 'user', content: 'q' },
        {
          role: 'assistant',
          content: [
            { type: 'redacted_thinking', data: 'xx' },
            { type: 'text', text: 'a' },
          ],
        },
        { role: 'user', content: 'more' },
      ],
    },
    fate: { hint: 'messages[1].content[0] (redacted_thinking)' },
  },
  // OpenAI Responses: input_text, input_image, input_file, input_audio, refusal, reasoning items.
  {
    dialect: 'openai-responses',
    part: 'input_text',
    body: responses([{ type: 'input_text', text: 'hello' }]),
    fate: { carried: (r) => textOf(r) === 'hello' },
  },
  {
    dialect: 'openai-responses',
    part: 'input_image',
    body: responses([{ type: 'input_image', image_url: `data:image/png;base64,${PNG}` }]),
    fate: { carried: (r) => imageCount(r) === 1 },
  },
  {
    dialect: 'openai-responses',
    part: 'input_image by file_id',
    body: responses([
      { type: 'input_text', text: 'q' },
      { type: 'input_image', file_id: 'file-1' },
    ]),
    fate: { refused: 'input[0].content[1] (input_image)' },
  },
  {
    dialect: 'openai-responses',
    part: 'input_file',
    body: responses([
      { type: 'input_file', file_data: `data:application/pdf;base64,${PDF}`, filename: 'a.pdf' },
    ]),
    fate: { refused: 'input[0].content[0] (input_file)' },
  },
  {
    dialect: 'openai-responses',
    part: 'input_audio',
    body: responses([{ type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } }]),
    fate: { refused: 'input[0].content[0] (input_audio)' },
  },
  {
    dialect: 'openai-responses',
    part: 'refusal',
    body: {
      model: 'm',
      input: [
        { role: 'user', content: 'q' },
        { type: 'message', role: 'assistant', content: [{ type: 'refusal', refusal: 'I cannot' }] },
      ],
    },
    fate: { carried: (r) => textOf(r) === 'q|I cannot' },
  },
  {
    dialect: 'openai-responses',
    part: 'reasoning item',
    body: {
      model: 'm',
      input: [
        { role: 'user', content: 'q' },
        { type: 'reasoning', id: 'rs_1', summary: [] },
        { role: 'user', content: 'more' },
      ],
    },
    fate: { hint: 'input[1] (reasoning)' },
  },
  // Ollama: images (base64) and an assistant turn's thinking.
  {
    dialect: 'ollama-chat',
    part: 'images',
    body: { model: 'm', messages: [{ role: 'user', content: 'q', images: [PNG] }] },
    fate: { carried: (r) => imageCount(r) === 1 },
  },
  {
    dialect: 'ollama-chat',
    part: 'thinking',
    body: {
      model: 'm',
      messages: [
        { role: 'user', content: 'q' },
        { role: 'assistant', content: 'a', thinking: 'hmm' },
        { role: 'user', content: 'more' },
      ],
    },
    fate: { hint: 'messages[1].thinking' },
  },
  {
    dialect: 'ollama-generate',
    part: 'images',
    body: { model: 'm', prompt: 'q', images: [PNG] },
    fate: { carried: (r) => imageCount(r) === 1 },
  },
];

describe('every content part type maps, or is named', () => {
  for (const { dialect, part, body, fate } of CASES) {
    it(`${dialect} ${part}`, () => {
      const request = getDialect(dialect).fromRequestBody(structuredClone(body));
      // An upstream of another dialect that takes chat turns and images.
      const other: DialectId = dialect === 'openai-chat' ? 'anthropic-messages' : 'openai-chat';
      const lost = untranslatableFields(request, dialect, other);
      const hints = droppedHints(request, dialect, other);
      if ('carried' in fate) {
        assert.ok(fate.carried(request), JSON.stringify(request));
        assert.deepEqual(lost, []);
        assert.deepEqual(hints, []);
      } else if ('refused' in fate) {
        assert.deepEqual(lost, [fate.refused]);
        assert.deepEqual(hints, []);
      } else {
        assert.deepEqual(hints, [fate.hint]);
        assert.deepEqual(lost, []);
      }
      // A same-dialect upstream gets the body as sent: nothing is lost or dropped.
      assert.deepEqual(untranslatableFields(request, dialect, dialect), []);
      assert.deepEqual(droppedHints(request, dialect, dialect), []);
    });
  }
});
