import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DialectError, RequestError } from '../../src/dialects/dialect.ts';
import { llamacpp } from '../../src/dialects/llamacpp/index.ts';
import type { StreamEvent } from '../../src/events/stream-event.ts';
import { utf8 } from '../helpers/chunks.ts';
import { fold, runConformance } from '../helpers/conformance.ts';
import { decodeChunks, encodeEvents } from '../helpers/decode.ts';
import { readFixture } from '../helpers/paths.ts';

const EXAMPLE = 'wire-examples/llamacpp-completion-native.sse';
const CAPTURE = 'real-captures/llamacpp-b4747/completion-native.sse';
const LEGACY = 'extra/llamacpp-completion-native-legacy.sse';
const WORD_CRLF = 'extra/llamacpp-completion-native-word-crlf.sse';
const ERROR = 'extra/llamacpp-completion-native-midstream-error.sse';
const ERROR_LEGACY = 'extra/llamacpp-completion-native-midstream-error-legacy.sse';

runConformance(llamacpp, {
  fixtures: [
    EXAMPLE,
    CAPTURE,
    LEGACY,
    WORD_CRLF,
    ERROR,
    ERROR_LEGACY,
    'real-captures/llamacpp-b10108/n01-completion-stream-limit.sse',
    'real-captures/llamacpp-b10108/n02-completion-stream-stopword.sse',
    'real-captures/llamacpp-b10108/n05-completion-stream-eos.sse',
    'real-captures/llamacpp-b10108/n06-completion-stream-nprobs.sse',
    'real-captures/llamacpp-b10108/n08-completion-stream-timings-per-token.sse',
    'real-captures/llamacpp-b10108/n10-completion-stream-multiprompt.sse',
    'real-captures/llamacpp-b10108/n16-completion-stream-npredict-huge.sse',
    'real-captures/llamacpp-b10108/n17-completion-stream-npredict-huge-ctxshift.sse',
    'real-captures/llamacpp-b10108/n22-completion-stream-response-fields.sse',
  ],
  capabilities: () => ({
    reasoning: false,
    toolCalls: false,
    usage: true,
    finishReasons: ['stop', 'length'],
  }),
});

const text = (fixture: string): string => new TextDecoder().decode(readFixture(fixture));

/** The payloads of a native stream, in order (`error:` lines included). */
function payloads(wire: string): unknown[] {
  return wire
    .split(/\r\n|\r|\n/)
    .filter((line) => line.startsWith('data:') || line.startsWith('error:'))
    .map((line) => JSON.parse(line.slice(line.indexOf(':') + 1)));
}

/** Keys in order and value types, recursively; arrays by their type only (token ids are not carried). */
function shape(value: unknown, opaque: ReadonlySet<string> = new Set()): unknown {
  if (Array.isArray(value)) return 'array';
  if (value === null) return 'null';
  if (typeof value === 'object') {
    return Object.entries(value).map(([key, item]) => [
      key,
      opaque.has(key) ? typeof item : shape(item, opaque),
    ]);
  }
  return typeof value;
}

/** Decodes a fixture and writes its events again with `flavor`, ending the way the fixture ended. */
function reencode(fixture: string, flavor: string): string {
  const decoded = decodeChunks(llamacpp, [readFixture(fixture)]);
  return encodeEvents(llamacpp, decoded.events, {
    flavor,
    ending: decoded.complete ? { kind: 'complete' } : { kind: 'cut' },
  });
}

/**
 * What our encoder does not write when it cannot know it — the prompt the server rendered, the server's
 * full sampling settings, the id of a token that was never sent as text (the end of sequence), the slot
 * that served the request (never a made-up 0) — and the framing (CR/LF, keepalives): left
 * out of both sides.
 */
function normalize(wire: string): string {
  return wire
    .replace(/\r\n?/g, '\n')
    .replace(/^:\n\n/gm, '')
    .replace(/"id_slot":(?!-1)\d+,/g, '')
    .replace(/"generation_settings":\{.*?\},(?="prompt"|"has_new_line")/g, '')
    .replace(/"prompt":"(?:[^"\\]|\\.)*",/g, '')
    .replace(/"content":"","tokens":\[[0-9,]*\],"stop":false/g, '"content":"","stop":false');
}

/** A payload without the keys our encoder leaves out when it cannot know them (see normalize). */
function known(payload: unknown): unknown {
  if (typeof payload !== 'object' || payload === null) return payload;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(payload)) {
    if (key === 'prompt' || key === 'generation_settings') continue;
    if (key === 'id_slot' && value !== -1) continue;
    if (
      key === 'tokens' &&
      (payload as { content?: unknown; stop?: unknown }).content === '' &&
      (payload as { stop?: unknown }).stop === false
    )
      continue;
    out[key] = value;
  }
  return out;
}

describe('llamacpp decoder', () => {
  it('reads the 2026 example: text, the model from the final event, eos, usage and timings', () => {
    const decoded = decodeChunks(llamacpp, [readFixture(EXAMPLE)]);
    assert.equal(decoded.complete, true);
    assert.equal(decoded.terminated, true);
    assert.equal(decoded.sawTerminator, true);
    const result = fold(decoded.events);
    assert.equal(result.text, 'Hi there');
    assert.equal(result.model, 'qwen3-8b-q4_k_m');
    assert.equal(result.finishReason, 'stop');
    assert.equal(result.rawFinishReason, 'eos');
    assert.equal(result.usage?.inputTokens, 9);
    assert.equal(result.usage?.outputTokens, 3);
    assert.equal(result.usage?.cachedInputTokens, 0);
    assert.equal(result.timings?.promptEvalMs, 35.2);
    assert.equal(result.timings?.evalMs, 60.1);
    assert.equal(result.timings?.evalTokens, 3);
    // The empty `content` of the end-of-sequence token is no text event.
    assert.deepEqual(
      decoded.events.filter((e) => e.type === 'text').map((e) => e.text),
      ['Hi', ' there'],
    );
    // Partial-event timings are not emitted: one timings event, from the final event.
    assert.equal(decoded.events.filter((e) => e.type === 'timings').length, 1);
  });

  it('reads the real b4747 capture unedited: limit -> length, the prompt size from the first event', () => {
    const decoded = decodeChunks(llamacpp, [readFixture(CAPTURE)]);
    assert.equal(decoded.complete, true);
    const result = fold(decoded.events);
    assert.equal(
      result.text,
      ' numpyitude Emmasingle ні permission squadra Pas permission squadra finns waar',
    );
    assert.equal(result.finishReason, 'length');
    assert.equal(result.truncated, true);
    assert.equal(result.rawFinishReason, 'limit');
    assert.equal(result.model, 'gpt-3.5-turbo');
    assert.deepEqual(decoded.events[1], { type: 'usage', usage: { inputTokens: 5 } });
    assert.equal(result.usage?.outputTokens, 12);
    assert.equal(result.timings?.promptEvalTokens, 4);
    assert.equal(result.timings?.evalMs, 8.427);
  });

  it('reads the legacy stopped_* flags and the stopping word', () => {
    const decoded = decodeChunks(llamacpp, [readFixture(LEGACY)]);
    assert.equal(decoded.complete, true);
    const finish = decoded.events.find((e) => e.type === 'finish');
    assert.deepEqual(finish, { type: 'finish', reason: 'stop', raw: 'stopped_word', stopSequence: '###' });
    assert.equal(fold(decoded.events).text, 'Hello world');
  });

  it('reads CRLF line ends, keepalive comments anywhere and stop_type "word"', () => {
    const decoded = decodeChunks(llamacpp, [readFixture(WORD_CRLF)]);
    assert.equal(decoded.complete, true);
    const result = fold(decoded.events);
    assert.equal(result.text, 'Paris is the capital.');
    assert.equal(result.finishReason, 'stop');
    assert.equal(result.rawFinishReason, 'word');
    assert.equal(result.stopSequence, '\n\n');
  });

  for (const [fixture, name] of [
    [ERROR, 'data: {"error":{...}}'],
    [ERROR_LEGACY, 'the legacy error: line'],
  ] as const) {
    it(`turns ${name} into an error event; the stream is over but not complete`, () => {
      const decoded = decodeChunks(llamacpp, [readFixture(fixture)]);
      assert.equal(decoded.complete, false);
      assert.equal(decoded.terminated, true);
      assert.equal(decoded.sawTerminator, false);
      const error = decoded.events.find((e) => e.type === 'error');
      assert.ok(error?.type === 'error');
      assert.equal(error.message, 'failed to decode the batch');
      assert.equal(error.errorType, 'server_error');
      assert.equal(error.status, 500);
      assert.equal(fold(decoded.events).text, 'Once');
    });
  }

  it('keeps a legacy error line that is not JSON as the message', () => {
    const decoded = decodeChunks(llamacpp, [utf8('error: slot unavailable\n\n')]);
    assert.deepEqual(
      decoded.events.map((e) => e.type === 'error' && e.message),
      ['slot unavailable'],
    );
  });

  it('is incomplete when the bytes end before the "stop": true event', () => {
    const bytes = utf8(text(EXAMPLE).split('\n\n').slice(0, 2).join('\n\n'));
    const decoded = decodeChunks(llamacpp, [bytes]);
    assert.equal(decoded.complete, false);
    assert.equal(decoded.terminated, false);
    assert.equal(fold(decoded.events).text, 'Hi');
  });

  const final = (fields: Record<string, unknown>) =>
    utf8(
      `data: ${JSON.stringify({ index: 0, content: '', tokens: [], id_slot: 0, stop: true, ...fields })}\n\n`,
    );
  const finishOf = (fields: Record<string, unknown>) =>
    decodeChunks(llamacpp, [final(fields)]).events.find((e) => e.type === 'finish');

  it('maps every stop_type and every legacy flag combination', () => {
    assert.deepEqual(finishOf({ stop_type: 'eos', stopping_word: '' }), {
      type: 'finish',
      reason: 'stop',
      raw: 'eos',
    });
    assert.deepEqual(finishOf({ stop_type: 'word', stopping_word: '</s>' }), {
      type: 'finish',
      reason: 'stop',
      raw: 'word',
      stopSequence: '</s>',
    });
    // `truncated`: the server cut the prompt to fit its context (b10108 n13/n14 logic), said on the finish.
    assert.deepEqual(finishOf({ stop_type: 'limit', truncated: true }), {
      type: 'finish',
      reason: 'length',
      inputTruncated: true,
      raw: 'limit',
    });
    assert.deepEqual(finishOf({ stop_type: 'none' }), { type: 'finish', reason: 'error', raw: 'none' });
    const flags = (eos: boolean, word: boolean, limit: boolean) => ({
      stopped_eos: eos,
      stopped_word: word,
      stopped_limit: limit,
      stopping_word: word ? 'END' : '',
    });
    assert.deepEqual(finishOf(flags(true, false, false)), {
      type: 'finish',
      reason: 'stop',
      raw: 'stopped_eos',
    });
    assert.deepEqual(finishOf(flags(false, true, false)), {
      type: 'finish',
      reason: 'stop',
      raw: 'stopped_word',
      stopSequence: 'END',
    });
    assert.deepEqual(finishOf(flags(false, false, true)), {
      type: 'finish',
      reason: 'length',
      raw: 'stopped_limit',
    });
    // End of sequence on the token that also used up the budget: the model finished.
    assert.deepEqual(finishOf(flags(true, false, true)), {
      type: 'finish',
      reason: 'stop',
      raw: 'stopped_eos',
    });
    assert.deepEqual(finishOf(flags(false, false, false)), { type: 'finish', reason: 'error', raw: null });
    assert.deepEqual(finishOf({}), { type: 'finish', reason: 'other', raw: null });
  });

  it('emits only the new part when a final event repeats the whole text', () => {
    const bytes = utf8(
      'data: {"index":0,"content":"Hel","stop":false,"id_slot":-1}\n\n' +
        'data: {"index":0,"content":"Hello","id_slot":0,"stop":true,"stop_type":"eos"}\n\n',
    );
    const events = decodeChunks(llamacpp, [bytes]).events;
    assert.deepEqual(
      events.filter((e) => e.type === 'text').map((e) => e.text),
      ['Hel', 'lo'],
    );
  });

  it('reads every prompt of a multi-prompt stream as a choice, complete when each has stopped', () => {
    const lines = [
      'data: null\n\n',
      'data: {"index":1,"content":"B","stop":false,"id_slot":-1,"tokens_predicted":1,"tokens_evaluated":9}\n\n',
      'data: {"index":0,"content":"A","stop":false,"id_slot":-1,"tokens_predicted":1,"tokens_evaluated":5}\n\n',
      'data: {"index":1,"content":"","id_slot":1,"stop":true,"stop_type":"limit","tokens_predicted":1,"tokens_evaluated":9}\n\n',
      'data: {"index":0,"content":"","id_slot":0,"stop":true,"stop_type":"eos","tokens_predicted":1,"tokens_evaluated":5}\n\n',
    ];
    const decoded = decodeChunks(llamacpp, [utf8(lines.join(''))]);
    assert.equal(decoded.complete, true);
    const result = fold(decoded.events);
    assert.equal(result.text, 'A');
    assert.equal(result.finishReason, 'stop');
    assert.deepEqual(
      result.choices?.map((c) => [c.index, c.text, c.finishReason]),
      [
        [0, 'A', 'stop'],
        [1, 'B', 'length'],
      ],
    );
    // Both prompts' counts.
    assert.equal(result.usage?.outputTokens, 2);
    assert.equal(result.usage?.inputTokens, 14);
    // Prompt 0 stopped, prompt 1 not yet: not complete.
    const early = decodeChunks(llamacpp, [utf8(lines[0]! + lines[1]! + lines[2]! + lines[4]!)]);
    assert.equal(early.complete, false);
    assert.equal(early.terminated, false);
  });

  it('reads a response_fields projection: a final event without "stop" is known by its stop_type', () => {
    const decoded = decodeChunks(llamacpp, [
      utf8(
        'data: {"content":" Work"}\n\ndata: {"content":" Pr"}\n\ndata: {"content":"","stop_type":"limit"}\n\n',
      ),
    ]);
    assert.equal(decoded.complete, true);
    const result = fold(decoded.events);
    assert.equal(result.text, ' Work Pr');
    assert.equal(result.finishReason, 'length');
  });

  it('carries token ids and completion_probabilities (n_probs) on the text events', () => {
    const decoded = decodeChunks(llamacpp, [
      readFixture('real-captures/llamacpp-b10108/n06-completion-stream-nprobs.sse'),
    ]);
    const texts = decoded.events.filter((e) => e.type === 'text');
    assert.ok(texts.length > 0);
    for (const event of texts) {
      assert.ok(event.type === 'text');
      assert.equal(event.tokenIds?.length, 1);
      assert.equal(event.logprobs?.length, 1);
      assert.equal(event.logprobs?.[0]?.token, event.text);
      assert.equal(event.logprobs?.[0]?.top?.length, 2);
    }
  });

  it('refuses a payload that is not a native event (an OpenAI chunk) as malformed', () => {
    assert.throws(
      () => decodeChunks(llamacpp, [utf8('data: {"choices":[{"index":0,"delta":{"content":"x"}}]}\n\n')]),
      (error: unknown) => error instanceof DialectError && error.code === 'malformed-payload',
    );
  });
});

describe('llamacpp encoder', () => {
  it('writes the 2026 example byte for byte, but for the token ids and the prompt', () => {
    assert.equal(normalize(reencode(EXAMPLE, 'modern')), normalize(text(EXAMPLE)));
  });

  it('writes the real b4747 capture byte for byte, but for token ids, prompt and sampling settings', () => {
    assert.equal(normalize(reencode(CAPTURE, 'modern')), normalize(text(CAPTURE)));
  });

  it('writes the legacy stream byte for byte, but for the prompt and sampling settings', () => {
    assert.equal(normalize(reencode(LEGACY, 'legacy')), normalize(text(LEGACY)));
  });

  it('writes a word stop with its stop-token event and timings, but for CRLF, keepalives and ids', () => {
    assert.equal(normalize(reencode(WORD_CRLF, 'modern')), normalize(text(WORD_CRLF)));
  });

  it('writes both mid-stream error shapes byte for byte (modern: but for token ids)', () => {
    assert.equal(normalize(reencode(ERROR, 'modern')), normalize(text(ERROR)));
    assert.equal(normalize(reencode(ERROR_LEGACY, 'legacy')), normalize(text(ERROR_LEGACY)));
  });

  for (const [fixture, flavor] of [
    [EXAMPLE, 'modern'],
    [CAPTURE, 'modern'],
    [WORD_CRLF, 'modern'],
    [LEGACY, 'legacy'],
  ] as const) {
    it(`writes ${fixture}'s events with the same keys, key order and value types (${flavor})`, () => {
      const ours = payloads(reencode(fixture, flavor)).map((p) => shape(known(p)));
      const theirs = payloads(text(fixture)).map((p) => shape(known(p)));
      assert.deepEqual(ours, theirs);
    });
  }

  it('invents nothing: generation_settings holds only what the request said, no prompt, no made-up token ids', () => {
    const events: StreamEvent[] = [
      { type: 'start', model: 'm' },
      { type: 'text', text: 'a' },
      { type: 'finish', reason: 'length', raw: 'length' },
    ];
    const final = (options: Parameters<typeof encodeEvents>[2]) =>
      (payloads(encodeEvents(llamacpp, events, options)) as Record<string, unknown>[]).at(-1)!;
    const asked = final({ sampling: { seed: 1, temperature: 0, maxTokens: 8 } });
    assert.deepEqual(asked.generation_settings, { seed: 1, temperature: 0, n_predict: 8, stream: true });
    assert.equal('prompt' in asked, false);
    assert.deepEqual(final({}).generation_settings, { stream: true });
    const partial = (payloads(encodeEvents(llamacpp, events)) as Record<string, unknown>[])[0]!;
    assert.equal('tokens' in partial, false, 'no token ids were known');
    const withIds = payloads(
      encodeEvents(llamacpp, [events[0]!, { type: 'text', text: 'a', tokenIds: [42] }, events[2]!]),
    ) as Record<string, unknown>[];
    assert.deepEqual(withIds[0]!.tokens, [42]);
  });

  it('translates another server\'s finish: a stop string -> "word", a length cap -> "limit" with no stop-token event', () => {
    const events = (finish: StreamEvent): StreamEvent[] => [
      { type: 'start', id: 'chatcmpl-1', model: 'm' },
      { type: 'text', text: 'a\nb' },
      finish,
      { type: 'usage', usage: { inputTokens: 7, outputTokens: 4, totalTokens: 11 } },
    ];
    const word = payloads(
      encodeEvents(llamacpp, events({ type: 'finish', reason: 'stop', raw: 'stop', stopSequence: '###' })),
    ) as Record<string, unknown>[];
    assert.equal(word.length, 3);
    assert.equal(word[1]?.content, '');
    const last = word[2]!;
    assert.equal(last.stop_type, 'word');
    assert.equal(last.stopping_word, '###');
    assert.equal(last.has_new_line, true);
    assert.equal(last.tokens_predicted, 4);
    assert.equal(last.tokens_evaluated, 7);
    assert.equal(last.tokens_cached, 10);
    assert.equal(last.model, 'm');
    // No timings event: no invented zero timings.
    assert.equal('timings' in last, false);
    const limit = payloads(
      encodeEvents(llamacpp, events({ type: 'finish', reason: 'length', raw: 'length' })),
    );
    assert.equal(limit.length, 2);
    assert.equal((limit[1] as Record<string, unknown>).stop_type, 'limit');
    const legacy = payloads(
      encodeEvents(llamacpp, events({ type: 'finish', reason: 'length', raw: 'length' }), {
        flavor: 'legacy',
      }),
    ) as Record<string, unknown>[];
    assert.deepEqual(
      [legacy[1]?.stopped_eos, legacy[1]?.stopped_word, legacy[1]?.stopped_limit],
      [false, false, true],
    );
  });

  it('writes whole doubles the way nlohmann does (480.0) and built timings without cache_n when legacy', () => {
    const wire = encodeEvents(
      llamacpp,
      [
        { type: 'text', text: 'x' },
        { type: 'finish', reason: 'stop', raw: 'stop' },
        { type: 'timings', timings: { promptEvalMs: 10, promptEvalTokens: 4, evalMs: 20, evalTokens: 2 } },
      ],
      { flavor: 'legacy' },
    );
    assert.match(
      wire,
      /"timings":\{"prompt_n":4,"prompt_ms":10\.0,"prompt_per_token_ms":2\.5,"prompt_per_second":400\.0,"predicted_n":2,"predicted_ms":20\.0,"predicted_per_token_ms":10\.0,"predicted_per_second":100\.0\},"index":0\}\n\n$/,
    );
  });

  it('writes the error shapes: modern data: {"error":...} then nothing; legacy the error: line', () => {
    const error = { message: 'the request exceeds the available context size', status: 400 };
    assert.equal(
      encodeEvents(llamacpp, [], { ending: { kind: 'error', error } }),
      'data: {"error":{"code":400,"message":"the request exceeds the available context size","type":"invalid_request_error"}}\n\n',
    );
    assert.equal(
      encodeEvents(llamacpp, [], { flavor: 'legacy', ending: { kind: 'error', error: { message: 'boom' } } }),
      'error: {"code":500,"message":"boom","type":"server_error"}\n\n',
    );
  });
});

describe('llamacpp dialect', () => {
  it('maps a native body to the normalized request and back', () => {
    const request = llamacpp.fromRequestBody({
      prompt: 'Once upon a time',
      n_predict: 64,
      temperature: 0.7,
      top_k: 40,
      top_p: 0.9,
      seed: 42,
      stop: ['\n\n'],
      stream: true,
      cache_prompt: true,
      min_p: 0.05,
    });
    assert.deepEqual(request, {
      prompt: 'Once upon a time',
      maxTokens: 64,
      temperature: 0.7,
      topK: 40,
      topP: 0.9,
      seed: 42,
      stop: ['\n\n'],
      minP: 0.05,
      stream: true,
      extra: { cache_prompt: true },
    });
    assert.deepEqual(llamacpp.toRequestBody(request), {
      prompt: 'Once upon a time',
      stream: true,
      n_predict: 64,
      temperature: 0.7,
      top_k: 40,
      top_p: 0.9,
      seed: 42,
      stop: ['\n\n'],
      cache_prompt: true,
      min_p: 0.05,
    });
  });

  it('takes max_tokens as n_predict, keeps n_predict -1 and seed -1 for the server, and a bare stop string', () => {
    assert.equal(llamacpp.fromRequestBody({ prompt: 'x', max_tokens: 5 }).maxTokens, 5);
    const unlimited = llamacpp.fromRequestBody({ prompt: 'x', n_predict: -1, seed: -1, stop: 'END' });
    assert.equal(unlimited.maxTokens, undefined);
    assert.equal(unlimited.seed, undefined);
    assert.deepEqual(unlimited.stop, ['END']);
    assert.deepEqual(unlimited.extra, { n_predict: -1, seed: -1 });
    assert.equal(llamacpp.toRequestBody(unlimited).n_predict, -1);
  });

  it('renders chat turns as the prompt when the request came from a chat dialect', () => {
    const body = llamacpp.toRequestBody({
      model: 'qwen',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
      ],
      maxTokens: 8,
    });
    assert.equal(body.prompt, 'system: Be brief.\nuser: Hi\nassistant:');
    assert.equal(body.n_predict, 8);
    assert.equal(body.stream, true);
    assert.equal(body.model, 'qwen');
  });

  it('names the bad field in a RequestError', () => {
    for (const [body, field] of [
      [{}, 'prompt'],
      [{ prompt: 5 }, 'prompt'],
      [{ prompt: 'x', n_predict: 1.5 }, 'n_predict'],
      [{ prompt: 'x', max_tokens: -3 }, 'max_tokens'],
      [{ prompt: 'x', temperature: 'hot' }, 'temperature'],
      [{ prompt: 'x', top_p: 2 }, 'top_p'],
      [{ prompt: 'x', stop: 5 }, 'stop'],
      [{ prompt: 'x', stream: 'yes' }, 'stream'],
    ] as const) {
      assert.throws(
        () => llamacpp.fromRequestBody(body),
        (error: unknown) => error instanceof RequestError && error.field === field,
        JSON.stringify(body),
      );
    }
  });

  it('answers errors before streaming as llama-server does', () => {
    assert.deepEqual(llamacpp.errorResponse({ status: 400, message: 'prompt is required' }), {
      status: 400,
      contentType: 'application/json; charset=utf-8',
      body: '{"error":{"code":400,"message":"prompt is required","type":"invalid_request_error"}}',
    });
    assert.match(
      llamacpp.errorResponse({ status: 503, message: 'Loading model' }).body,
      /"unavailable_error"/,
    );
    assert.match(llamacpp.errorResponse({ status: 500, message: 'x' }).body, /"server_error"/);
  });

  it("sends the server's stream headers", () => {
    assert.deepEqual(llamacpp.responseHeaders(), {
      'content-type': 'text/event-stream',
      server: 'llama.cpp',
      'x-accel-buffering': 'no',
    });
    assert.equal(llamacpp.responseHeaders('legacy')['x-accel-buffering'], undefined);
  });

  it("detects its payloads and paths, and not the other dialects'", () => {
    const [first] = payloads(text(EXAMPLE));
    const [legacyFirst] = payloads(text(LEGACY));
    assert.equal(llamacpp.detect({ payload: first }), 1);
    assert.equal(llamacpp.detect({ payload: legacyFirst }), 1);
    assert.equal(llamacpp.detect({ payload: { stop: true, stop_type: 'eos' } }), 0.9);
    assert.ok(llamacpp.detect({ path: '/completion' }) >= 0.8);
    assert.ok(llamacpp.detect({ path: '/completions' }) > 0);
    assert.equal(llamacpp.detect({ path: '/v1/completions' }), 0);
    assert.equal(llamacpp.detect({ path: '/v1/chat/completions' }), 0);
    assert.equal(llamacpp.detect({ payload: { object: 'chat.completion.chunk', choices: [] } }), 0);
    assert.equal(
      llamacpp.detect({ payload: { index: 1, token: { id: 1, text: 'x' }, generated_text: null } }),
      0,
    );
  });
});
