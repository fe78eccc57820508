import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RequestError } from '../../src/dialects/dialect.ts';
import { openAiChat } from '../../src/dialects/openai-chat/index.ts';
import { utf8 } from '../helpers/chunks.ts';
import { assertByteFaithful, fold, runConformance } from '../helpers/conformance.ts';
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
    'real-captures/llamacpp-b10108/c01-chat-stream.sse',
    'real-captures/llamacpp-b10108/c02-chat-stream-include-usage.sse',
    'real-captures/llamacpp-b10108/c04-chat-stream-eos.sse',
    'real-captures/llamacpp-b10108/c05-chat-stream-stop.sse',
    'real-captures/llamacpp-b10108/c06-chat-stream-logprobs.sse',
    'real-captures/llamacpp-b10108/c13-chat-stream-n2.sse',
    'real-captures/llamacpp-b10108/c16-chat-stream-midstream-ctxfull.sse',
    'real-captures/llamacpp-b10108/c17-chat-stream-return-progress.sse',
    'real-captures/llamacpp-b10108/c18-chat-stream-tools-generic.sse',
    'real-captures/llamacpp-b10108/t01-chat-stream-tools-llama31.sse',
    'real-captures/llamacpp-b10108/t03-chat-stream-tools-auto-llama31.sse',
    'real-captures/llamacpp-b10108/t04-chat-stream-tools-include-usage-llama31.sse',
    'real-captures/llamacpp-b10108/x01-chat-stream-reasoning.sse',
    'real-captures/llamacpp-b10108/x03-chat-stream-reasoning-none.sse',
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
    assert.equal(request.logprobs, 0, 'logprobs: true with no top_logprobs: no alternatives');
    assert.deepEqual(request.extra, { stream_options: { continuous_usage_stats: true } });
    const back = openAiChat.toRequestBody(request);
    assert.deepEqual(back.stream_options, { continuous_usage_stats: true, include_usage: true });
    assert.equal(back.logprobs, true);
    assert.equal(back.top_logprobs, undefined);
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

describe('openai-chat decoder: what real servers add', () => {
  const CAPTURES = 'real-captures/llamacpp-b10108';

  it('reads every choice of n: 2 (llama-server b10108), complete when each has finished', () => {
    const decoded = decodeChunks(openAiChat, [readFixture(`${CAPTURES}/c13-chat-stream-n2.sse`)]);
    assert.equal(decoded.complete, true);
    const result = fold(decoded.events);
    assert.equal(result.choices?.length, 2);
    assert.deepEqual(
      result.choices?.map((c) => c.index),
      [0, 1],
    );
    assert.equal(result.choices?.[0]?.text, result.text);
    assert.ok((result.choices?.[1]?.text.length ?? 0) > 0);
    assert.equal(result.choices?.[1]?.finishReason, 'length');
  });

  it('carries logprobs and top_logprobs on the text events (llama-server b10108)', () => {
    const decoded = decodeChunks(openAiChat, [readFixture(`${CAPTURES}/c06-chat-stream-logprobs.sse`)]);
    const result = fold(decoded.events);
    assert.ok(result.logprobs !== undefined && result.logprobs.length > 0);
    assert.equal(result.logprobs.map((l) => l.token).join(''), result.text);
    for (const entry of result.logprobs) {
      assert.equal(typeof entry.logprob, 'number');
      assert.equal(entry.top?.length, 2);
      assert.equal(typeof entry.id, 'number');
    }
  });

  it('reads a padded [DONE] (data:  [DONE]) as the sentinel, never as JSON', () => {
    const decoded = decodeChunks(openAiChat, [
      utf8(
        'data: {"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}\n\n' +
          'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n' +
          'data:  [DONE]\n\n',
      ),
    ]);
    assert.equal(decoded.complete, true);
    assert.equal(decoded.terminated, true);
    assert.equal(decoded.sawTerminator, true);
  });

  it('counts output tokens from llama-server timings.predicted_n when there is no usage', () => {
    const decoded = decodeChunks(openAiChat, [readFixture(`${CAPTURES}/c01-chat-stream.sse`)]);
    const timings = decoded.events.find((e) => e.type === 'timings');
    assert.ok(timings?.type === 'timings');
    assert.equal(timings.timings.evalTokens, 16);
    assert.equal(
      decoded.events.some((e) => e.type === 'usage'),
      false,
    );
  });
});
