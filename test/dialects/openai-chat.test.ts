import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RequestError } from '../../src/dialects/dialect.ts';
import { openAiChat } from '../../src/dialects/openai-chat/index.ts';
import { assertByteFaithful, runConformance } from '../helpers/conformance.ts';
import { decodeChunks, encodeEvents } from '../helpers/decode.ts';
import { readFixture } from '../helpers/paths.ts';

runConformance(openAiChat, {
  fixtures: [
    'wire-examples/vllm-chat.sse',
    'wire-examples/vllm-chat-midstream-error.sse',
    'wire-examples/vllm-chat-toolcall.sse',
    'wire-examples/llamacpp-chat.sse',
    'wire-examples/llamacpp-chat-midstream-error.sse',
    'wire-examples/llamacpp-chat-midstream-error-legacy.sse',
    'wire-examples/llamacpp-chat-toolcall.sse',
    'wire-examples/tgi-chat.sse',
    'wire-examples/tgi-chat-midstream-error.sse',
    'wire-examples/tgi-chat-toolcall.sse',
    'wire-examples/ollama-openai-chat.sse',
    'wire-examples/ollama-openai-chat-legacy.sse',
    'wire-examples/ollama-openai-chat-toolcall.sse',
    'wire-examples/ollama-openai-chat-midstream-error.sse',
    'real-captures/llamacpp-b4747/v1-chat.sse',
  ],
  capabilities: (flavor) => ({
    reasoning: flavor !== 'tgi',
    toolCalls: true,
    usage: true,
    // TGI ends tool-call streams with no finish chunk; the decoder infers `tool-calls` at [DONE].
    finishReasons: ['stop', 'length', 'tool-calls'],
  }),
});

describe('openai-chat encoder', () => {
  const cases: [string, string, { includeUsage?: boolean; strip?: (s: string) => string }][] = [
    ['wire-examples/vllm-chat.sse', 'vllm', {}],
    ['wire-examples/vllm-chat-toolcall.sse', 'vllm', {}],
    ['wire-examples/vllm-chat-midstream-error.sse', 'vllm', {}],
    // The leading `:` is the server's keepalive ping, not part of the encoded events.
    ['wire-examples/llamacpp-chat.sse', 'llamacpp', { strip: (s) => s.replace(/^:\n\n/, '') }],
    ['wire-examples/llamacpp-chat-toolcall.sse', 'llamacpp', { includeUsage: false }],
    ['wire-examples/llamacpp-chat-midstream-error.sse', 'llamacpp', {}],
    ['wire-examples/tgi-chat.sse', 'tgi', {}],
    ['wire-examples/tgi-chat-toolcall.sse', 'tgi', {}],
    ['wire-examples/tgi-chat-midstream-error.sse', 'tgi', {}],
    ['wire-examples/ollama-openai-chat.sse', 'ollama', {}],
    ['wire-examples/ollama-openai-chat-toolcall.sse', 'ollama', {}],
  ];
  for (const [fixture, flavor, options] of cases) {
    it(`writes ${fixture} byte for byte as ${flavor}`, () => {
      assertByteFaithful(openAiChat, fixture, flavor, options);
    });
  }

  it('writes Ollama\'s OpenAI-layer mid-stream failure as it does: an empty chunk with model "", no [DONE]', () => {
    const bytes = readFixture('wire-examples/ollama-openai-chat-midstream-error.sse');
    const decoded = decodeChunks(openAiChat, [bytes]);
    // Nothing in the bytes says "error": only the missing finish and [DONE] give it away.
    assert.equal(decoded.complete, false);
    const textEvents = decoded.events.filter((e) => e.type !== 'text' || e.text === 'Hi');
    const wire = encodeEvents(openAiChat, textEvents, {
      flavor: 'ollama',
      ending: { kind: 'error', error: { message: 'model runner has unexpectedly stopped' } },
    });
    assert.equal(wire, new TextDecoder().decode(bytes));
  });

  it('writes the legacy llama-server error line, then [DONE]', () => {
    const wire = encodeEvents(openAiChat, [{ type: 'text', text: 'Hi' }], {
      flavor: 'llamacpp-legacy',
      model: 'm',
      created: 1,
      ending: { kind: 'error', error: { message: 'failed to decode the batch', status: 500 } },
    });
    assert.match(
      wire,
      /\n\nerror: \{"code":500,"message":"failed to decode the batch","type":"server_error"\}\n\ndata: \[DONE\]\n\n$/,
    );
  });

  it("writes vLLM's error event the way Python's json.dumps does: spaced, ASCII-escaped", () => {
    const wire = encodeEvents(openAiChat, [], {
      ending: { kind: 'error', error: { message: 'échec «x»', status: 400 } },
    });
    assert.equal(
      wire,
      'data: {"error": {"message": "\\u00e9chec \\u00abx\\u00bb", "type": "BadRequestError", "param": null, "code": 400}}\n\ndata: [DONE]\n\n',
    );
  });
});

describe('openai-chat request mapping', () => {
  it('maps a body to the normalized request and back, keeping unknown fields and stream_options', () => {
    const body = {
      model: 'qwen',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: [{ type: 'text', text: 'hi' }] },
      ],
      max_tokens: 20,
      temperature: 0.2,
      stop: '###',
      stream: true,
      stream_options: { include_usage: true, continuous_usage_stats: true },
      logprobs: true,
    };
    const request = openAiChat.fromRequestBody(body);
    assert.deepEqual(request.messages, [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'hi' },
    ]);
    assert.equal(request.maxTokens, 20);
    assert.deepEqual(request.stop, ['###']);
    assert.equal(request.includeUsage, true);
    assert.deepEqual(request.extra, { logprobs: true, stream_options: { continuous_usage_stats: true } });
    const back = openAiChat.toRequestBody(request);
    assert.deepEqual(back.stream_options, { continuous_usage_stats: true, include_usage: true });
    assert.equal(back.logprobs, true);
    assert.equal(back.stream, true);
  });

  it('names the bad field in a RequestError', () => {
    for (const [body, field] of [
      [{ messages: 'hi' }, 'messages'],
      [{ messages: [{ role: 'wizard', content: 'x' }] }, 'messages[0].role'],
      [{ messages: [{ role: 'user', content: 'x' }], max_tokens: -1 }, 'max_tokens'],
      [
        { messages: [{ role: 'user', content: 'x' }], stream_options: { include_usage: 'yes' } },
        'stream_options.include_usage',
      ],
    ] as const) {
      assert.throws(
        () => openAiChat.fromRequestBody(body),
        (error: unknown) => error instanceof RequestError && error.field === field,
      );
    }
  });
});
