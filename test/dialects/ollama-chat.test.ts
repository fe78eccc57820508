import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { DialectError, RequestError } from '../../src/dialects/dialect.ts';
import { ollamaChat } from '../../src/dialects/ollama-chat/index.ts';
import { ollamaCreatedAt } from '../../src/dialects/ollama-family/ollama-created-at.ts';
import type { StreamEvent } from '../../src/events/stream-event.ts';
import { utf8 } from '../helpers/chunks.ts';
import { assertByteFaithful, fold, runConformance } from '../helpers/conformance.ts';
import { decodeChunks, encodeEvents } from '../helpers/decode.ts';
import { readFixture } from '../helpers/paths.ts';

runConformance(ollamaChat, {
  fixtures: [
    'wire-examples/ollama-chat.ndjson',
    'wire-examples/ollama-chat-thinking.ndjson',
    'wire-examples/ollama-chat-toolcall.ndjson',
    'wire-examples/ollama-chat-midstream-error.ndjson',
    'extra/ollama-chat-length.ndjson',
    'extra/ollama-chat-midstream-error-escaped.ndjson',
    'extra/ollama-chat-done-toolcalls.ndjson',
    'extra/ollama-chat-load.ndjson',
    'extra/ollama-chat-legacy.ndjson',
    'extra/ollama-chat-crlf.ndjson',
  ],
  capabilities: () => ({
    reasoning: true,
    toolCalls: true,
    usage: true,
    // Native Ollama says `stop` after tool calls; the decoder reports that as `tool-calls`.
    finishReasons: ['stop', 'length', 'tool-calls'],
  }),
});

/** Decoded lines of a fixture, as text. */
function fixtureText(fixture: string): string {
  return new TextDecoder().decode(readFixture(fixture));
}

function decodeText(text: string) {
  return decodeChunks(ollamaChat, [utf8(text)]);
}

/** A clock that returns the given Unix milliseconds, one per call. */
function clock(...times: number[]): () => number {
  let i = 0;
  return () => times[Math.min(i++, times.length - 1)]!;
}

const FIXED_MS = Date.UTC(2026, 0, 1, 12, 34, 56, 789);
/** Every `created_at` of a fixture replaced by the time the mocked clock gives the encoder. */
const sameClock = (text: string) =>
  text.replace(/"created_at":"[^"]*"/g, `"created_at":"${ollamaCreatedAt(FIXED_MS)}"`);

describe('ollama-chat encoder', () => {
  // `created_at` is wall-clock time per line and has no home in the events (and the examples carry
  // nanoseconds a millisecond clock cannot produce), so these compare everything else byte for byte,
  // with every `created_at` on both sides set to one mocked clock reading.
  for (const fixture of [
    'wire-examples/ollama-chat.ndjson',
    'wire-examples/ollama-chat-thinking.ndjson',
    'wire-examples/ollama-chat-toolcall.ndjson',
    'wire-examples/ollama-chat-midstream-error.ndjson',
    'extra/ollama-chat-length.ndjson',
    'extra/ollama-chat-midstream-error-escaped.ndjson',
    'extra/ollama-chat-load.ndjson',
  ]) {
    it(`writes ${fixture} byte for byte (created_at from the clock)`, (t) => {
      t.mock.method(Date, 'now', () => FIXED_MS);
      assertByteFaithful(ollamaChat, fixture, 'ollama', { strip: sameClock });
    });
  }

  it('reproduces streams with millisecond timestamps exactly, created_at included, from the now clock', () => {
    const base = Date.UTC(2026, 0, 1);
    for (const [fixture, times] of [
      ['wire-examples/ollama-chat-thinking.ndjson', [base + 100, base + 200, base + 300]],
      ['wire-examples/ollama-chat-toolcall.ndjson', [base + 200, base + 210]],
      ['extra/ollama-chat-length.ndjson', [base + 100, base + 200, base + 300]],
    ] as const) {
      const decoded = decodeChunks(ollamaChat, [readFixture(fixture)]);
      const wire = encodeEvents(ollamaChat, decoded.events, { now: clock(...times) });
      assert.equal(wire, fixtureText(fixture), fixture);
    }
  });

  it('formats created_at as Go RFC3339Nano in UTC: trailing zeros trimmed, no fraction when whole', () => {
    const base = Date.UTC(2026, 0, 1);
    assert.equal(ollamaCreatedAt(base), '2026-01-01T00:00:00Z');
    assert.equal(ollamaCreatedAt(base + 100), '2026-01-01T00:00:00.1Z');
    assert.equal(ollamaCreatedAt(base + 1010), '2026-01-01T00:00:01.01Z');
    assert.equal(ollamaCreatedAt(base + 999), '2026-01-01T00:00:00.999Z');
    // A high-resolution clock's fraction of a millisecond becomes nanoseconds.
    assert.equal(ollamaCreatedAt(base + 0.25), '2026-01-01T00:00:00.00025Z');
  });

  it('formats created_at as a direct formatting would, whatever the order of clock readings', () => {
    // The reference: the whole time formatted from scratch (the encoder caches the seconds part).
    const reference = (ms: number) => {
      const whole = Math.floor(ms) + (Math.round((ms - Math.floor(ms)) * 1e6) >= 1e6 ? 1 : 0);
      const nanos = Math.round((ms - Math.floor(ms)) * 1e6) % 1e6;
      const iso = new Date(whole).toISOString();
      const fraction = `${iso.slice(20, 23)}${String(nanos).padStart(6, '0')}`.replace(/0+$/, '');
      return `${iso.slice(0, 19)}${fraction === '' ? '' : `.${fraction}`}Z`;
    };
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: -1e12, max: 4e12, noNaN: true, noDefaultInfinity: true }), {
          maxLength: 20,
        }),
        (readings) => {
          for (const ms of readings) assert.equal(ollamaCreatedAt(ms), reference(ms));
          for (const ms of readings) assert.equal(ollamaCreatedAt(ms + 1), reference(ms + 1));
        },
      ),
    );
  });

  it('writes a mid-stream error as one Go-escaped {"error"} line and nothing after it', () => {
    const encoder = ollamaChat.createEncoder({ now: () => Date.UTC(2026, 0, 1) });
    const lines: string[] = [];
    const sink = (data: string) => lines.push(data);
    encoder.event({ type: 'start', model: 'llama3.2' }, sink);
    encoder.event({ type: 'text', text: 'Hi' }, sink);
    encoder.error({ message: 'failed: <unk> & "x"\u2028', status: 500 }, sink);
    encoder.event({ type: 'text', text: 'more' }, sink);
    encoder.event({ type: 'finish', reason: 'stop', raw: 'stop' }, sink);
    encoder.end(sink);
    assert.deepEqual(lines, [
      '{"model":"llama3.2","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":"Hi"},"done":false}',
      '{"error":"failed: \\u003cunk\\u003e \\u0026 \\"x\\"\\u2028"}',
    ]);
  });

  it('writes an error event from another dialect the same way', () => {
    const wire = encodeEvents(ollamaChat, [
      { type: 'text', text: 'partial' },
      { type: 'error', message: 'CUDA out of memory', errorType: 'server_error', status: 500 },
    ]);
    assert.match(wire, /\n\{"error":"CUDA out of memory"\}\n$/);
    const decoded = decodeText(wire);
    assert.equal(decoded.complete, false);
    assert.equal(decoded.terminated, false);
  });

  it('writes fragmented tool calls once, whole, with the arguments as an object', () => {
    const wire = encodeEvents(
      ollamaChat,
      [
        { type: 'start', model: 'm' },
        { type: 'tool-call-delta', index: 0, id: 'chatcmpl-tool-1', name: 'f', argumentsDelta: '{"a":' },
        { type: 'tool-call-delta', index: 0, argumentsDelta: '1}' },
        {
          type: 'tool-call',
          index: 0,
          id: 'chatcmpl-tool-1',
          name: 'f',
          arguments: '{"a":1}',
          input: { a: 1 },
        },
        { type: 'finish', reason: 'tool-calls', raw: 'tool_calls' },
      ],
      { now: () => Date.UTC(2026, 0, 1) },
    );
    assert.equal(
      wire,
      '{"model":"m","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":"","tool_calls":[{"id":"chatcmpl-tool-1","function":{"index":0,"name":"f","arguments":{"a":1}}}]},"done":false}\n' +
        '{"model":"m","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop"}\n',
    );
  });

  it('writes arguments that are not a JSON object as their text, and reads them back unchanged', () => {
    const broken = '{"city": "Par';
    const wire = encodeEvents(ollamaChat, [
      {
        type: 'tool-call',
        index: 0,
        id: 'c1',
        name: 'f',
        arguments: broken,
        input: undefined,
        inputError: 'bad',
      },
      { type: 'finish', reason: 'tool-calls', raw: null },
    ]);
    assert.match(wire, /"arguments":"\{\\"city\\": \\"Par"/);
    const call = decodeText(wire).events.find((e) => e.type === 'tool-call');
    assert.equal(call?.type === 'tool-call' && call.arguments, broken);
    assert.equal(call?.type === 'tool-call' && call.input, undefined);
    assert.match(call?.type === 'tool-call' ? (call.inputError ?? '') : '', /not valid JSON/);
  });

  it('maps finish reasons onto done_reason: Ollama knows only stop, length, load and unload', () => {
    const doneReason = (events: StreamEvent[]) => {
      const wire = encodeEvents(ollamaChat, events);
      return JSON.parse(wire.trimEnd().split('\n').at(-1)!).done_reason;
    };
    assert.equal(doneReason([{ type: 'finish', reason: 'length', raw: 'max_tokens' }]), 'length');
    assert.equal(doneReason([{ type: 'finish', reason: 'tool-calls', raw: 'tool_calls' }]), 'stop');
    assert.equal(doneReason([{ type: 'finish', reason: 'content-filter', raw: 'content_filter' }]), 'stop');
    assert.equal(doneReason([{ type: 'finish', reason: 'error', raw: 'abort' }]), 'stop');
    assert.equal(doneReason([{ type: 'finish', reason: 'other', raw: 'unload' }]), 'unload');
    assert.equal(doneReason([{ type: 'finish', reason: 'other', raw: 'weird' }]), 'stop');
    // No finish at all: Go leaves an empty reason out.
    assert.equal(doneReason([{ type: 'text', text: 'x' }]), undefined);
  });

  it('writes metrics from another server: llama.cpp timings in ms become integer nanoseconds, zeros left out', () => {
    const wire = encodeEvents(
      ollamaChat,
      [
        { type: 'start', model: 'qwen' },
        { type: 'finish', reason: 'stop', raw: 'stop' },
        {
          type: 'timings',
          timings: { promptEvalMs: 12.5, promptEvalTokens: 5, evalMs: 100.25, evalTokens: 10 },
        },
        { type: 'usage', usage: { inputTokens: 0, outputTokens: 10 } },
      ],
      { now: () => Date.UTC(2026, 0, 1), model: 'override' },
    );
    assert.equal(
      wire,
      '{"model":"override","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_duration":12500000,"eval_count":10,"eval_duration":100250000}\n',
    );
  });
});

describe('ollama-chat decoder', () => {
  const line = (fields: Record<string, unknown>) =>
    JSON.stringify({
      model: 'm',
      created_at: '2026-01-01T00:00:00Z',
      message: { role: 'assistant', content: '' },
      ...fields,
    });

  it('reads done_reason: stop and length as themselves, load and unload as other, missing as stop', () => {
    const finish = (fields: Record<string, unknown>) =>
      decodeText(`${line({ done: true, ...fields })}\n`).events.find((e) => e.type === 'finish');
    assert.deepEqual(finish({ done_reason: 'stop' }), { type: 'finish', reason: 'stop', raw: 'stop' });
    assert.deepEqual(finish({ done_reason: 'length' }), { type: 'finish', reason: 'length', raw: 'length' });
    assert.deepEqual(finish({ done_reason: 'load' }), { type: 'finish', reason: 'other', raw: 'load' });
    assert.deepEqual(finish({ done_reason: 'unload' }), { type: 'finish', reason: 'other', raw: 'unload' });
    assert.deepEqual(finish({}), { type: 'finish', reason: 'stop', raw: null });
    assert.deepEqual(finish({ done_reason: '' }), { type: 'finish', reason: 'stop', raw: null });
  });

  it('reports a stop after tool calls as tool-calls (Ollama never says tool_calls), but keeps length', () => {
    const decoded = decodeChunks(ollamaChat, [readFixture('wire-examples/ollama-chat-toolcall.ndjson')]);
    assert.deepEqual(
      decoded.events.find((e) => e.type === 'finish'),
      { type: 'finish', reason: 'tool-calls', raw: 'stop' },
    );
    const call = { function: { index: 0, name: 'f', arguments: {} } };
    const length = decodeText(
      `${line({ message: { role: 'assistant', content: '', tool_calls: [call] }, done: false })}\n${line({ done: true, done_reason: 'length' })}\n`,
    );
    assert.equal(fold(length.events).finishReason, 'length');
  });

  it('emits each whole tool call as one delta with all its arguments, then the complete call, at once', () => {
    const decoded = decodeChunks(ollamaChat, [readFixture('wire-examples/ollama-chat-toolcall.ndjson')]);
    assert.deepEqual(decoded.events.slice(1, 3), [
      {
        type: 'tool-call-delta',
        index: 0,
        argumentsDelta: '{"city":"Paris"}',
        id: 'call_k3v9x2qa',
        name: 'get_weather',
      },
      {
        type: 'tool-call',
        index: 0,
        id: 'call_k3v9x2qa',
        name: 'get_weather',
        arguments: '{"city":"Paris"}',
        input: { city: 'Paris' },
      },
    ]);
  });

  it('numbers calls without function.index by their order and names calls without an id', () => {
    const calls = [
      { function: { name: 'a', arguments: { x: 1 } } },
      { function: { name: 'b', arguments: { y: 2 } } },
    ];
    const decoded = decodeText(
      `${line({ message: { role: 'assistant', content: '', tool_calls: calls }, done: false })}\n`,
    );
    const complete = decoded.events.filter((e) => e.type === 'tool-call');
    assert.deepEqual(
      complete.map((c) => [c.index, c.id, c.name, c.arguments]),
      [
        [0, 'call_0', 'a', '{"x":1}'],
        [1, 'call_1', 'b', '{"y":2}'],
      ],
    );
  });

  it('reads thinking, content and tool calls carried on the done line before the finish', () => {
    const decoded = decodeChunks(ollamaChat, [readFixture('extra/ollama-chat-done-toolcalls.ndjson')]);
    assert.deepEqual(
      decoded.events.map((e) => e.type),
      [
        'start',
        'reasoning',
        'tool-call-delta',
        'tool-call',
        'tool-call-delta',
        'tool-call',
        'finish',
        'usage',
        'timings',
      ],
    );
    const result = fold(decoded.events);
    assert.deepEqual(result.toolCalls[0]?.input, { city: 'Zürich', unit: 'celsius', days: 3 });
    assert.equal(result.finishReason, 'tool-calls');
  });

  it('normalizes usage and nanosecond timings, keeping the server values in raw', () => {
    const decoded = decodeChunks(ollamaChat, [readFixture('wire-examples/ollama-chat.ndjson')]);
    const result = fold(decoded.events);
    assert.deepEqual(result.usage, {
      inputTokens: 9,
      outputTokens: 3,
      raw: { prompt_eval_count: 9, eval_count: 3 },
    });
    assert.equal(result.timings?.loadMs, 21.345678);
    assert.equal(result.timings?.promptEvalMs, 35.2);
    assert.equal(result.timings?.promptEvalTokens, 9);
    assert.equal(result.timings?.evalMs, 60.1);
    assert.equal(result.timings?.evalTokens, 3);
    assert.equal(result.timings?.totalMs, 812.345678);
  });

  it('is complete and terminated on done:true; never sees a terminator (NDJSON has none)', () => {
    const whole = decodeChunks(ollamaChat, [readFixture('wire-examples/ollama-chat.ndjson')]);
    assert.deepEqual([whole.complete, whole.terminated, whole.sawTerminator], [true, true, false]);
    const cut = decodeText(
      `${fixtureText('wire-examples/ollama-chat.ndjson').split('\n').slice(0, 2).join('\n')}\n`,
    );
    assert.deepEqual([cut.complete, cut.terminated, cut.sawTerminator], [false, false, false]);
    assert.equal(fold(cut.events).text, 'Hi there');
    const failed = decodeChunks(ollamaChat, [
      readFixture('wire-examples/ollama-chat-midstream-error.ndjson'),
    ]);
    assert.deepEqual([failed.complete, failed.terminated], [false, false]);
    assert.deepEqual(failed.events.at(-1), {
      type: 'error',
      message: 'an error was encountered while running the model: unexpected EOF',
      raw: { error: 'an error was encountered while running the model: unexpected EOF' },
    });
  });

  it('reads CRLF line ends and a last line without its newline like the plain stream', () => {
    const plain = decodeChunks(ollamaChat, [readFixture('wire-examples/ollama-chat.ndjson')]);
    assert.deepEqual(decodeChunks(ollamaChat, [readFixture('extra/ollama-chat-crlf.ndjson')]), plain);
    const unterminated = fixtureText('wire-examples/ollama-chat.ndjson').replace(/\n$/, '');
    assert.deepEqual(decodeText(unterminated).events, plain.events);
    assert.equal(decodeText(unterminated).complete, true);
  });

  it('reads an old done line with no message and no done_reason', () => {
    const decoded = decodeChunks(ollamaChat, [readFixture('extra/ollama-chat-legacy.ndjson')]);
    const result = fold(decoded.events);
    assert.equal(decoded.complete, true);
    assert.equal(result.text, 'Hello');
    assert.equal(result.finishReason, 'stop');
    assert.equal(result.rawFinishReason, null);
    assert.equal(result.usage?.outputTokens, 298);
  });

  it('drops thinking when asked to', () => {
    const events: StreamEvent[] = [];
    const decoder = ollamaChat.createDecoder({ dropReasoning: true });
    for (const data of fixtureText('wire-examples/ollama-chat-thinking.ndjson').trim().split('\n')) {
      decoder.frame({ data }, (e) => events.push(e));
    }
    assert.equal(
      events.some((e) => e.type === 'reasoning'),
      false,
    );
    assert.equal(fold(events).text, 'Hello!');
  });

  it('throws a DialectError for a line that is not JSON, not an object, or an /api/generate line', () => {
    for (const data of [
      'data: {"model":"m"}',
      '[1,2]',
      '{"model":"m","created_at":"2026-01-01T00:00:00Z","response":"x","done":false}',
      '{"object":"chat.completion.chunk","choices":[]}',
    ]) {
      const decoder = ollamaChat.createDecoder();
      assert.throws(
        () => decoder.frame({ data }, () => {}),
        (error: unknown) => error instanceof DialectError && error.code === 'malformed-payload',
        data,
      );
    }
  });
});

describe('ollama-chat request mapping', () => {
  it('maps an /api/chat body to the normalized request, options and think included', () => {
    const request = ollamaChat.fromRequestBody({
      model: 'llama3.2',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'weather?', images: ['aGk='] },
        {
          role: 'assistant',
          content: '',
          tool_calls: [{ function: { index: 0, name: 'get_weather', arguments: { city: 'Paris' } } }],
        },
        { role: 'tool', content: '22C', tool_name: 'get_weather' },
      ],
      options: {
        num_predict: 64,
        temperature: 0.2,
        top_p: 0.9,
        top_k: 40,
        seed: 7,
        stop: ['###'],
        num_ctx: 8192,
      },
      think: 'high',
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }],
      format: 'json',
      keep_alive: '5m',
    });
    assert.deepEqual(request, {
      model: 'llama3.2',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'weather?', images: [{ data: 'aGk=' }] },
        {
          role: 'assistant',
          content: '',
          toolCalls: [{ id: '', name: 'get_weather', arguments: '{"city":"Paris"}' }],
        },
        { role: 'tool', content: '22C', name: 'get_weather' },
      ],
      includeUsage: true,
      responseFormat: { type: 'json_object' },
      tools: [{ name: 'get_weather', parameters: { type: 'object' } }],
      reasoning: 'high',
      maxTokens: 64,
      temperature: 0.2,
      topP: 0.9,
      topK: 40,
      seed: 7,
      stop: ['###'],
      extra: { keep_alive: '5m', options: { num_ctx: 8192 } },
    });
    assert.equal(request.stream, undefined, 'an absent stream means streaming');
  });

  it('writes the Ollama body back: stream true, options merged, tool-call arguments as objects', () => {
    const request = ollamaChat.fromRequestBody({
      model: 'llama3.2',
      messages: [
        { role: 'user', content: 'hi' },
        {
          role: 'assistant',
          content: '',
          tool_calls: [{ id: 'call_1', function: { name: 'f', arguments: { a: 1 } } }],
        },
        { role: 'tool', content: 'ok', tool_name: 'f' },
      ],
      options: { num_predict: -1, temperature: 0 },
      think: false,
      stream: false,
      keep_alive: 0,
    });
    assert.equal(request.maxTokens, undefined, 'num_predict -1 means no limit');
    assert.equal(request.stream, false);
    assert.deepEqual(ollamaChat.toRequestBody(request), {
      model: 'llama3.2',
      messages: [
        { role: 'user', content: 'hi' },
        {
          role: 'assistant',
          content: '',
          tool_calls: [{ id: 'call_1', function: { name: 'f', arguments: { a: 1 } } }],
        },
        { role: 'tool', content: 'ok', tool_name: 'f' },
      ],
      stream: true,
      think: false,
      options: { num_predict: -1, temperature: 0 },
      keep_alive: 0,
    });
  });

  it('writes a request from another dialect: no options object unless needed, efforts clamped to think levels', () => {
    assert.deepEqual(ollamaChat.toRequestBody({ model: 'm', prompt: 'hi' }), {
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    });
    const think = (reasoning: boolean | string) => ollamaChat.toRequestBody({ model: 'm', reasoning }).think;
    assert.equal(think('none'), false);
    assert.equal(think('minimal'), 'low');
    assert.equal(think('medium'), 'medium');
    assert.equal(think('xhigh'), 'max');
    assert.equal(think('turbo'), true);
    const tools = [{ name: 'f' }];
    assert.deepEqual(ollamaChat.toRequestBody({ model: 'm', tools, toolChoice: 'auto' }).tools, [
      { type: 'function', function: { name: 'f' } },
    ]);
    assert.equal(ollamaChat.toRequestBody({ model: 'm', tools, toolChoice: 'none' }).tools, undefined);
    const body = ollamaChat.toRequestBody({
      model: 'm',
      messages: [
        { role: 'assistant', content: '', toolCalls: [{ id: 'x', name: 'f', arguments: 'not json' }] },
      ],
      maxTokens: 5,
      frequencyPenalty: 0.5,
    });
    assert.deepEqual(body.messages, [
      { role: 'assistant', content: '', tool_calls: [{ id: 'x', function: { name: 'f', arguments: {} } }] },
    ]);
    assert.deepEqual(body.options, { num_predict: 5, frequency_penalty: 0.5 });
  });

  it('accepts a load-only request (no messages) as Ollama does', () => {
    const request = ollamaChat.fromRequestBody({ model: 'llama3.2' });
    assert.deepEqual(request.messages, []);
    assert.deepEqual(ollamaChat.toRequestBody(request).messages, []);
  });

  it('names the bad field in a RequestError', () => {
    const messages = [{ role: 'user', content: 'x' }];
    for (const [body, field] of [
      [{ messages }, 'model'],
      [{ model: 3, messages }, 'model'],
      [{ model: 'm', messages: 'hi' }, 'messages'],
      [{ model: 'm', messages: [{ role: 'wizard', content: 'x' }] }, 'messages[0].role'],
      [{ model: 'm', messages, stream: 'yes' }, 'stream'],
      [{ model: 'm', messages, options: [] }, 'options'],
      [{ model: 'm', messages, options: { num_predict: 1.5 } }, 'options.num_predict'],
      [{ model: 'm', messages, options: { temperature: -1 } }, 'options.temperature'],
      [{ model: 'm', messages, options: { top_p: 2 } }, 'options.top_p'],
      [{ model: 'm', messages, options: { stop: 5 } }, 'options.stop'],
      [{ model: 'm', messages, think: 'extreme' }, 'think'],
      [{ model: 'm', messages, tools: [{ type: 'function', function: {} }] }, 'tools[0].function.name'],
    ] as const) {
      assert.throws(
        () => ollamaChat.fromRequestBody(body),
        (error: unknown) => error instanceof RequestError && error.field === field && error.status === 400,
        JSON.stringify(body),
      );
    }
  });
});

describe('ollama-chat dialect', () => {
  it('detects /api/chat lines, paths and the NDJSON content type, and not /api/generate', () => {
    const chatLine = JSON.parse(fixtureText('wire-examples/ollama-chat.ndjson').split('\n')[0]!);
    const generateLine = JSON.parse(fixtureText('wire-examples/ollama-generate.ndjson').split('\n')[0]!);
    assert.equal(ollamaChat.detect({ payload: chatLine }), 1);
    assert.equal(ollamaChat.detect({ payload: generateLine }), 0);
    assert.equal(ollamaChat.detect({ path: '/proxy/api/chat' }), 0.9);
    assert.equal(ollamaChat.detect({ path: '/api/generate' }), 0);
    assert.equal(ollamaChat.detect({ contentType: 'application/x-ndjson' }), 0.5);
    assert.equal(ollamaChat.detect({ contentType: 'text/event-stream', path: '/v1/chat/completions' }), 0);
  });

  it('streams as application/x-ndjson and fails before streaming with a Go-escaped {"error"} body', () => {
    assert.deepEqual(ollamaChat.responseHeaders(), { 'content-type': 'application/x-ndjson' });
    assert.deepEqual(
      ollamaChat.errorResponse({ status: 404, message: 'model "x<y>" not found, try pulling it first' }),
      {
        status: 404,
        contentType: 'application/json; charset=utf-8',
        body: '{"error":"model \\"x\\u003cy\\u003e\\" not found, try pulling it first"}',
      },
    );
  });
});
