import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DialectError, RequestError } from '../../src/dialects/dialect.ts';
import { OpenAiCompletionsEncoder } from '../../src/dialects/openai-completions/encoder.ts';
import { openAiCompletions } from '../../src/dialects/openai-completions/index.ts';
import { renderPrompt } from '../../src/events/chat-request.ts';
import type { StreamEvent } from '../../src/events/stream-event.ts';
import { utf8 } from '../helpers/chunks.ts';
import { assertByteFaithful, runConformance } from '../helpers/conformance.ts';
import { decodeChunks, encodeEvents } from '../helpers/decode.ts';
import { readFixture } from '../helpers/paths.ts';

/**
 * The four `/v1/completions` examples plus streams composed for what they do not cover (in
 * test/fixtures/extra/, written from wire-formats.md §3.3, §3.8, §4.4, §4.8, §5.4, §5.5, §6.5, §9):
 * each server's mid-stream error, vLLM's `stop_reason` string, Ollama without include_usage.
 */
runConformance(openAiCompletions, {
  fixtures: [
    'wire-examples/vllm-completions.sse',
    'wire-examples/tgi-completions.sse',
    'wire-examples/ollama-openai-completions.sse',
    'real-captures/llamacpp-b4747/v1-completions.sse',
    'real-captures/llamacpp-b10108/o01-completions-stream.sse',
    'real-captures/llamacpp-b10108/o02-completions-stream-stop.sse',
    'real-captures/llamacpp-b10108/o04-completions-stream-eos.sse',
    'real-captures/llamacpp-b10108/o05-completions-stream-include-usage.sse',
    'real-captures/llamacpp-b10108/o06-completions-stream-logprobs.sse',
    'extra/vllm-completions-midstream-error.sse',
    'extra/vllm-completions-stop-string.sse',
    'extra/llamacpp-completions-midstream-error.sse',
    'extra/llamacpp-completions-midstream-error-legacy.sse',
    'extra/tgi-completions-midstream-error.sse',
    'extra/ollama-openai-completions-midstream-error.sse',
    'extra/ollama-openai-completions-no-usage.sse',
  ],
  capabilities: () => ({
    reasoning: false,
    toolCalls: false,
    usage: true,
    finishReasons: ['stop', 'length'],
  }),
});

/** SSE text of `data:` payloads. */
const sse = (...payloads: (string | object)[]): Uint8Array =>
  utf8(payloads.map((p) => `data: ${typeof p === 'string' ? p : JSON.stringify(p)}\n\n`).join(''));

const decode = (bytes: Uint8Array) => decodeChunks(openAiCompletions, [bytes]);

describe('openai-completions encoder', () => {
  const cases: [string, string, { includeUsage?: boolean }][] = [
    ['wire-examples/vllm-completions.sse', 'vllm', { includeUsage: true }],
    ['wire-examples/tgi-completions.sse', 'tgi', {}],
    ['wire-examples/ollama-openai-completions.sse', 'ollama', { includeUsage: true }],
    // llama-server writes usage on the final chunk whatever include_usage says.
    ['real-captures/llamacpp-b4747/v1-completions.sse', 'llamacpp', { includeUsage: false }],
    ['extra/vllm-completions-midstream-error.sse', 'vllm', {}],
    ['extra/vllm-completions-stop-string.sse', 'vllm', { includeUsage: false }],
    ['extra/llamacpp-completions-midstream-error.sse', 'llamacpp', {}],
    ['extra/llamacpp-completions-midstream-error-legacy.sse', 'llamacpp-legacy', {}],
    ['extra/tgi-completions-midstream-error.sse', 'tgi', {}],
    ['extra/ollama-openai-completions-no-usage.sse', 'ollama', { includeUsage: false }],
  ];
  for (const [fixture, flavor, options] of cases) {
    it(`writes ${fixture} byte for byte as ${flavor}`, () => {
      assertByteFaithful(openAiCompletions, fixture, flavor, options);
    });
  }

  it('writes Ollama\'s mid-stream failure as it does: an empty chunk with model "", no finish, no [DONE]', () => {
    // Decoding cannot give this back byte for byte: the failure chunk decodes to no event at all.
    const bytes = readFixture('extra/ollama-openai-completions-midstream-error.sse');
    const decoded = decode(bytes);
    assert.equal(decoded.complete, false);
    assert.equal(decoded.terminated, false);
    assert.deepEqual(
      decoded.events.map((e) => e.type),
      ['start', 'text'],
    );
    const wire = encodeEvents(openAiCompletions, decoded.events, {
      flavor: 'ollama',
      ending: { kind: 'error', error: { message: 'model runner has unexpectedly stopped' } },
    });
    assert.equal(wire, new TextDecoder().decode(bytes));
  });

  it("keeps the zero usage placeholder on Ollama's failure chunk when include_usage is set", () => {
    const wire = encodeEvents(openAiCompletions, [{ type: 'start', id: 'cmpl-7', model: 'm', created: 5 }], {
      flavor: 'ollama',
      includeUsage: true,
      ending: { kind: 'error', error: { message: 'boom' } },
    });
    assert.equal(
      wire,
      'data: {"id":"cmpl-7","object":"text_completion","created":5,"choices":[{"text":"","index":0,"finish_reason":null}],"model":"","system_fingerprint":"fp_ollama","usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}\n\n',
    );
  });

  const vllmStart: StreamEvent = { type: 'start', id: 'cmpl-1', model: 'm', created: 1 };
  const vllmChunk = (text: string, finish: string | null = null, stopReason: string | null = null) =>
    `data: {"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":${JSON.stringify(text)},"logprobs":null,"finish_reason":${JSON.stringify(finish)},"stop_reason":${JSON.stringify(stopReason)}}],"usage":null}\n\n`;

  it('vLLM: the cut-off token rides on the finish chunk; a natural end gets its own "" chunk', () => {
    const texts: StreamEvent[] = [vllmStart, { type: 'text', text: 'A' }, { type: 'text', text: 'B' }];
    assert.equal(
      encodeEvents(openAiCompletions, [...texts, { type: 'finish', reason: 'length', raw: 'length' }]),
      `${vllmChunk('A')}${vllmChunk('B', 'length')}data: [DONE]\n\n`,
    );
    assert.equal(
      encodeEvents(openAiCompletions, [...texts, { type: 'finish', reason: 'stop', raw: 'stop' }]),
      `${vllmChunk('A')}${vllmChunk('B')}${vllmChunk('', 'stop')}data: [DONE]\n\n`,
    );
    assert.equal(
      encodeEvents(openAiCompletions, [
        ...texts,
        { type: 'finish', reason: 'stop', raw: 'stop', stopSequence: '\n\n' },
      ]),
      `${vllmChunk('A')}${vllmChunk('B')}${vllmChunk('', 'stop', '\n\n')}data: [DONE]\n\n`,
    );
  });

  /** A vLLM-flavor encoder writing to a string, started. */
  function vllmWire() {
    const encoder = new OpenAiCompletionsEncoder({ flavor: 'vllm' });
    const wire = {
      encoder,
      out: '',
      sink: (data: string) => {
        wire.out += `data: ${data}\n\n`;
      },
    };
    encoder.event(vllmStart, wire.sink);
    return wire;
  }

  it('vLLM: flush() writes the held text piece at once, and a stream cut after it still has it', () => {
    const wire = vllmWire();
    const { encoder, sink } = wire;
    const out = () => wire.out;
    encoder.event({ type: 'text', text: 'A' }, sink);
    assert.equal(out(), '', 'the piece is held until the next event');
    encoder.flush(sink);
    assert.equal(out(), vllmChunk('A'));
    encoder.flush(sink);
    assert.equal(out(), vllmChunk('A'), 'flushing twice writes nothing more');
    encoder.event({ type: 'text', text: 'B' }, sink);
    encoder.error({ message: 'x', status: 400 }, sink);
    assert.equal(
      out(),
      `${vllmChunk('A')}${vllmChunk('B')}data: {"error": {"message": "x", "type": "BadRequestError", "param": null, "code": 400}}\n\ndata: [DONE]\n\n`,
    );
  });

  it('vLLM: once the finish came, flush() keeps the last piece for the finish chunk (a read may end between them)', () => {
    const wire = vllmWire();
    const { encoder, sink } = wire;
    encoder.event({ type: 'text', text: 'A' }, sink);
    encoder.event({ type: 'finish', reason: 'length', raw: 'length' }, sink);
    encoder.flush(sink);
    assert.equal(wire.out, '', 'held for the finish');
    encoder.end(sink);
    assert.equal(wire.out, `${vllmChunk('A', 'length')}data: [DONE]\n\n`);
  });

  it("writes vLLM's error event the way Python's json.dumps does: spaced, ASCII-escaped", () => {
    const wire = encodeEvents(openAiCompletions, [], {
      ending: { kind: 'error', error: { message: 'échec «x»', status: 400 } },
    });
    assert.equal(
      wire,
      'data: {"error": {"message": "\\u00e9chec \\u00abx\\u00bb", "type": "BadRequestError", "param": null, "code": 400}}\n\ndata: [DONE]\n\n',
    );
  });

  it("vLLM: the usage chunk only with include_usage, with vLLM's key order", () => {
    const events: StreamEvent[] = [
      vllmStart,
      { type: 'text', text: 'A' },
      { type: 'finish', reason: 'length', raw: 'length' },
      { type: 'usage', usage: { inputTokens: 3, outputTokens: 1 } },
    ];
    assert.doesNotMatch(encodeEvents(openAiCompletions, events), /"usage":\{/);
    assert.match(
      encodeEvents(openAiCompletions, events, { includeUsage: true }),
      /"choices":\[\],"usage":\{"prompt_tokens":3,"total_tokens":4,"completion_tokens":1\}\}\n\ndata: \[DONE\]\n\n$/,
    );
  });

  it('llama-server: the final chunk always has usage (zeros when unknown, not reported back), timings after id', () => {
    const base: StreamEvent[] = [
      { type: 'start', id: 'chatcmpl-X', model: 'm', created: 1, systemFingerprint: 'b1-abc' },
      { type: 'text', text: 'Hi' },
      { type: 'finish', reason: 'stop', raw: 'stop' },
    ];
    const wire = encodeEvents(openAiCompletions, base, { flavor: 'llamacpp' });
    assert.equal(
      wire,
      'data: {"choices":[{"text":"Hi","index":0,"logprobs":null,"finish_reason":null}],"created":1,"model":"m","system_fingerprint":"b1-abc","object":"text_completion","id":"chatcmpl-X"}\n\n' +
        'data: {"choices":[{"text":"","index":0,"logprobs":null,"finish_reason":"stop"}],"created":1,"model":"m","system_fingerprint":"b1-abc","object":"text_completion","usage":{"completion_tokens":0,"prompt_tokens":0,"total_tokens":0},"id":"chatcmpl-X"}\n\n' +
        'data: [DONE]\n\n',
    );
    assert.equal(
      decode(utf8(wire)).events.some((e) => e.type === 'usage'),
      false,
    );
    const withTimings = encodeEvents(
      openAiCompletions,
      [
        ...base,
        { type: 'usage', usage: { inputTokens: 2, outputTokens: 1 } },
        { type: 'timings', timings: { promptEvalMs: 10, promptEvalTokens: 2, evalMs: 20, evalTokens: 1 } },
      ],
      { flavor: 'llamacpp' },
    );
    assert.match(
      withTimings,
      /"usage":\{"completion_tokens":1,"prompt_tokens":2,"total_tokens":3\},"id":"chatcmpl-X","timings":\{"cache_n":0,"prompt_n":2,"prompt_ms":10,/,
    );
  });

  it('TGI: intermediate chunks say finish_reason ""; the final one uses TGI\'s own finish words', () => {
    const run = (finish: StreamEvent) =>
      encodeEvents(
        openAiCompletions,
        [{ type: 'start', model: 'm', created: 1 }, { type: 'text', text: 'A' }, finish],
        {
          flavor: 'tgi',
        },
      );
    const final = (text: string, word: string) =>
      `data: {"object":"text_completion","id":"","created":1,"model":"m","system_fingerprint":"3.3.6-native","choices":[{"index":0,"text":"${text}","logprobs":null,"finish_reason":"${word}"}],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}\n\ndata: [DONE]\n\n`;
    const chunkA =
      'data: {"object":"text_completion","id":"","created":1,"choices":[{"index":0,"text":"A","logprobs":null,"finish_reason":""}],"model":"m","system_fingerprint":"3.3.6-native"}\n\n';
    // A natural end: the end-of-sequence token carries the finish, with no text.
    assert.equal(run({ type: 'finish', reason: 'stop', raw: 'stop' }), `${chunkA}${final('', 'eos_token')}`);
    assert.equal(run({ type: 'finish', reason: 'length', raw: 'length' }), final('A', 'length'));
    assert.equal(
      run({ type: 'finish', reason: 'stop', raw: 'stop', stopSequence: 'A' }),
      final('A', 'stop_sequence'),
    );
  });

  it('Ollama: Go escaping, and `created` from the clock on every chunk when the stream did not say', () => {
    let clock = 1_000_000;
    const wire = encodeEvents(
      openAiCompletions,
      [
        { type: 'start', id: 'cmpl-9', model: 'm' },
        { type: 'text', text: '<b>&' },
        { type: 'text', text: '\u2028' },
        { type: 'finish', reason: 'stop', raw: 'stop' },
      ],
      {
        flavor: 'ollama',
        now: () => {
          clock += 1000;
          return clock;
        },
      },
    );
    assert.equal(
      wire,
      'data: {"id":"cmpl-9","object":"text_completion","created":1001,"choices":[{"text":"\\u003cb\\u003e\\u0026","index":0,"finish_reason":null}],"model":"m","system_fingerprint":"fp_ollama"}\n\n' +
        'data: {"id":"cmpl-9","object":"text_completion","created":1002,"choices":[{"text":"\\u2028","index":0,"finish_reason":null}],"model":"m","system_fingerprint":"fp_ollama"}\n\n' +
        'data: {"id":"cmpl-9","object":"text_completion","created":1003,"choices":[{"text":"","index":0,"finish_reason":"stop"}],"model":"m","system_fingerprint":"fp_ollama"}\n\n' +
        'data: [DONE]\n\n',
    );
  });

  it("invents ids in each server's shape when the events carry none", () => {
    const events: StreamEvent[] = [
      { type: 'text', text: 'x' },
      { type: 'finish', reason: 'stop', raw: 'stop' },
    ];
    const id = (flavor: string) => {
      const start = decode(utf8(encodeEvents(openAiCompletions, events, { flavor }))).events[0];
      return start?.type === 'start' ? start.id : undefined;
    };
    assert.match(id('vllm') ?? '', /^cmpl-[0-9a-f]{16}$/);
    assert.match(id('llamacpp') ?? '', /^chatcmpl-[A-Za-z0-9]{32}$/);
    assert.match(id('ollama') ?? '', /^cmpl-\d{1,3}$/);
    assert.equal(id('tgi'), undefined);
  });
});

describe('openai-completions decoder', () => {
  it('reads TGI\'s "" finish_reason as not finished and keeps its raw final word', () => {
    const decoded = decode(
      sse(
        {
          object: 'text_completion',
          id: '',
          created: 1,
          choices: [{ index: 0, text: 'a', finish_reason: '' }],
        },
        {
          object: 'text_completion',
          id: '',
          choices: [{ index: 0, text: '', finish_reason: 'eos_token' }],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        },
      ),
    );
    const finishes = decoded.events.filter((e) => e.type === 'finish');
    assert.deepEqual(finishes, [{ type: 'finish', reason: 'stop', raw: 'eos_token' }]);
    assert.equal(decoded.complete, true, 'the finish is the terminal marker, [DONE] or not');
    assert.equal(decoded.terminated, false);
  });

  it('ignores all-zero usage on chunks with choices, but reports usage on a choices:[] chunk', () => {
    const zero = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
    const decoded = decode(
      sse(
        { object: 'text_completion', choices: [{ index: 0, text: 'a', finish_reason: null }], usage: zero },
        { object: 'text_completion', choices: [], usage: zero },
      ),
    );
    const usages = decoded.events.filter((e) => e.type === 'usage');
    assert.equal(usages.length, 1);
    assert.equal(usages[0]?.type === 'usage' && usages[0].usage.inputTokens, 0);
  });

  it('reports a running usage on every chunk (vLLM continuous_usage_stats)', () => {
    const decoded = decode(
      sse(
        {
          object: 'text_completion',
          choices: [{ index: 0, text: 'a', finish_reason: null }],
          usage: { prompt_tokens: 3, total_tokens: 4, completion_tokens: 1 },
        },
        {
          object: 'text_completion',
          choices: [{ index: 0, text: 'b', finish_reason: 'length' }],
          usage: { prompt_tokens: 3, total_tokens: 5, completion_tokens: 2 },
        },
        '[DONE]',
      ),
    );
    assert.deepEqual(
      decoded.events.filter((e) => e.type === 'usage').map((e) => e.type === 'usage' && e.usage.outputTokens),
      [1, 2],
    );
  });

  it("reads vLLM's beam-search 'stream': one whole response, then [DONE]", () => {
    const decoded = decode(
      sse(
        {
          id: 'cmpl-b',
          object: 'text_completion',
          created: 1,
          model: 'm',
          choices: [
            { index: 0, text: 'whole answer', logprobs: null, finish_reason: 'stop', stop_reason: null },
          ],
          usage: { prompt_tokens: 2, total_tokens: 4, completion_tokens: 2 },
        },
        '[DONE]',
      ),
    );
    assert.deepEqual(
      decoded.events.map((e) => e.type),
      ['start', 'text', 'finish', 'usage'],
    );
    assert.equal(decoded.complete, true);
  });

  it('reads every choice (others carry their index), and ignores a stop token id in stop_reason', () => {
    const decoded = decode(
      sse(
        {
          object: 'text_completion',
          choices: [
            { index: 1, text: 'other', finish_reason: 'length' },
            { index: 0, text: 'mine', finish_reason: 'stop', stop_reason: 128009 },
          ],
        },
        '[DONE]',
      ),
    );
    assert.deepEqual(
      decoded.events.filter((e) => e.type !== 'start'),
      [
        { type: 'text', text: 'other', choice: 1 },
        { type: 'finish', reason: 'length', raw: 'length', choice: 1 },
        { type: 'text', text: 'mine' },
        { type: 'finish', reason: 'stop', raw: 'stop' },
      ],
    );
  });

  it('is complete on a finish or on [DONE], and never after an error', () => {
    const chunk = { object: 'text_completion', choices: [{ index: 0, text: 'a', finish_reason: null }] };
    assert.equal(decode(sse(chunk)).complete, false, 'EOF without a finish or [DONE] is a truncation');
    assert.equal(decode(sse(chunk, '[DONE]')).complete, true);
    const errored = decode(sse(chunk, { error: { message: 'x', http_status_code: 422 } }, '[DONE]'));
    assert.equal(errored.complete, false);
    assert.equal(errored.terminated, true);
    assert.deepEqual(
      errored.events.find((e) => e.type === 'error'),
      { type: 'error', message: 'x', status: 422, raw: { error: { message: 'x', http_status_code: 422 } } },
    );
  });

  it("reads every server's in-stream error shape", () => {
    const messages = (bytes: Uint8Array) =>
      decode(bytes)
        .events.filter((e) => e.type === 'error')
        .map((e) => e.type === 'error' && [e.message, e.errorType, e.status]);
    assert.deepEqual(
      messages(
        sse(
          '{"error": {"object": "error", "message": "old", "type": "BadRequestError", "param": null, "code": 400}}',
        ),
      ),
      [['old', 'BadRequestError', 400]],
    );
    assert.deepEqual(messages(sse({ error: 'generation failed', error_type: 'generation' })), [
      ['generation failed', 'generation', undefined],
    ]);
    assert.deepEqual(messages(utf8('error: {"code":500,"message":"legacy","type":"server_error"}\n\n')), [
      ['legacy', 'server_error', 500],
    ]);
  });

  it('checks [DONE] before parsing, and calls anything else that is not a JSON object malformed', () => {
    assert.equal(decode(sse('[DONE]')).sawTerminator, true);
    for (const bad of ['[DONE', 'not json', '[1,2]']) {
      assert.throws(
        () => decode(sse(bad)),
        (error: unknown) => error instanceof DialectError && error.dialect === 'openai-completions',
      );
    }
  });
});

describe('openai-completions dialect', () => {
  it('detects text_completion payloads and the /v1/completions path, not chat or llama.cpp native', () => {
    const detect = openAiCompletions.detect;
    assert.equal(detect({ payload: { object: 'text_completion', choices: [] } }), 1);
    assert.equal(detect({ payload: { choices: [{ text: 'a', index: 0 }] } }), 0.9);
    assert.equal(detect({ payload: { object: 'chat.completion.chunk', choices: [{ delta: {} }] } }), 0);
    assert.equal(detect({ payload: { index: 0, content: 'a', stop: false, id_slot: -1 } }), 0);
    assert.equal(detect({ path: '/v1/completions' }), 0.8);
    assert.equal(detect({ path: '/proxy/v1/completions/' }), 0.8);
    assert.equal(detect({ path: '/completion' }), 0);
    assert.equal(detect({ path: '/completions' }), 0);
    assert.equal(detect({ path: '/v1/chat/completions' }), 0);
  });

  it("sends each server's response headers", () => {
    assert.deepEqual(openAiCompletions.responseHeaders(), {
      'content-type': 'text/event-stream; charset=utf-8',
    });
    assert.equal(openAiCompletions.responseHeaders('llamacpp').server, 'llama.cpp');
    assert.equal(openAiCompletions.responseHeaders('tgi')['cache-control'], 'no-cache');
    assert.deepEqual(openAiCompletions.responseHeaders('ollama'), { 'content-type': 'text/event-stream' });
  });

  it('writes pre-stream errors as an OpenAI error body', () => {
    const response = openAiCompletions.errorResponse({ status: 400, message: 'prompt is required' });
    assert.equal(response.status, 400);
    assert.equal(response.contentType, 'application/json');
    assert.deepEqual(JSON.parse(response.body), {
      error: { message: 'prompt is required', type: 'invalid_request_error', param: null, code: 400 },
    });
  });
});

describe('openai-completions request mapping', () => {
  it('maps a body to the normalized request and back, keeping unknown fields and stream_options', () => {
    const body = {
      model: 'qwen',
      prompt: ['The capital of France is'],
      max_tokens: 2,
      temperature: 0,
      top_p: 0.9,
      top_k: -1,
      seed: 7,
      stop: '.',
      echo: false,
      logprobs: 2,
      suffix: '!',
      stream: true,
      stream_options: { include_usage: true, continuous_usage_stats: true },
      n: 1,
    };
    const request = openAiCompletions.fromRequestBody(body);
    assert.deepEqual(request, {
      prompt: 'The capital of France is',
      model: 'qwen',
      maxTokens: 2,
      temperature: 0,
      topP: 0.9,
      topK: -1,
      seed: 7,
      stop: ['.'],
      stream: true,
      includeUsage: true,
      logprobs: 2,
      n: 1,
      extra: {
        echo: false,
        suffix: '!',
        stream_options: { continuous_usage_stats: true },
      },
    });
    assert.deepEqual(openAiCompletions.toRequestBody(request), {
      model: 'qwen',
      prompt: 'The capital of France is',
      stream: true,
      max_tokens: 2,
      temperature: 0,
      top_p: 0.9,
      top_k: -1,
      seed: 7,
      stop: ['.'],
      stream_options: { continuous_usage_stats: true, include_usage: true },
      echo: false,
      logprobs: 2,
      suffix: '!',
      n: 1,
    });
  });

  it('renders a chat-only request into one prompt, and leaves out what completions cannot carry', () => {
    const request = {
      model: 'm',
      messages: [
        { role: 'system' as const, content: 'be brief' },
        { role: 'user' as const, content: 'hi' },
      ],
      tools: [{ name: 'f' }],
      reasoning: true,
      includeUsage: false,
    };
    const body = openAiCompletions.toRequestBody(request);
    assert.deepEqual(body, {
      model: 'm',
      prompt: renderPrompt(request),
      stream: true,
      stream_options: { include_usage: false },
    });
    assert.equal(body.prompt, 'system: be brief\nuser: hi\nassistant:');
  });

  it('names the bad field in a RequestError', () => {
    for (const [body, field] of [
      [{}, 'prompt'],
      [{ prompt: 3 }, 'prompt'],
      [{ prompt: [] }, 'prompt'],
      [{ prompt: ['a', 'b'] }, 'prompt'],
      [{ prompt: [1, 2, 3] }, 'prompt'],
      [{ prompt: 'x', max_tokens: -1 }, 'max_tokens'],
      [{ prompt: 'x', max_tokens: 1.5 }, 'max_tokens'],
      [{ prompt: 'x', temperature: 'hot' }, 'temperature'],
      [{ prompt: 'x', top_p: 2 }, 'top_p'],
      [{ prompt: 'x', seed: 0.5 }, 'seed'],
      [{ prompt: 'x', stop: [1] }, 'stop'],
      [{ prompt: 'x', echo: 'yes' }, 'echo'],
      [{ prompt: 'x', logprobs: true }, 'logprobs'],
      [{ prompt: 'x', suffix: 1 }, 'suffix'],
      [{ prompt: 'x', stream: 'yes' }, 'stream'],
      [{ prompt: 'x', stream_options: 'on' }, 'stream_options'],
      [{ prompt: 'x', stream_options: { include_usage: 'yes' } }, 'stream_options.include_usage'],
    ] as const) {
      assert.throws(
        () => openAiCompletions.fromRequestBody(body),
        (error: unknown) => error instanceof RequestError && error.field === field,
        JSON.stringify(body),
      );
    }
    assert.throws(() => openAiCompletions.fromRequestBody('prompt'), RequestError);
  });
});
