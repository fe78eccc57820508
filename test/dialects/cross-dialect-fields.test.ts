import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DIALECT_IDS, type DialectId, RequestError } from '../../src/dialects/dialect.ts';
import { ollamaChatLoadAnswer } from '../../src/dialects/ollama-chat/request.ts';
import { ollamaGenerateLoadAnswer } from '../../src/dialects/ollama-generate/request.ts';
import { getDialect } from '../../src/dialects/registry.ts';
import {
  REENCODED_STREAMS_WRITE,
  REQUEST_FIELDS,
  untranslatableFields,
} from '../../src/dialects/request-field-table.ts';
import type { ChatRequest } from '../../src/events/chat-request.ts';

/**
 * "request translation is total or loud": the most-used fields that used to be refused across
 * dialects now translate. Each case reads a client body in one dialect, writes it in another, and checks
 * the upstream body, or that the field is named as lost (the gateway's 400).
 */

/** What an upstream in `to` receives for a `from` client's body (the gateway's translation path). */
function translate(from: DialectId, to: DialectId, body: unknown): Record<string, unknown> {
  const request = getDialect(from).fromRequestBody(body);
  assert.deepEqual(untranslatableFields(request, from, to), [], `${from} -> ${to} loses nothing`);
  return getDialect(to).toRequestBody(Object.assign({}, request, { extra: undefined }));
}

function lost(from: DialectId, to: DialectId, body: unknown): string[] {
  return untranslatableFields(getDialect(from).fromRequestBody(body), from, to);
}

const chat = (extra: Record<string, unknown>): Record<string, unknown> => ({
  model: 'm',
  messages: [{ role: 'user', content: 'hi' }],
  ...extra,
});
const ollama = chat;

const SCHEMA = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
const PNG = 'iVBORw0KGgoAAAANSUhEUg==';
const JPEG = '/9j/4AAQSkZJRg==';

describe('structured output across dialects', () => {
  const asked = chat({
    response_format: { type: 'json_schema', json_schema: { name: 'city', schema: SCHEMA, strict: true } },
  });

  it('writes an OpenAI json_schema as Ollama format, llama.cpp json_schema, TGI grammar and Responses text.format', () => {
    assert.deepEqual(translate('openai-chat', 'ollama-chat', asked).format, SCHEMA);
    assert.deepEqual(translate('openai-chat', 'ollama-generate', asked).format, SCHEMA);
    assert.deepEqual(translate('openai-chat', 'llamacpp', asked).json_schema, SCHEMA);
    assert.deepEqual((translate('openai-chat', 'tgi', asked).parameters as Record<string, unknown>).grammar, {
      type: 'json',
      value: SCHEMA,
    });
    assert.deepEqual(
      (translate('openai-chat', 'openai-responses', asked).text as Record<string, unknown>).format,
      {
        type: 'json_schema',
        name: 'city',
        schema: SCHEMA,
        strict: true,
      },
    );
    assert.deepEqual(
      translate('openai-chat', 'openai-completions', asked).response_format,
      asked.response_format,
    );
  });

  it('reads Ollama "json" as json_object and a schema as a nameless json_schema (named for OpenAI)', () => {
    assert.deepEqual(translate('ollama-chat', 'openai-chat', ollama({ format: 'json' })).response_format, {
      type: 'json_object',
    });
    assert.deepEqual(translate('ollama-chat', 'openai-chat', ollama({ format: SCHEMA })).response_format, {
      type: 'json_schema',
      json_schema: { name: 'response', schema: SCHEMA },
    });
    // json_object is any object for the servers that take a bare schema.
    assert.deepEqual(translate('ollama-chat', 'llamacpp', ollama({ format: 'json' })).json_schema, {
      type: 'object',
    });
    assert.equal(
      translate('openai-chat', 'ollama-chat', chat({ response_format: { type: 'json_object' } })).format,
      'json',
    );
  });

  it('reads llama.cpp json_schema, TGI grammar and Responses text.format back into OpenAI response_format', () => {
    const fromLlama = translate('llamacpp', 'openai-chat', { prompt: 'x', json_schema: SCHEMA });
    assert.deepEqual(fromLlama.response_format, {
      type: 'json_schema',
      json_schema: { name: 'response', schema: SCHEMA },
    });
    const fromTgi = translate('tgi', 'ollama-generate', {
      inputs: 'x',
      parameters: { grammar: { type: 'json', value: SCHEMA } },
    });
    assert.deepEqual(fromTgi.format, SCHEMA);
    const fromResponses = translate('openai-responses', 'ollama-chat', {
      input: 'x',
      text: { format: { type: 'json_schema', name: 'c', schema: SCHEMA } },
    });
    assert.deepEqual(fromResponses.format, SCHEMA);
  });

  it('keeps a TGI regex grammar as it came (same dialect) and refuses it elsewhere', () => {
    const regex = { inputs: 'x', parameters: { grammar: { type: 'regex', value: '[0-9]+' } } };
    const request = getDialect('tgi').fromRequestBody(regex);
    assert.equal(request.responseFormat, undefined);
    assert.deepEqual(lost('tgi', 'openai-chat', regex), ['parameters.grammar']);
  });

  it('refuses structured output to Anthropic Messages, which has no counterpart, and passes the default text', () => {
    assert.deepEqual(lost('openai-chat', 'anthropic-messages', asked), ['response_format']);
    assert.deepEqual(lost('ollama-chat', 'anthropic-messages', ollama({ format: 'json' })), ['format']);
    assert.deepEqual(
      lost('openai-chat', 'anthropic-messages', chat({ response_format: { type: 'text' } })),
      [],
    );
  });

  it('names a bad format in a RequestError', () => {
    assert.throws(
      () => getDialect('ollama-chat').fromRequestBody(ollama({ format: 'yaml' })),
      (error: unknown) => error instanceof RequestError && error.field === 'format',
    );
    assert.throws(
      () => getDialect('openai-chat').fromRequestBody(chat({ response_format: { type: 'json_schema' } })),
      (error: unknown) =>
        error instanceof RequestError && error.field === 'response_format.json_schema.schema',
    );
  });
});

describe('the developer role', () => {
  const body = {
    model: 'm',
    messages: [
      { role: 'developer', content: 'Be terse.' },
      { role: 'user', content: 'hi' },
    ],
  };

  it('is accepted on openai-chat and kept as developer for OpenAI-family upstreams', () => {
    const request = getDialect('openai-chat').fromRequestBody(body);
    assert.deepEqual(request.messages?.[0], { role: 'system', content: 'Be terse.', developer: true });
    const messages = (translate('openai-chat', 'openai-chat', body).messages as { role: string }[]).map(
      (m) => m.role,
    );
    assert.deepEqual(messages, ['developer', 'user']);
    const input = translate('openai-chat', 'openai-responses', body).input as { role: string }[];
    assert.equal(input[0]?.role, 'developer');
  });

  it('is a system turn for every other dialect', () => {
    assert.equal(translate('openai-chat', 'anthropic-messages', body).system, 'Be terse.');
    assert.equal(
      (translate('openai-chat', 'ollama-chat', body).messages as { role: string }[])[0]?.role,
      'system',
    );
    assert.equal(translate('openai-chat', 'ollama-generate', body).system, 'Be terse.');
    assert.match(String(translate('openai-chat', 'llamacpp', body).prompt), /^system: Be terse\.\nuser: hi/);
    assert.match(String(translate('openai-chat', 'openai-completions', body).prompt), /^system: Be terse\./);
  });

  it('still refuses an unknown role, naming it', () => {
    assert.throws(
      () => getDialect('openai-chat').fromRequestBody({ messages: [{ role: 'narrator', content: 'x' }] }),
      (error: unknown) => error instanceof RequestError && error.field === 'messages[0].role',
    );
  });
});

describe('images across dialects', () => {
  const dataUrl = chat({
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'what is this?' },
          { type: 'image_url', image_url: { url: `data:image/jpeg;base64,${JPEG}` } },
        ],
      },
    ],
  });
  const httpsUrl = chat({
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'and this?' },
          { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } },
        ],
      },
    ],
  });

  it('writes OpenAI data-URL parts as Ollama images (bare base64)', () => {
    const sent = translate('openai-chat', 'ollama-chat', dataUrl).messages as Record<string, unknown>[];
    assert.deepEqual(sent[0], { role: 'user', content: 'what is this?', images: [JPEG] });
    const generate = translate('openai-chat', 'ollama-generate', dataUrl);
    assert.equal(generate.prompt, 'what is this?');
    assert.deepEqual(generate.images, [JPEG]);
  });

  it('refuses an image given by URL to Ollama (it takes bytes only), naming the field', () => {
    assert.deepEqual(lost('openai-chat', 'ollama-chat', httpsUrl), ['messages[].content[].image_url']);
    assert.deepEqual(lost('openai-chat', 'ollama-generate', httpsUrl), ['messages[].content[].image_url']);
    // Anthropic and Responses take URLs.
    assert.deepEqual(lost('openai-chat', 'anthropic-messages', httpsUrl), []);
    const anthropic = translate('openai-chat', 'anthropic-messages', httpsUrl).messages as {
      content: unknown[];
    }[];
    assert.deepEqual(anthropic[0]?.content[0], {
      type: 'image',
      source: { type: 'url', url: 'https://example.com/cat.png' },
    });
  });

  it('refuses images to llama.cpp /completion, TGI and OpenAI completions, loudly', () => {
    for (const upstream of ['llamacpp', 'tgi', 'openai-completions'] as const) {
      assert.deepEqual(lost('openai-chat', upstream, dataUrl), ['messages[].content[].image_url'], upstream);
      assert.deepEqual(lost('ollama-chat', upstream, ollamaWithImage), ['messages[].images'], upstream);
    }
  });

  const ollamaWithImage = {
    model: 'm',
    messages: [{ role: 'user', content: 'describe', images: [PNG] }],
  };

  it('writes Ollama images as OpenAI data URLs, Anthropic base64 blocks and Responses input_image parts, the type read from the bytes', () => {
    const openai = translate('ollama-chat', 'openai-chat', ollamaWithImage).messages as Record<
      string,
      unknown
    >[];
    assert.deepEqual(openai[0], {
      role: 'user',
      content: [
        { type: 'text', text: 'describe' },
        { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
      ],
    });
    const anthropic = translate('ollama-chat', 'anthropic-messages', ollamaWithImage).messages as {
      content: unknown[];
    }[];
    assert.deepEqual(anthropic[0]?.content, [
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
      { type: 'text', text: 'describe' },
    ]);
    const responses = translate('ollama-chat', 'openai-responses', ollamaWithImage).input as Record<
      string,
      unknown
    >[];
    assert.deepEqual(responses[0], {
      role: 'user',
      content: [
        { type: 'input_text', text: 'describe' },
        { type: 'input_image', image_url: `data:image/png;base64,${PNG}` },
      ],
    });
    const jpeg = translate('ollama-generate', 'anthropic-messages', {
      model: 'm',
      prompt: 'x',
      images: [JPEG],
    });
    assert.deepEqual((jpeg.messages as { content: { source: unknown }[] }[])[0]?.content[0]?.source, {
      type: 'base64',
      media_type: 'image/jpeg',
      data: JPEG,
    });
  });

  it('reads Anthropic image blocks and Responses input_image parts back to OpenAI parts', () => {
    const fromAnthropic = translate('anthropic-messages', 'openai-chat', {
      model: 'm',
      max_tokens: 5,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image', source: { type: 'base64', media_type: 'image/gif', data: 'R0lGODlh' } },
            { type: 'text', text: 'gif?' },
          ],
        },
      ],
    });
    assert.deepEqual((fromAnthropic.messages as { content: unknown }[])[0]?.content, [
      { type: 'text', text: 'gif?' },
      { type: 'image_url', image_url: { url: 'data:image/gif;base64,R0lGODlh' } },
    ]);
    const fromResponses = translate('openai-responses', 'ollama-chat', {
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'x' },
            { type: 'input_image', image_url: `data:image/png;base64,${PNG}` },
          ],
        },
      ],
    });
    assert.deepEqual((fromResponses.messages as { images?: unknown }[])[0]?.images, [PNG]);
  });

  it('refuses a data URL that is not base64, and an image_url that is no URL', () => {
    const bad = (url: string) =>
      chat({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url } }] }] });
    for (const url of ['data:image/png,rawbytes', 'file:///etc/passwd']) {
      assert.throws(
        () => getDialect('openai-chat').fromRequestBody(bad(url)),
        (error: unknown) =>
          error instanceof RequestError && error.field === 'messages[0].content[0].image_url',
        url,
      );
    }
    assert.throws(
      () =>
        getDialect('ollama-chat').toRequestBody({
          messages: [{ role: 'user', content: 'x', images: [{ url: 'https://x/y.png' }] }],
        }),
      (error: unknown) => error instanceof RequestError,
    );
  });
});

describe('repetition penalty and min_p', () => {
  it('carries Ollama repeat_penalty as TGI / vLLM repetition_penalty and llama.cpp repeat_penalty, and min_p', () => {
    const body = { model: 'm', prompt: 'x', options: { repeat_penalty: 1.15, min_p: 0.05 } };
    const tgi = translate('ollama-generate', 'tgi', {
      model: 'm',
      prompt: 'x',
      options: { repeat_penalty: 1.15 },
    });
    assert.equal((tgi.parameters as Record<string, unknown>).repetition_penalty, 1.15);
    const llama = translate('ollama-generate', 'llamacpp', body);
    assert.equal(llama.repeat_penalty, 1.15);
    assert.equal(llama.min_p, 0.05);
    const vllm = translate('ollama-generate', 'openai-completions', body);
    assert.equal(vllm.repetition_penalty, 1.15);
    assert.equal(vllm.min_p, 0.05);
    const back = translate('openai-chat', 'ollama-chat', chat({ repetition_penalty: 1.3, min_p: 0.1 }));
    assert.deepEqual(back.options, { repeat_penalty: 1.3, min_p: 0.1 });
    const fromTgi = translate('tgi', 'llamacpp', { inputs: 'x', parameters: { repetition_penalty: 1.2 } });
    assert.equal(fromTgi.repeat_penalty, 1.2);
  });

  it('keeps the additive frequency_penalty apart from the multiplicative repetition penalty', () => {
    const sent = translate('openai-chat', 'ollama-chat', chat({ frequency_penalty: 0.5 }));
    assert.deepEqual(sent.options, { frequency_penalty: 0.5 });
    const tgi = translate('ollama-chat', 'tgi', ollama({ options: { repeat_penalty: 1.1 } }));
    assert.equal((tgi.parameters as Record<string, unknown>).frequency_penalty, undefined);
  });

  it('refuses a repetition penalty of 0 to TGI, which takes only a positive one', () => {
    assert.deepEqual(lost('ollama-chat', 'tgi', ollama({ options: { repeat_penalty: 0 } })), [
      'options.repeat_penalty',
    ]);
  });

  it('refuses min_p to TGI and both to Anthropic, which have none', () => {
    assert.deepEqual(lost('llamacpp', 'tgi', { prompt: 'x', min_p: 0.1 }), ['min_p']);
    assert.deepEqual(
      lost('ollama-chat', 'anthropic-messages', ollama({ options: { repeat_penalty: 1.1, min_p: 0.1 } })),
      ['options.repeat_penalty', 'options.min_p'],
    );
  });
});

describe('logprobs and n', () => {
  /** The request mapping alone (read in one dialect, written in another), whatever the gateway allows. */
  function mapped(from: DialectId, to: DialectId, body: unknown): Record<string, unknown> {
    const request = getDialect(from).fromRequestBody(body);
    return getDialect(to).toRequestBody(Object.assign({}, request, { extra: undefined }));
  }

  it('maps openai-chat logprobs + top_logprobs to completions logprobs and llama.cpp n_probs, and back', () => {
    const asked = chat({ logprobs: true, top_logprobs: 3 });
    assert.equal(getDialect('openai-chat').fromRequestBody(asked).logprobs, 3);
    assert.equal(mapped('openai-chat', 'openai-completions', asked).logprobs, 3);
    assert.equal(mapped('openai-chat', 'llamacpp', asked).n_probs, 3);
    const back = mapped('openai-completions', 'openai-chat', { prompt: 'x', logprobs: 2 });
    assert.equal(back.logprobs, true);
    assert.equal(back.top_logprobs, 2);
    const fromLlama = mapped('llamacpp', 'openai-chat', { prompt: 'x', n_probs: 4 });
    assert.equal(fromLlama.logprobs, true);
    assert.equal(fromLlama.top_logprobs, 4);
  });

  it('maps logprobs without alternatives to logprobs: true (chat) and 0 (completions), never to n_probs: 0', () => {
    const plain = chat({ logprobs: true });
    assert.equal(mapped('openai-chat', 'openai-completions', plain).logprobs, 0);
    assert.equal(mapped('openai-chat', 'llamacpp', plain).n_probs, undefined);
    const chatBack = mapped('openai-completions', 'openai-chat', { prompt: 'x', logprobs: 0 });
    assert.equal(chatBack.logprobs, true);
    assert.equal(chatBack.top_logprobs, undefined);
    // logprobs: false is the default everywhere.
    assert.deepEqual(lost('openai-chat', 'ollama-chat', chat({ logprobs: false, top_logprobs: 2 })), []);
  });

  it('carries logprobs between the dialects whose streams write them back, and refuses it for the rest', () => {
    assert.deepEqual(lost('openai-chat', 'openai-chat', chat({ logprobs: true })), []);
    const asked = chat({ logprobs: true, top_logprobs: 1 });
    for (const upstream of [
      'openai-completions',
      'llamacpp',
      'ollama-chat',
      'ollama-generate',
      'openai-responses',
      'tgi',
    ] as const) {
      assert.deepEqual(lost('openai-chat', upstream, asked), [], upstream);
    }
    assert.equal(
      (translate('openai-chat', 'tgi', asked).parameters as { top_n_tokens?: number }).top_n_tokens,
      1,
    );
    // top_n_tokens 0 asks TGI for nothing: logprobs without alternatives has no counterpart there.
    assert.deepEqual(lost('openai-chat', 'tgi', chat({ logprobs: true })), ['logprobs']);
    assert.equal(translate('openai-chat', 'openai-completions', asked).logprobs, 1);
    assert.equal(translate('openai-chat', 'llamacpp', asked).n_probs, 1);
    assert.equal(translate('openai-chat', 'ollama-chat', asked).top_logprobs, 1);
    assert.equal(translate('openai-chat', 'openai-responses', asked).top_logprobs, 1);
    for (const upstream of ['anthropic-messages'] as const) {
      assert.deepEqual(lost('openai-chat', upstream, asked), ['logprobs'], upstream);
    }
    assert.deepEqual(lost('llamacpp', 'openai-chat', { prompt: 'x', n_probs: 2 }), []);
    assert.deepEqual(lost('openai-completions', 'llamacpp', { prompt: 'x', logprobs: 2 }), []);
    assert.deepEqual(lost('llamacpp', 'anthropic-messages', { prompt: 'x', n_probs: 2 }), ['n_probs']);
  });

  it('maps n between the two OpenAI dialects, passes n: 1 everywhere, and refuses n > 1 to the others', () => {
    // The mapping both ways…
    const fromChat = getDialect('openai-chat').fromRequestBody(chat({ n: 2 }));
    assert.equal(fromChat.n, 2);
    assert.equal(getDialect('openai-completions').toRequestBody(fromChat).n, 2);
    assert.equal(mapped('openai-completions', 'openai-chat', { prompt: 'x', n: 3 }).n, 3);
    // …and a translated stream writes each choice with its own index, so several answers are carried.
    assert.deepEqual(lost('openai-chat', 'openai-completions', chat({ n: 2 })), []);
    assert.deepEqual(lost('openai-completions', 'openai-chat', { prompt: 'x', n: 2 }), []);
    assert.equal(translate('openai-chat', 'openai-completions', chat({ n: 2 })).n, 2);
    assert.deepEqual(lost('openai-chat', 'openai-chat', chat({ n: 2 })), [], 'same dialect: relayed as sent');
    assert.deepEqual(lost('openai-chat', 'llamacpp', chat({ n: 1 })), []);
    assert.equal(translate('openai-chat', 'openai-completions', chat({ n: 1 })).n, 1);
    for (const upstream of [
      'llamacpp',
      'ollama-chat',
      'tgi',
      'anthropic-messages',
      'openai-responses',
    ] as const) {
      assert.deepEqual(lost('openai-chat', upstream, chat({ n: 2 })), ['n'], upstream);
    }
    assert.throws(
      () => getDialect('openai-chat').fromRequestBody(chat({ n: 0 })),
      (error: unknown) => error instanceof RequestError && error.field === 'n',
    );
  });

  it('gives an n or logprobs cell only to dialects whose re-encoded streams write choices or logprobs', () => {
    // A client dialect with a cell can ask for the field; its encoder must then write what comes back.
    for (const [field, writers] of [
      ['n', REENCODED_STREAMS_WRITE.choices],
      ['logprobs', REENCODED_STREAMS_WRITE.logprobs],
    ] as const) {
      const row = REQUEST_FIELDS.find((candidate) => candidate.field === field);
      assert.ok(row !== undefined);
      const withCell = DIALECT_IDS.filter((id) => row.wire[id] !== undefined && row.wire[id] !== null);
      assert.deepEqual([...withCell].sort(), [...writers].sort(), field);
    }
  });
});

describe('the reasoning switch', () => {
  it('writes Ollama think true/false as chat_template_kwargs.enable_thinking on openai-chat', () => {
    assert.deepEqual(translate('ollama-chat', 'openai-chat', ollama({ think: false })).chat_template_kwargs, {
      enable_thinking: false,
    });
    const on = translate('ollama-chat', 'openai-chat', ollama({ think: true }));
    assert.deepEqual(on.chat_template_kwargs, { enable_thinking: true });
    assert.equal(on.reasoning_effort, undefined);
  });

  it('reads enable_thinking as Ollama think, and an effort word stays reasoning_effort', () => {
    const thinking = chat({ chat_template_kwargs: { enable_thinking: true } });
    assert.equal(translate('openai-chat', 'ollama-chat', thinking).think, true);
    const effort = translate('ollama-chat', 'openai-chat', ollama({ think: 'high' }));
    assert.equal(effort.reasoning_effort, 'high');
    assert.equal(effort.chat_template_kwargs, undefined);
    assert.equal(translate('openai-chat', 'ollama-generate', chat({ reasoning_effort: 'low' })).think, 'low');
  });

  it('writes a bare think: true as the Responses default effort, and false as none', () => {
    const on = translate('ollama-chat', 'openai-responses', ollama({ think: true }));
    assert.deepEqual(on.reasoning, { effort: 'medium' });
    const off = translate('ollama-chat', 'openai-responses', ollama({ think: false }));
    assert.deepEqual(off.reasoning, { effort: 'none' });
  });

  it('keeps other template kwargs for a same-dialect upstream only', () => {
    const other = chat({ chat_template_kwargs: { enable_thinking: false, custom: 1 } });
    const request = getDialect('openai-chat').fromRequestBody(other);
    assert.equal(request.reasoning, false);
    assert.deepEqual(request.extra, { chat_template_kwargs: { custom: 1 } });
    assert.deepEqual(getDialect('openai-chat').toRequestBody(request).chat_template_kwargs, {
      custom: 1,
      enable_thinking: false,
    });
    assert.deepEqual(lost('openai-chat', 'ollama-chat', other), ['chat_template_kwargs']);
  });
});

describe('Ollama raw prompts', () => {
  const raw = { model: 'm', prompt: '<|im_start|>user\nhi<|im_end|>\n', raw: true };

  it('carries raw: true to completion-style upstreams as the prompt itself', () => {
    assert.equal(translate('ollama-generate', 'openai-completions', raw).prompt, raw.prompt);
    assert.equal(translate('ollama-generate', 'llamacpp', raw).prompt, raw.prompt);
    assert.equal(translate('ollama-generate', 'tgi', raw).inputs, raw.prompt);
    assert.equal(
      getDialect('ollama-generate').toRequestBody(getDialect('ollama-generate').fromRequestBody(raw)).raw,
      true,
    );
  });

  it('sends a raw prompt without its system turn to llama.cpp and TGI (Ollama ignores system in raw mode)', () => {
    const withSystem = { ...raw, system: 'ignored when raw' };
    assert.equal(translate('ollama-generate', 'llamacpp', withSystem).prompt, raw.prompt);
    assert.equal(translate('ollama-generate', 'tgi', withSystem).inputs, raw.prompt);
    assert.equal(translate('ollama-generate', 'openai-completions', withSystem).prompt, raw.prompt);
    // Not raw: the system turn is rendered into the prompt.
    const templated = translate('ollama-generate', 'llamacpp', { ...withSystem, raw: false });
    assert.match(String(templated.prompt), /^system: ignored when raw\n/);
  });

  it('refuses raw: true to a chat upstream, which always applies its template; raw: false is the default', () => {
    for (const upstream of [
      'openai-chat',
      'ollama-chat',
      'anthropic-messages',
      'openai-responses',
    ] as const) {
      assert.deepEqual(lost('ollama-generate', upstream, raw), ['raw'], upstream);
      assert.deepEqual(lost('ollama-generate', upstream, { ...raw, raw: false }), [], upstream);
    }
  });

  it('reads raw: true and raw: false apart', () => {
    const on: ChatRequest = getDialect('ollama-generate').fromRequestBody(raw);
    const off: ChatRequest = getDialect('ollama-generate').fromRequestBody({ ...raw, raw: false });
    assert.equal(on.raw, true);
    assert.equal(off.raw, false);
  });
});

describe('Ollama load-only requests', () => {
  it('reads /api/generate with no or an empty prompt, and /api/chat with no messages, as load-only', () => {
    assert.equal(getDialect('ollama-generate').fromRequestBody({ model: 'm' }).loadOnly, true);
    assert.equal(getDialect('ollama-generate').fromRequestBody({ model: 'm', prompt: '' }).loadOnly, true);
    assert.equal(
      getDialect('ollama-generate').fromRequestBody({ model: 'm', prompt: 'x' }).loadOnly,
      undefined,
    );
    assert.equal(getDialect('ollama-chat').fromRequestBody({ model: 'm' }).loadOnly, true);
    assert.equal(getDialect('ollama-chat').fromRequestBody({ model: 'm', messages: [] }).loadOnly, true);
  });

  it('carries load-only between Ollama chat and generate, and refuses it to every other dialect', () => {
    const fromGenerate = translate('ollama-generate', 'ollama-chat', { model: 'm', system: 'x' });
    assert.deepEqual(fromGenerate.messages, []);
    assert.equal(translate('ollama-chat', 'ollama-generate', { model: 'm', messages: [] }).prompt, '');
    for (const upstream of [
      'openai-chat',
      'openai-completions',
      'llamacpp',
      'tgi',
      'anthropic-messages',
    ] as const) {
      assert.deepEqual(lost('ollama-generate', upstream, { model: 'm' }), ['prompt'], upstream);
      assert.deepEqual(lost('ollama-chat', upstream, { model: 'm', messages: [] }), ['messages'], upstream);
    }
  });

  it("writes Ollama's load answers: one done line with done_reason load", () => {
    assert.deepEqual(ollamaGenerateLoadAnswer('m', '2026-01-01T00:00:00Z'), {
      model: 'm',
      created_at: '2026-01-01T00:00:00Z',
      response: '',
      done: true,
      done_reason: 'load',
    });
    const chatAnswer = ollamaChatLoadAnswer('m', '2026-01-01T00:00:00Z');
    assert.deepEqual(chatAnswer.message, { role: 'assistant', content: '' });
    assert.equal(chatAnswer.done_reason, 'load');
  });
});
