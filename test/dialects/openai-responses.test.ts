import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { RequestError } from '../../src/dialects/dialect.ts';
import { OpenAiResponsesDecoder, openAiResponses } from '../../src/dialects/openai-responses/index.ts';
import { detectDialect, dialectForPath } from '../../src/dialects/registry.ts';
import { StreamDecoder } from '../../src/dialects/stream-decoder.ts';
import type { StreamEvent } from '../../src/events/stream-event.ts';
import { utf8 } from '../helpers/chunks.ts';
import { assertByteFaithful, fold, runConformance } from '../helpers/conformance.ts';
import { decodeChunks, encodeEvents } from '../helpers/decode.ts';
import { fixturePath, readFixture } from '../helpers/paths.ts';

const CAPTURES = 'real-captures/llamacpp-b10108';
const LLAMA_STREAMS = [
  `${CAPTURES}/p01-responses-stream.sse`,
  `${CAPTURES}/p03-responses-stream-reasoning.sse`,
  `${CAPTURES}/p04-responses-stream-instructions.sse`,
  `${CAPTURES}/p05-responses-stream-midstream-ctxfull.sse`,
  `${CAPTURES}/p07-responses-stream-tools.sse`,
  `${CAPTURES}/p08-responses-stream-eos.sse`,
  `${CAPTURES}/p09-responses-stream-stop.sse`,
];

runConformance(openAiResponses, {
  fixtures: [
    'wire-examples/openai-responses.sse',
    'wire-examples/openai-responses-reasoning.sse',
    'wire-examples/openai-responses-function-call.sse',
    'wire-examples/openai-responses-refusal.sse',
    'wire-examples/openai-responses-incomplete.sse',
    'wire-examples/openai-responses-failed.sse',
    'wire-examples/openai-responses-error.sse',
    // openai-responses-sequence-gap.sse is not a stream that decodes: its terminal event throws (issue
    // 33.16, test/dialects/responses-sequence-gap.test.ts).
    'wire-examples/vllm-responses-incomplete.sse',
    'wire-examples/ollama-responses-toolcall.sse',
    ...LLAMA_STREAMS,
  ],
  capabilities: (flavor) => ({
    reasoning: true,
    toolCalls: true,
    usage: true,
    // llama-server and Ollama say `completed` when the cap cut the answer: `length` cannot round-trip.
    finishReasons:
      flavor === 'llamacpp' || flavor === 'ollama'
        ? ['stop', 'tool-calls']
        : ['stop', 'length', 'tool-calls'],
  }),
});

function decoderOf(fixture: string, options: { maxOutputTokens?: number } = {}) {
  const events: StreamEvent[] = [];
  const decoder = new StreamDecoder(
    { ...openAiResponses, createDecoder: () => new OpenAiResponsesDecoder(options) },
    (event) => events.push(event),
  );
  try {
    decoder.feed(readFixture(fixture));
    decoder.end();
  } catch (error) {
    // A sequence_number gap throws at the terminal event; the findings stand.
    if (!/an event was lost/.test(String(error))) throw error;
  }
  return { events, state: decoder.state as OpenAiResponsesDecoder };
}

describe('openai-responses decoder', () => {
  it('reads llama-server p01: text, usage with cached tokens, timings, and the model named only at the end', () => {
    const decoded = decodeChunks(openAiResponses, [readFixture(`${CAPTURES}/p01-responses-stream.sse`)]);
    const result = fold(decoded.events);
    assert.equal(decoded.complete, true);
    assert.equal(result.text, 'Effectéb Ludwig},nake награogen debuggingále basicallyEladлькоić mois("#');
    assert.equal(result.id, 'resp_bM3Ng0EsTByMOM95hwsIOrTrZptyaHGY');
    assert.equal(result.model, 'models/tiny.gguf');
    assert.deepEqual(
      [result.usage?.inputTokens, result.usage?.outputTokens, result.usage?.cachedInputTokens],
      [11, 16, 10],
    );
    assert.equal(result.timings?.evalTokens, 16);
    // No cap known to the decoder: llama-server's `completed` is all it can go by.
    assert.equal(result.finishReason, 'stop');
  });

  it("reads llama-server's `completed` at the request's max_output_tokens as cut off, and says so", () => {
    const request = JSON.parse(
      readFileSync(fixturePath(`${CAPTURES}/p01-responses-stream.req.json`), 'utf8'),
    );
    const { events, state } = decoderOf(`${CAPTURES}/p01-responses-stream.sse`, {
      maxOutputTokens: request.max_output_tokens,
    });
    const result = fold(events);
    assert.equal(result.finishReason, 'length');
    assert.equal(result.truncated, true);
    assert.equal(result.rawFinishReason, 'completed');
    assert.deepEqual(
      state.findings.map((f) => f.code),
      ['completed-at-cap'],
    );
    // Under the cap (p08 ends by end-of-sequence at 77 of 100) it stays a finished answer.
    const eos = decoderOf(`${CAPTURES}/p08-responses-stream-eos.sse`, { maxOutputTokens: 100 });
    assert.equal(fold(eos.events).finishReason, 'stop');
    assert.deepEqual(eos.state.findings, []);
  });

  it('reads reasoning (p03), a function call after text (p07) and a failure after the 200 (p05)', () => {
    const p03 = decodeChunks(openAiResponses, [
      readFixture(`${CAPTURES}/p03-responses-stream-reasoning.sse`),
    ]);
    assert.match(fold(p03.events).reasoning, /^\nнительordeAppData/);
    assert.equal(fold(p03.events).text, '');
    const p07 = decodeChunks(openAiResponses, [readFixture(`${CAPTURES}/p07-responses-stream-tools.sse`)]);
    const tools = fold(p07.events);
    assert.deepEqual(
      tools.toolCalls.map((c) => [c.id, c.name, c.input]),
      [['call_kALABackP4OSeMxrK2K9dutM0lSO9GUz', 'get_weather', { city: 'Paris' }]],
    );
    assert.equal(tools.finishReason, 'tool-calls');
    assert.match(tools.text, /^wirk afteruttlibs/);
    const p05 = decodeChunks(openAiResponses, [
      readFixture(`${CAPTURES}/p05-responses-stream-midstream-ctxfull.sse`),
    ]);
    assert.equal(p05.complete, false);
    assert.equal(p05.terminated, false);
    const error = p05.events.find((e) => e.type === 'error');
    assert.match(error?.type === 'error' ? error.message : '', /peg-native format/);
  });

  it("reads response.incomplete max_output_tokens as truncated (and vLLM's completed-with-status-incomplete)", () => {
    for (const fixture of [
      'wire-examples/openai-responses-incomplete.sse',
      'wire-examples/vllm-responses-incomplete.sse',
    ]) {
      const decoded = decodeChunks(openAiResponses, [readFixture(fixture)]);
      const result = fold(decoded.events);
      assert.equal(decoded.complete, true, fixture);
      assert.equal(result.finishReason, 'length', fixture);
      assert.equal(result.truncated, true, fixture);
      assert.equal(result.rawFinishReason, 'max_output_tokens', fixture);
    }
  });

  it('reads response.failed and the error event as errors, never complete', () => {
    const failed = decodeChunks(openAiResponses, [readFixture('wire-examples/openai-responses-failed.sse')]);
    assert.equal(failed.complete, false);
    assert.equal(failed.terminated, true);
    assert.equal(fold(failed.events).text, 'Part');
    const failure = failed.events.find((e) => e.type === 'error');
    assert.deepEqual(failure?.type === 'error' ? [failure.message, failure.errorType] : [], [
      'The model failed to generate a response.',
      'server_error',
    ]);
    const error = decodeChunks(openAiResponses, [readFixture('wire-examples/openai-responses-error.sse')]);
    assert.equal(error.complete, false);
    assert.equal(fold(error.events).text, 'Partial');
    assert.ok(error.events.some((e) => e.type === 'error' && e.errorType === 'server_error'));
  });

  it('reads a refusal as text ending in content-filter, and reasoning summaries and reasoning text', () => {
    const refusal = fold(
      decodeChunks(openAiResponses, [readFixture('wire-examples/openai-responses-refusal.sse')]).events,
    );
    assert.equal(refusal.text, "I'm sorry, I can't help with that.");
    assert.equal(refusal.finishReason, 'content-filter');
    const call = fold(
      decodeChunks(openAiResponses, [readFixture('wire-examples/openai-responses-function-call.sse')]).events,
    );
    assert.equal(call.reasoning, '**Checking** the weather in Paris.');
    assert.deepEqual(
      call.toolCalls.map((c) => [c.id, c.input]),
      [['call_12345xyz', { city: 'Paris' }]],
    );
    assert.equal(call.usage?.reasoningTokens, 24);
    const reasoning = fold(
      decodeChunks(openAiResponses, [readFixture('wire-examples/openai-responses-reasoning.sse')]).events,
    );
    assert.deepEqual([reasoning.reasoning, reasoning.text], ['The user greets me.', 'Hello!']);
    const ollama = fold(
      decodeChunks(openAiResponses, [readFixture('wire-examples/ollama-responses-toolcall.sse')]).events,
    );
    assert.deepEqual(
      [ollama.reasoning, ollama.toolCalls[0]?.arguments],
      ['Need the weather', '{"city":"Paris"}'],
    );
  });

  it('reads a message that comes only whole, in its done item, and a call with no added item', () => {
    const wire = [
      '{"type":"response.created","response":{"id":"resp_1","status":"in_progress","output":[]}}',
      '{"type":"response.output_item.done","item":{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Whole","annotations":[]}]}}',
      '{"type":"response.output_item.done","item":{"id":"fc_1","type":"function_call","status":"completed","call_id":"call_1","name":"f","arguments":"{\\"a\\":1}"}}',
      '{"type":"response.completed","response":{"id":"resp_1","status":"completed","output":[]}}',
    ]
      .map((data) => `data: ${data}\n\n`)
      .join('');
    const result = fold(decodeChunks(openAiResponses, [utf8(wire)]).events);
    assert.equal(result.text, 'Whole');
    assert.deepEqual(
      result.toolCalls.map((c) => [c.id, c.name, c.input]),
      [['call_1', 'f', { a: 1 }]],
    );
    assert.equal(result.finishReason, 'tool-calls');
  });

  it('reports a sequence_number gap as a finding, and none for a gapless or unnumbered stream', () => {
    const gap = decoderOf('wire-examples/openai-responses-sequence-gap.sse');
    assert.deepEqual(
      gap.state.findings.map((f) => [f.code, f.message]),
      [['sequence-gap', 'sequence_number 5 after 3 (expected 4)']],
    );
    assert.equal(gap.state.sequenceNumbers, true);
    assert.deepEqual(decoderOf('wire-examples/openai-responses.sse').state.findings, []);
    const llama = decoderOf(`${CAPTURES}/p01-responses-stream.sse`);
    assert.deepEqual(llama.state.findings, []);
    assert.equal(llama.state.sequenceNumbers, false);
  });

  it('is incomplete when the stream is cut before its terminal event, keeping the partial text', () => {
    for (const fixture of [
      'wire-examples/openai-responses.sse',
      `${CAPTURES}/p07-responses-stream-tools.sse`,
    ]) {
      const text = new TextDecoder().decode(readFixture(fixture));
      const cut = text.slice(0, text.lastIndexOf('event: response.completed'));
      const decoded = decodeChunks(openAiResponses, [utf8(cut)]);
      assert.equal(decoded.complete, false, fixture);
      assert.equal(decoded.terminated, false, fixture);
      const whole = fold(decodeChunks(openAiResponses, [readFixture(fixture)]).events);
      assert.equal(fold(decoded.events).text, whole.text, fixture);
      assert.equal(fold(decoded.events).finishReason, undefined, fixture);
    }
  });

  it('detects the dialect by path and by its first payload', () => {
    assert.equal(dialectForPath('/v1/responses')?.id, 'openai-responses');
    assert.equal(dialectForPath('/proxy/v1/responses/')?.id, 'openai-responses');
    const first =
      '{"type":"response.created","response":{"id":"resp_1","object":"response","status":"in_progress"}}';
    assert.equal(detectDialect({ payload: JSON.parse(first) })?.dialect.id, 'openai-responses');
    assert.equal(
      detectDialect({ path: '/v1/responses', contentType: 'text/event-stream' })?.dialect.id,
      'openai-responses',
    );
  });
});

describe('openai-responses encoder', () => {
  for (const fixture of LLAMA_STREAMS) {
    it(`writes ${fixture} back byte for byte as llama-server`, () => {
      assertByteFaithful(openAiResponses, fixture, 'llamacpp');
    });
  }

  it('writes response.incomplete for a capped answer (openai), completed with status incomplete (vllm), completed (llamacpp, ollama)', () => {
    const events: StreamEvent[] = [
      { type: 'start', id: 'resp_1', model: 'm' },
      { type: 'text', text: 'Once upon' },
      { type: 'finish', reason: 'length', raw: 'length' },
      { type: 'usage', usage: { inputTokens: 3, outputTokens: 2 } },
    ];
    const terminal = (flavor: string) => {
      const wire = encodeEvents(openAiResponses, events, { flavor });
      const last = wire.trimEnd().split('\n\n').at(-1)!;
      const data = JSON.parse(last.split('\ndata: ')[1]!);
      return [last.split('\n')[0], data.response.status, data.response.incomplete_details?.reason ?? null];
    };
    assert.deepEqual(terminal('openai'), ['event: response.incomplete', 'incomplete', 'max_output_tokens']);
    assert.deepEqual(terminal('vllm'), ['event: response.completed', 'incomplete', 'max_output_tokens']);
    assert.deepEqual(terminal('llamacpp'), ['event: response.completed', 'completed', null]);
    assert.deepEqual(terminal('ollama'), ['event: response.completed', 'completed', null]);
  });

  it('numbers every event from 0 without gaps (openai, vllm, ollama), and names each in its event line', () => {
    const events: StreamEvent[] = [
      { type: 'start', id: 'resp_1', model: 'm' },
      { type: 'reasoning', text: 'think' },
      { type: 'text', text: 'Hi' },
      { type: 'tool-call-delta', index: 0, id: 'call_1', name: 'f', argumentsDelta: '{"a":1}' },
      { type: 'tool-call', index: 0, id: 'call_1', name: 'f', arguments: '{"a":1}', input: { a: 1 } },
      { type: 'finish', reason: 'tool-calls', raw: null },
    ];
    for (const flavor of ['openai', 'vllm', 'ollama']) {
      const wire = encodeEvents(openAiResponses, events, { flavor });
      const frames = wire.trimEnd().split('\n\n');
      const numbers = frames.map((frame) => JSON.parse(frame.split('\ndata: ')[1]!).sequence_number);
      assert.deepEqual(
        numbers,
        frames.map((_, i) => i),
        flavor,
      );
      for (const frame of frames) {
        const [eventLine, dataLine] = frame.split('\n');
        assert.equal(eventLine, `event: ${JSON.parse(dataLine!.slice('data: '.length)).type}`, flavor);
      }
      const { state } = (() => {
        const decoder = new OpenAiResponsesDecoder();
        const decoded: StreamEvent[] = [];
        const stream = new StreamDecoder({ ...openAiResponses, createDecoder: () => decoder }, (event) =>
          decoded.push(event),
        );
        stream.feed(utf8(wire));
        stream.end();
        return { state: decoder };
      })();
      assert.deepEqual(state.findings, [], flavor);
    }
  });

  it("writes Ollama's converter: sorted keys, reasoning as summary text, a whole call and no text after it", () => {
    const wire = encodeEvents(
      openAiResponses,
      [
        { type: 'start', id: 'resp_1', model: 'qwen3' },
        { type: 'reasoning', text: 'a<b' },
        { type: 'tool-call-delta', index: 0, id: 'call_1', name: 'f', argumentsDelta: '{}' },
        { type: 'tool-call', index: 0, id: 'call_1', name: 'f', arguments: '{}', input: {} },
        { type: 'text', text: 'after the call' },
        { type: 'finish', reason: 'tool-calls', raw: null },
      ],
      { flavor: 'ollama' },
    );
    assert.match(
      wire,
      /event: response.reasoning_summary_text.delta\ndata: \{"delta":"a\\u003cb","item_id":"rs_\d+"/,
    );
    assert.doesNotMatch(wire, /after the call/);
    assert.doesNotMatch(wire, /response.output_text/);
    assert.equal((wire.match(/event: response.function_call_arguments.delta/g) ?? []).length, 1);
    for (const frame of wire.trimEnd().split('\n\n')) {
      const keys = Object.keys(JSON.parse(frame.split('\ndata: ')[1]!));
      assert.deepEqual(keys, [...keys].sort());
    }
  });

  it('writes a mid-stream failure as llama-server does: a bare data line with no event name', () => {
    const wire = encodeEvents(
      openAiResponses,
      [
        { type: 'start', id: 'resp_1' },
        { type: 'text', text: 'x' },
      ],
      {
        flavor: 'llamacpp',
        ending: { kind: 'error', error: { message: 'boom', status: 500 } },
      },
    );
    assert.ok(wire.endsWith('\n\ndata: {"error":{"code":500,"message":"boom","type":"server_error"}}\n\n'));
  });

  it('writes errors before a stream in the OpenAI shape', () => {
    const error = openAiResponses.errorResponse({ status: 400, message: 'bad input' });
    assert.equal(error.status, 400);
    assert.deepEqual(JSON.parse(error.body), {
      error: { message: 'bad input', type: 'invalid_request_error', param: null, code: 400 },
    });
  });
});

describe('openai-responses requests', () => {
  it("reads the captures' requests: a string input, instructions with an item list, tools, a stop word", () => {
    const read = (name: string) =>
      openAiResponses.fromRequestBody(
        JSON.parse(readFileSync(fixturePath(`${CAPTURES}/${name}.req.json`), 'utf8')),
      );
    assert.deepEqual(read('p01-responses-stream'), {
      messages: [{ role: 'user', content: 'hello' }],
      model: 'x',
      maxTokens: 16,
      temperature: 0,
      seed: 1,
      stream: true,
    });
    assert.deepEqual(read('p04-responses-stream-instructions').messages, [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'hello' },
    ]);
    const tools = read('p07-responses-stream-tools');
    assert.equal(tools.tools?.[0]?.name, 'get_weather');
    assert.equal(tools.toolChoice, 'required');
    assert.deepEqual(read('p09-responses-stream-stop').stop, ['Ludwig']);
  });

  it('reads function_call and function_call_output items, reasoning effort, text.format and store', () => {
    const request = openAiResponses.fromRequestBody({
      model: 'm',
      input: [
        { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Be terse.' }] },
        { role: 'user', content: 'Weather in Paris?' },
        { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
        { type: 'function_call_output', call_id: 'call_1', output: '{"temp":21}' },
      ],
      reasoning: { effort: 'low', summary: 'auto' },
      text: { format: { type: 'json_schema', name: 'w', schema: { type: 'object' }, strict: true } },
      store: false,
      metadata: { k: 'v' },
    });
    assert.deepEqual(request.messages, [
      { role: 'system', content: 'Be terse.', developer: true },
      { role: 'user', content: 'Weather in Paris?' },
      {
        role: 'assistant',
        content: '',
        toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' }],
      },
      { role: 'tool', toolCallId: 'call_1', content: '{"temp":21}' },
    ]);
    assert.equal(request.reasoning, 'low');
    assert.deepEqual(request.responseFormat, {
      type: 'json_schema',
      schema: { type: 'object' },
      name: 'w',
      strict: true,
    });
    assert.equal(request.store, false);
    assert.deepEqual(request.extra, { metadata: { k: 'v' }, reasoning: { summary: 'auto' } });
    // And back: the same body, as a Responses server reads it.
    const body = openAiResponses.toRequestBody(request);
    assert.deepEqual(body, {
      model: 'm',
      // A developer turn stays one (instructions are for system turns).
      input: [
        { role: 'developer', content: 'Be terse.' },
        { role: 'user', content: 'Weather in Paris?' },
        { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
        { type: 'function_call_output', call_id: 'call_1', output: '{"temp":21}' },
      ],
      stream: true,
      reasoning: { summary: 'auto', effort: 'low' },
      text: { format: { type: 'json_schema', name: 'w', schema: { type: 'object' }, strict: true } },
      store: false,
      metadata: { k: 'v' },
    });
    assert.deepEqual(openAiResponses.fromRequestBody(body), { ...request, stream: true });
  });

  it('refuses previous_response_id with a 400 naming the field, and bad input as llama-server does (p06)', () => {
    assert.throws(
      () => openAiResponses.fromRequestBody({ model: 'm', input: 'hi', previous_response_id: 'resp_1' }),
      (error: unknown) =>
        error instanceof RequestError && error.field === 'previous_response_id' && error.status === 400,
    );
    const p06 = JSON.parse(
      readFileSync(fixturePath(`${CAPTURES}/p06-responses-bad-request.req.json`), 'utf8'),
    );
    assert.throws(
      () => openAiResponses.fromRequestBody(p06),
      (error: unknown) => error instanceof RequestError && error.field === 'input',
    );
    assert.throws(
      () => openAiResponses.fromRequestBody({ input: 'hi', tools: [{ type: 'web_search' }] }),
      (error: unknown) => error instanceof RequestError && error.field === 'tools[0].type',
    );
    // A file part has no normalized form: kept for a same-dialect upstream, named for a translation to
    // refuse.
    assert.deepEqual(
      openAiResponses.fromRequestBody({
        input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'f' }] }],
      }).unmapped,
      [{ name: 'input[0].content[0] (input_file)' }],
    );
    assert.throws(
      () =>
        openAiResponses.fromRequestBody({
          input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'x' }] }],
        }),
      (error: unknown) => error instanceof RequestError && error.field === 'input[0].content[0].image_url',
    );
  });

  it('writes a bare prompt as a string input and chat turns as items', () => {
    assert.deepEqual(openAiResponses.toRequestBody({ prompt: 'Once', maxTokens: 5 }), {
      model: 'default',
      input: 'Once',
      stream: true,
      max_output_tokens: 5,
    });
    assert.deepEqual(
      openAiResponses.toRequestBody({
        messages: [
          { role: 'user', content: 'a' },
          { role: 'assistant', content: 'b' },
          { role: 'user', content: 'c' },
        ],
        reasoning: false,
      }).input,
      [
        { role: 'user', content: 'a' },
        { role: 'assistant', content: 'b' },
        { role: 'user', content: 'c' },
      ],
    );
  });
});
