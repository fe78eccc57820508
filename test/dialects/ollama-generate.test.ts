import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DialectError, RequestError } from '../../src/dialects/dialect.ts';
import { ollamaCreatedAt } from '../../src/dialects/ollama-family/ollama-created-at.ts';
import { ollamaGenerate } from '../../src/dialects/ollama-generate/index.ts';
import type { StreamEvent } from '../../src/events/stream-event.ts';
import { utf8 } from '../helpers/chunks.ts';
import { assertByteFaithful, fold, runConformance } from '../helpers/conformance.ts';
import { decodeChunks, encodeEvents } from '../helpers/decode.ts';
import { readFixture } from '../helpers/paths.ts';

runConformance(ollamaGenerate, {
  fixtures: [
    'wire-examples/ollama-generate.ndjson',
    'extra/ollama-generate-thinking-length.ndjson',
    'extra/ollama-generate-toolcall.ndjson',
    'extra/ollama-generate-no-final-newline.ndjson',
  ],
  capabilities: () => ({
    reasoning: true,
    // `api.GenerateResponse` has a top-level `tool_calls` (wire-formats.md §6.1), so calls survive.
    toolCalls: true,
    usage: true,
    finishReasons: ['stop', 'length', 'tool-calls'],
  }),
});

function fixtureText(fixture: string): string {
  return new TextDecoder().decode(readFixture(fixture));
}

function decodeText(text: string) {
  return decodeChunks(ollamaGenerate, [utf8(text)]);
}

const FIXED_MS = Date.UTC(2026, 0, 1, 12, 34, 56, 789);
/** Every `created_at` of a fixture replaced by the time the mocked clock gives the encoder. */
const sameClock = (text: string) =>
  text.replace(/"created_at":"[^"]*"/g, `"created_at":"${ollamaCreatedAt(FIXED_MS)}"`);

describe('ollama-generate encoder', () => {
  // `created_at` is wall-clock time per line with no home in the events: compared under one mocked clock.
  for (const fixture of [
    'wire-examples/ollama-generate.ndjson',
    'extra/ollama-generate-thinking-length.ndjson',
    'extra/ollama-generate-toolcall.ndjson',
  ]) {
    it(`writes ${fixture} byte for byte (created_at from the clock)`, (t) => {
      t.mock.method(Date, 'now', () => FIXED_MS);
      assertByteFaithful(ollamaGenerate, fixture, 'ollama', { strip: sameClock });
    });
  }

  it('reproduces a stream with millisecond timestamps exactly, created_at included', () => {
    const base = Date.UTC(2026, 0, 1);
    const times = [base + 100, base + 200, base + 300];
    const fixture = 'extra/ollama-generate-thinking-length.ndjson';
    const decoded = decodeChunks(ollamaGenerate, [readFixture(fixture)]);
    const wire = encodeEvents(ollamaGenerate, decoded.events, { now: () => times.shift() ?? 0 });
    assert.equal(wire, fixtureText(fixture));
  });

  it('writes context on the done line only when the usage came from an Ollama that sent one', () => {
    const events: StreamEvent[] = [
      { type: 'start', model: 'llama3.2' },
      { type: 'text', text: 'x' },
      { type: 'finish', reason: 'stop', raw: 'stop' },
      { type: 'usage', usage: { inputTokens: 4, outputTokens: 1, totalTokens: 5 } },
    ];
    const now = () => Date.UTC(2026, 0, 1);
    assert.equal(
      encodeEvents(ollamaGenerate, events, { now }),
      '{"model":"llama3.2","created_at":"2026-01-01T00:00:00Z","response":"x","done":false}\n' +
        '{"model":"llama3.2","created_at":"2026-01-01T00:00:00Z","response":"","done":true,"done_reason":"stop","prompt_eval_count":4,"eval_count":1}\n',
    );
    const withContext = events.map((e) =>
      e.type === 'usage' ? { ...e, usage: { ...e.usage, raw: { context: [1, 2, 3] } } } : e,
    );
    assert.match(
      encodeEvents(ollamaGenerate, withContext, { now }),
      /"done":true,"done_reason":"stop","context":\[1,2,3\],"prompt_eval_count":4,"eval_count":1\}\n$/,
    );
  });

  it('writes reasoning as thinking with an empty response, and an error line with nothing after it', () => {
    const wire = encodeEvents(
      ollamaGenerate,
      [
        { type: 'start', model: 'qwen3' },
        { type: 'reasoning', text: 'a<b' },
        { type: 'error', message: 'model runner has unexpectedly stopped' },
        { type: 'text', text: 'late' },
      ],
      { now: () => Date.UTC(2026, 0, 1), ending: { kind: 'complete' } },
    );
    assert.equal(
      wire,
      '{"model":"qwen3","created_at":"2026-01-01T00:00:00Z","response":"","thinking":"a\\u003cb","done":false}\n' +
        '{"error":"model runner has unexpectedly stopped"}\n',
    );
  });
});

describe('ollama-generate decoder', () => {
  it('reads response text, Go-escaped, and keeps the context token array in usage.raw', () => {
    const decoded = decodeChunks(ollamaGenerate, [readFixture('wire-examples/ollama-generate.ndjson')]);
    const result = fold(decoded.events);
    assert.equal(result.text, '2 < 3 & so on');
    assert.equal(decoded.complete, true);
    assert.equal(decoded.sawTerminator, false);
    assert.deepEqual(result.usage, {
      inputTokens: 9,
      outputTokens: 3,
      raw: { prompt_eval_count: 9, eval_count: 3, context: [128006, 882, 128007, 271, 17, 366, 220, 18] },
    });
    assert.equal(result.timings?.totalMs, 812.345678);
  });

  it('reads thinking as reasoning and done_reason length as a truncated answer', () => {
    const result = fold(
      decodeChunks(ollamaGenerate, [readFixture('extra/ollama-generate-thinking-length.ndjson')]).events,
    );
    assert.equal(result.reasoning, 'Count: 1 < 2.');
    assert.equal(result.text, 'One, two');
    assert.equal(result.finishReason, 'length');
    assert.equal(result.truncated, true);
  });

  it('reads top-level tool_calls as whole calls, and the stop after them as tool-calls', () => {
    const result = fold(
      decodeChunks(ollamaGenerate, [readFixture('extra/ollama-generate-toolcall.ndjson')]).events,
    );
    assert.deepEqual(
      result.toolCalls.map((c) => [c.index, c.id, c.name, c.input]),
      [[0, 'call_a1b2c3d4', 'lookup', { q: 'R&D' }]],
    );
    assert.equal(result.finishReason, 'tool-calls');
    assert.equal(result.rawFinishReason, 'stop');
  });

  it('reads a last line without its newline, and an error line, as Ollama ends a failed stream', () => {
    const plain = decodeChunks(ollamaGenerate, [readFixture('wire-examples/ollama-generate.ndjson')]);
    assert.deepEqual(
      decodeChunks(ollamaGenerate, [readFixture('extra/ollama-generate-no-final-newline.ndjson')]),
      plain,
    );
    const first = fixtureText('wire-examples/ollama-generate.ndjson').split('\n')[0];
    const failed = decodeText(
      `${first}\n{"error":"an error was encountered while running the model: \\u003cEOF\\u003e"}\n`,
    );
    assert.deepEqual([failed.complete, failed.terminated], [false, false]);
    const error = failed.events.at(-1);
    assert.equal(
      error?.type === 'error' && error.message,
      'an error was encountered while running the model: <EOF>',
    );
  });

  it('reads an old done line without response or done_reason', () => {
    const decoded = decodeText(
      '{"model":"llama2","created_at":"2023-08-04T19:22:45.499127Z","response":"Hi","done":false}\n' +
        '{"model":"llama2","created_at":"2023-08-04T19:22:45.5Z","done":true,"eval_count":1}\n',
    );
    assert.equal(decoded.complete, true);
    assert.deepEqual(decoded.events.slice(-2), [
      { type: 'finish', reason: 'stop', raw: null },
      { type: 'usage', usage: { outputTokens: 1, raw: { eval_count: 1 } } },
    ]);
  });

  it('throws a DialectError for a line that is not JSON or is an /api/chat line', () => {
    for (const data of [
      '{"model":"m","response":',
      '{"model":"m","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":"x"},"done":false}',
      '{"id":"cmpl-1","choices":[]}',
    ]) {
      assert.throws(
        () => ollamaGenerate.createDecoder().frame({ data }, () => {}),
        (error: unknown) => error instanceof DialectError && error.dialect === 'ollama-generate',
        data,
      );
    }
  });
});

describe('ollama-generate request mapping', () => {
  it('maps prompt, system, raw and format, keeping context and the other fields in extra', () => {
    const request = ollamaGenerate.fromRequestBody({
      model: 'llama3.2',
      prompt: 'Why is the sky blue?',
      system: 'Answer in one line.',
      raw: false,
      context: [1, 2, 3],
      format: { type: 'object' },
      options: { num_predict: 100, top_k: 20, stop: ['\n\n'], mirostat: 2 },
      think: true,
    });
    assert.deepEqual(request, {
      model: 'llama3.2',
      includeUsage: true,
      prompt: 'Why is the sky blue?',
      messages: [
        { role: 'system', content: 'Answer in one line.' },
        { role: 'user', content: 'Why is the sky blue?' },
      ],
      raw: false,
      responseFormat: { type: 'json_schema', schema: { type: 'object' } },
      reasoning: true,
      maxTokens: 100,
      topK: 20,
      stop: ['\n\n'],
      extra: { context: [1, 2, 3], options: { mirostat: 2 } },
    });
    assert.deepEqual(ollamaGenerate.toRequestBody(request), {
      model: 'llama3.2',
      prompt: 'Why is the sky blue?',
      system: 'Answer in one line.',
      stream: true,
      think: true,
      options: { mirostat: 2, num_predict: 100, top_k: 20, stop: ['\n\n'] },
      // raw: false is Ollama's default: written only when true.
      context: [1, 2, 3],
      format: { type: 'object' },
    });
  });

  it('writes chat-shaped requests as a prompt: system turns to system, one user turn as the prompt', () => {
    assert.deepEqual(
      ollamaGenerate.toRequestBody({
        model: 'm',
        messages: [
          { role: 'system', content: 'brief' },
          { role: 'user', content: 'hi' },
        ],
        tools: [{ name: 'dropped' }],
      }),
      { model: 'm', prompt: 'hi', system: 'brief', stream: true },
    );
    assert.deepEqual(
      ollamaGenerate.toRequestBody({
        model: 'm',
        messages: [
          { role: 'user', content: 'hi' },
          { role: 'assistant', content: 'hello' },
          { role: 'user', content: 'again' },
        ],
      }),
      { model: 'm', prompt: 'user: hi\nassistant: hello\nuser: again\nassistant:', stream: true },
    );
  });

  it('names the bad field in a RequestError', () => {
    for (const [body, field] of [
      [{ prompt: 'x' }, 'model'],
      [{ model: 'm', prompt: 1 }, 'prompt'],
      [{ model: 'm', system: ['x'] }, 'system'],
      [{ model: 'm', prompt: 'x', options: { seed: 'x' } }, 'options.seed'],
      [{ model: 'm', prompt: 'x', options: { top_k: 1.5 } }, 'options.top_k'],
      [{ model: 'm', prompt: 'x', think: 1 }, 'think'],
    ] as const) {
      assert.throws(
        () => ollamaGenerate.fromRequestBody(body),
        (error: unknown) => error instanceof RequestError && error.field === field,
        JSON.stringify(body),
      );
    }
  });
});

describe('ollama-generate dialect', () => {
  it('detects /api/generate lines and paths, not /api/chat', () => {
    const generateLine = JSON.parse(fixtureText('wire-examples/ollama-generate.ndjson').split('\n')[0]!);
    const chatLine = JSON.parse(fixtureText('wire-examples/ollama-chat.ndjson').split('\n')[0]!);
    assert.equal(ollamaGenerate.detect({ payload: generateLine }), 1);
    assert.equal(ollamaGenerate.detect({ payload: chatLine }), 0);
    assert.equal(ollamaGenerate.detect({ path: '/api/generate/' }), 0.9);
    assert.equal(ollamaGenerate.detect({ path: '/api/chat' }), 0);
    assert.equal(ollamaGenerate.detect({ contentType: 'application/x-ndjson; charset=utf-8' }), 0.5);
    assert.equal(ollamaGenerate.detect({ contentType: 'text/event-stream' }), 0);
  });

  it('streams as application/x-ndjson and fails before streaming with {"error"}', () => {
    assert.deepEqual(ollamaGenerate.responseHeaders(), { 'content-type': 'application/x-ndjson' });
    assert.equal(
      ollamaGenerate.errorResponse({ status: 400, message: 'model is required' }).body,
      '{"error":"model is required"}',
    );
  });
});
