import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HttpError } from '../../src/client/client-errors.ts';
import { complete, stream } from '../../src/client/token-stream.ts';
import { anthropicMessages } from '../../src/dialects/anthropic-messages/index.ts';
import { RequestError } from '../../src/dialects/dialect.ts';
import { detectDialect, dialectForPath } from '../../src/dialects/registry.ts';
import { StreamDecoder } from '../../src/dialects/stream-decoder.ts';
import type { StreamEvent } from '../../src/events/stream-event.ts';
import { utf8 } from '../helpers/chunks.ts';
import { assertByteFaithful, fold, runConformance } from '../helpers/conformance.ts';
import { decodeChunks, encodeEvents } from '../helpers/decode.ts';
import { readFixture } from '../helpers/paths.ts';

const REAL = 'real-captures/llamacpp-b10108';
const A01 = `${REAL}/a01-anthropic-messages-stream.sse`;
const A03 = `${REAL}/a03-messages-stream-stop-sequence.sse`;
const A04 = `${REAL}/a04-messages-stream-system-multiturn.sse`;
const A05 = `${REAL}/a05-messages-stream-midstream-ctxfull.sse`;
const A06 = `${REAL}/a06-messages-bad-request.sse`;
const A07 = `${REAL}/a07-messages-stream-tools.sse`;
const A08 = `${REAL}/a08-messages-stream-thinking.sse`;
const A09 = `${REAL}/a09-messages-stream-eos.sse`;
const LLAMA = [A01, A03, A04, A05, A06, A07, A08, A09];

const EX = 'wire-examples/anthropic-messages';
const TEXT = `${EX}.sse`;
const THINKING_TOOL = `${EX}-thinking-tool.sse`;
const STOP_SEQUENCE = `${EX}-stop-sequence.sse`;
const MAX_TOKENS = `${EX}-max-tokens.sse`;
const ERROR = `${EX}-midstream-error.sse`;
const PAUSE = `${EX}-pause-turn.sse`;
const REFUSAL = `${EX}-refusal.sse`;
const CITATIONS = `${EX}-citations.sse`;
const GATEWAY_USAGE = `${EX}-gateway-usage.sse`;
const ANTHROPIC = [TEXT, THINKING_TOOL, STOP_SEQUENCE, MAX_TOKENS, ERROR, PAUSE, REFUSAL, GATEWAY_USAGE];
const VLLM_TEXT = 'wire-examples/vllm-anthropic-messages.sse';
const VLLM_THINKING_TOOL = 'wire-examples/vllm-anthropic-messages-thinking-tool.sse';
const VLLM_ERROR = 'wire-examples/vllm-anthropic-messages-midstream-error.sse';
const VLLM = [VLLM_TEXT, VLLM_THINKING_TOOL, VLLM_ERROR];

runConformance(anthropicMessages, {
  fixtures: [...ANTHROPIC, CITATIONS, ...VLLM, ...LLAMA],
  capabilities: () => ({
    reasoning: true,
    toolCalls: true,
    usage: true,
    finishReasons: ['stop', 'length', 'tool-calls'],
  }),
});

const decode = (fixture: string) => decodeChunks(anthropicMessages, [readFixture(fixture)]);
const text = (events: readonly StreamEvent[]) => fold(events).text;

describe('anthropic-messages encoder', () => {
  for (const fixture of LLAMA) {
    it(`writes ${fixture} byte for byte as llama-server b10108 (llamacpp flavor)`, () => {
      assertByteFaithful(anthropicMessages, fixture, 'llamacpp');
    });
  }
  for (const fixture of ANTHROPIC) {
    it(`writes ${fixture} byte for byte as Anthropic's API (anthropic flavor)`, () => {
      assertByteFaithful(anthropicMessages, fixture, 'anthropic');
    });
  }

  for (const fixture of VLLM) {
    it(`writes ${fixture} byte for byte as vLLM's converter (vllm flavor)`, () => {
      assertByteFaithful(anthropicMessages, fixture, 'vllm');
    });
  }

  it('names every event: the `event:` line equals the payload type', () => {
    for (const flavor of anthropicMessages.flavors) {
      const wire = encodeEvents(anthropicMessages, decode(THINKING_TOOL).events, { flavor });
      const frames = wire.split('\n\n').filter((f) => f !== '' && f !== 'data: [DONE]');
      assert.ok(frames.length > 8);
      for (const frame of frames) {
        const [eventLine, dataLine] = frame.split('\n');
        const type = JSON.parse(dataLine!.slice('data: '.length)).type;
        assert.equal(eventLine, `event: ${type}`, frame);
      }
    }
  });

  it('translates a llama-server stop sequence to Anthropic’s `stop_sequence`, and back to `end_turn`', () => {
    const events = decode(A03).events;
    assert.match(
      encodeEvents(anthropicMessages, events, { flavor: 'anthropic' }),
      /"delta":\{"stop_reason":"stop_sequence","stop_sequence":"Ludwig"\}/,
    );
    const fromAnthropic = decode(STOP_SEQUENCE).events;
    assert.match(
      encodeEvents(anthropicMessages, fromAnthropic, { flavor: 'llamacpp' }),
      /"delta":\{"stop_reason":"end_turn","stop_sequence":"three"\}/,
    );
  });

  it('writes input_tokens 0 first and the real count in message_delta when the start did not know it', () => {
    const events: StreamEvent[] = [
      { type: 'start', id: 'x', model: 'm' },
      { type: 'text', text: 'hi' },
      { type: 'finish', reason: 'length', raw: 'length' },
      { type: 'usage', usage: { inputTokens: 40, cachedInputTokens: 8, outputTokens: 5 } },
    ];
    for (const flavor of anthropicMessages.flavors) {
      const wire = encodeEvents(anthropicMessages, events, { flavor });
      assert.match(wire, /"usage":\{[^}]*"input_tokens":0[^}]*\}\}\}/, flavor);
      assert.match(wire, /"stop_reason":"max_tokens"/, flavor);
      const usage = fold(decodeChunks(anthropicMessages, [utf8(wire)]).events).usage;
      assert.equal(usage?.inputTokens, 40, flavor);
      // vLLM's converter writes the whole prompt as input_tokens and no cache counts.
      assert.equal(usage?.cachedInputTokens, flavor === 'vllm' ? undefined : 8, flavor);
      assert.equal(usage?.outputTokens, 5, flavor);
    }
  });

  it('writes a mid-stream error in each server’s own shape', () => {
    const events: StreamEvent[] = [{ type: 'start' }, { type: 'text', text: 'x' }];
    const ending = { kind: 'error' as const, error: { message: 'boom', status: 529 } };
    const anthropic = encodeEvents(anthropicMessages, events, { flavor: 'anthropic', ending });
    assert.ok(
      anthropic.endsWith(
        'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"boom"}}\n\n',
      ),
    );
    const llama = encodeEvents(anthropicMessages, events, { flavor: 'llamacpp', ending });
    assert.ok(llama.endsWith('event: error\ndata: {"code":529,"message":"boom","type":"server_error"}\n\n'));
    assert.doesNotMatch(anthropic + llama, /message_stop/);
  });

  it('writes only the first choice of a multi-choice upstream', () => {
    const events: StreamEvent[] = [
      { type: 'start' },
      { type: 'text', text: 'a' },
      { type: 'text', text: 'B', choice: 1 },
      { type: 'finish', reason: 'stop', raw: 'stop', choice: 1 },
      { type: 'text', text: 'b' },
      { type: 'finish', reason: 'length', raw: 'length' },
    ];
    const decoded = decodeChunks(anthropicMessages, [utf8(encodeEvents(anthropicMessages, events))]);
    assert.equal(text(decoded.events), 'ab');
    assert.equal(fold(decoded.events).finishReason, 'length');
  });

  it('sends message_start at the first flush, before any token', () => {
    const encoder = anthropicMessages.createEncoder({ flavor: 'anthropic' });
    const out: string[] = [];
    encoder.event({ type: 'start', id: 'msg_1', model: 'm' }, (data) => out.push(data));
    assert.equal(out.length, 0);
    encoder.flush?.((data) => out.push(data));
    assert.equal(out.length, 1);
    assert.equal(JSON.parse(out[0]!).type, 'message_start');
  });
});

describe('anthropic-messages decoder', () => {
  it('reads llama-server’s stream: text, max_tokens (length), usage with the cached prompt', () => {
    const decoded = decode(A01);
    assert.equal(decoded.complete, true);
    const result = fold(decoded.events);
    assert.equal(result.finishReason, 'length');
    assert.equal(result.rawFinishReason, 'max_tokens');
    assert.equal(result.usage?.inputTokens, 11);
    assert.equal(result.usage?.cachedInputTokens, 4);
    assert.equal(result.usage?.outputTokens, 16);
    assert.equal(result.id, 'chatcmpl-eroUKtEm4hm5dUGR3OTy5mbLYDmiSIG4');
  });

  it('keeps llama-server’s `end_turn` with the matched stop sequence', () => {
    const result = fold(decode(A03).events);
    assert.equal(result.finishReason, 'stop');
    assert.equal(result.rawFinishReason, 'end_turn');
    assert.equal(result.stopSequence, 'Ludwig');
  });

  it('reads interleaved blocks: the text, then the tool call parsed once, numbered 0', () => {
    const decoded = decode(A07);
    const result = fold(decoded.events);
    assert.equal(result.finishReason, 'tool-calls');
    assert.equal(result.toolCalls.length, 1);
    assert.deepEqual(result.toolCalls[0]!.input, { city: 'Paris' });
    assert.equal(result.toolCalls[0]!.name, 'get_weather');
    assert.equal(result.toolCalls[0]!.id, 'TZSmzW21DHmIvfQaVbVAKLYoOEkVXVbu');
    const deltas = decoded.events.filter((e) => e.type === 'tool-call-delta');
    assert.ok(deltas.length > 5);
    assert.ok(deltas.every((e) => e.index === 0));
    assert.ok(result.text.length > 0);
  });

  it('reads thinking as reasoning; an empty signature adds nothing, a real one rides on a reasoning event', () => {
    const llama = fold(decode(A08).events);
    assert.ok(llama.reasoning.startsWith('\nнитель'));
    assert.equal(llama.text, '');
    assert.equal(decode(A08).events.filter((e) => e.type === 'reasoning' && e.text === '').length, 0);
    const events = decode(THINKING_TOOL).events;
    const signed = events.filter((e) => e.type === 'reasoning' && e.signature !== undefined);
    assert.deepEqual(signed, [
      { type: 'reasoning', text: '', signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds' },
    ]);
    const result = fold(events);
    assert.equal(result.reasoning, 'The user wants the weather in Paris.');
    assert.equal(result.text, 'Let me check.');
    assert.deepEqual(result.toolCalls[0]!.input, { city: 'Paris' });
    const dropped = decodeChunks(anthropicMessages, [readFixture(THINKING_TOOL)]);
    assert.ok(dropped.events.some((e) => e.type === 'reasoning'));
    const decoder = anthropicMessages.createDecoder({ dropReasoning: true });
    const seen: StreamEvent[] = [];
    decoder.frame(
      {
        event: 'content_block_delta',
        data: '{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"x"}}',
      },
      (e) => seen.push(e),
    );
    assert.deepEqual(seen, []);
  });

  it('maps every stop reason, keeping the raw word', () => {
    const cases: [string, string, string][] = [
      [TEXT, 'stop', 'end_turn'],
      [STOP_SEQUENCE, 'stop', 'stop_sequence'],
      [MAX_TOKENS, 'length', 'max_tokens'],
      [THINKING_TOOL, 'tool-calls', 'tool_use'],
      [PAUSE, 'other', 'pause_turn'],
      [REFUSAL, 'content-filter', 'refusal'],
      [A09, 'stop', 'end_turn'],
    ];
    for (const [fixture, reason, raw] of cases) {
      const result = fold(decode(fixture).events);
      assert.equal(result.finishReason, reason, fixture);
      assert.equal(result.rawFinishReason, raw, fixture);
    }
    assert.equal(fold(decode(STOP_SEQUENCE).events).stopSequence, 'three');
  });

  it('takes the real input count from message_delta when message_start said 0', () => {
    const usage = fold(decode(GATEWAY_USAGE).events).usage;
    assert.equal(usage?.inputTokens, 25);
    assert.equal(usage?.outputTokens, 3);
  });

  it('keeps the cache counts', () => {
    const usage = fold(decode(TEXT).events).usage;
    assert.equal(usage?.inputTokens, 25);
    assert.equal(usage?.cachedInputTokens, 4);
    assert.equal(usage?.cacheCreationInputTokens, 0);
  });

  it('ignores pings and citations, keeping the text around them', () => {
    const decoded = decode(CITATIONS);
    assert.equal(decoded.complete, true);
    assert.equal(text(decoded.events), 'According to the document, the grass is green.');
  });

  it('reads `event: error` in Anthropic’s shape and in llama-server’s: an error, never complete', () => {
    const anthropic = decode(ERROR);
    assert.equal(anthropic.complete, false);
    assert.equal(anthropic.terminated, true);
    const error = anthropic.events.find((e) => e.type === 'error');
    assert.equal(error?.type === 'error' && error.errorType, 'overloaded_error');
    assert.equal(error?.type === 'error' && error.message, 'Overloaded');
    assert.equal(text(anthropic.events), 'Partial');
    const llama = decode(A05);
    assert.equal(llama.complete, false);
    const llamaError = llama.events.find((e) => e.type === 'error');
    assert.ok(llamaError?.type === 'error');
    assert.equal(llamaError.errorType, 'server_error');
    assert.equal(llamaError.status, 500);
    assert.match(llamaError.message, /peg-native format/);
  });

  it('is incomplete without message_stop: cut after message_delta, mid-block, or mid-frame', () => {
    const whole = new TextDecoder().decode(readFixture(A01));
    const withoutStop = whole.slice(0, whole.indexOf('event: message_stop'));
    const midBlock = whole.slice(0, whole.indexOf('event: content_block_stop'));
    const midFrame = whole.slice(0, whole.indexOf('event: message_stop') + 30);
    for (const cut of [withoutStop, midBlock, midFrame]) {
      const decoded = decodeChunks(anthropicMessages, [utf8(cut)]);
      assert.equal(decoded.complete, false);
      assert.equal(decoded.terminated, false);
      assert.ok(text(decoded.events).startsWith('Effectéb Ludwig'));
    }
    // The finish arrived, but without message_stop the answer is not known to be whole.
    assert.equal(fold(decodeChunks(anthropicMessages, [utf8(withoutStop)]).events).finishReason, 'length');
  });

  it('completes a tool call whose block never stopped when the stream ends', () => {
    const whole = new TextDecoder().decode(readFixture(THINKING_TOOL));
    const cut = whole.slice(0, whole.lastIndexOf('event: content_block_stop'));
    const decoded = decodeChunks(anthropicMessages, [utf8(cut)]);
    assert.equal(decoded.complete, false);
    assert.deepEqual(fold(decoded.events).toolCalls[0]?.input, { city: 'Paris' });
  });

  it('reads text frames alike with and without frame templates (the fast path)', () => {
    for (const fixture of [...ANTHROPIC, CITATIONS, ...VLLM, ...LLAMA]) {
      const full: StreamEvent[] = [];
      const fast: StreamEvent[] = [];
      const slow = new StreamDecoder(anthropicMessages, (e) => full.push(e), { frameTemplates: false });
      const quick = new StreamDecoder(anthropicMessages, (e) => fast.push(e));
      slow.feed(readFixture(fixture));
      slow.end();
      quick.feed(readFixture(fixture));
      quick.end();
      assert.deepEqual(fast, full, fixture);
    }
  });

  it('refuses a payload without a type', () => {
    const decoder = anthropicMessages.createDecoder();
    assert.throws(() => decoder.frame({ data: '{"index":0}' }, () => {}), /no "type"/);
    assert.throws(() => decoder.frame({ data: 'nope' }, () => {}), /not valid JSON/);
  });
});

describe('anthropic-messages detection', () => {
  it('is the dialect of /v1/messages, and of a first payload that is message_start', () => {
    assert.equal(dialectForPath('/v1/messages')?.id, 'anthropic-messages');
    assert.equal(dialectForPath('/proxy/v1/messages/')?.id, 'anthropic-messages');
    const first = JSON.parse(
      new TextDecoder().decode(readFixture(A01)).split('\n')[1]!.slice('data: '.length),
    ) as unknown;
    assert.equal(
      detectDialect({ payload: first, contentType: 'text/event-stream' })?.dialect.id,
      'anthropic-messages',
    );
    assert.equal(detectDialect({ path: '/v1/messages' })?.dialect.id, 'anthropic-messages');
  });

  it('lets stream() read llama-server’s /v1/messages bytes, and detect them on an unknown path', async () => {
    const bytes = readFixture(A07);
    const fetch = async () => new Response(bytes, { headers: { 'content-type': 'text/event-stream' } });
    const direct = await complete(
      { url: 'http://llama.test/v1/messages', body: { model: 'x', max_tokens: 8, messages: [] } },
      { fetch },
    );
    assert.equal(direct.complete, true);
    assert.equal(direct.finishReason, 'tool-calls');
    assert.deepEqual(direct.toolCalls[0]?.input, { city: 'Paris' });
    const sniffed = stream({ url: 'http://llama.test/some/proxy', body: {} }, { fetch });
    const texts: string[] = [];
    for await (const event of sniffed) if (event.type === 'text') texts.push(event.text);
    const result = await sniffed.result;
    assert.equal(result.dialect, 'anthropic-messages');
    assert.equal(result.complete, true);
    assert.equal(texts.join(''), result.text);
  });

  it('reports max_tokens as truncated and a cut stream as incomplete, through the client', async () => {
    const whole = new TextDecoder().decode(readFixture(A01));
    const url = 'http://llama.test/v1/messages';
    const body = { model: 'x', max_tokens: 16, messages: [{ role: 'user', content: 'hello' }] };
    const serve = (text: string) => async () =>
      new Response(text, { headers: { 'content-type': 'text/event-stream' } });
    const truncated = await complete({ url, body }, { fetch: serve(whole) });
    assert.equal(truncated.complete, true);
    assert.equal(truncated.truncated, true);
    const cut = await complete(
      { url, body },
      { fetch: serve(whole.slice(0, whole.indexOf('event: message_stop'))) },
    );
    assert.equal(cut.complete, false);
    assert.equal(cut.incomplete, 'connection-closed');
    assert.ok(cut.text.length > 0);
  });
});

describe('anthropic-messages errors before the stream', () => {
  it('surfaces llama-server’s 400 (a10) and Anthropic’s error body as HttpError with the server’s message', async () => {
    const url = 'http://llama.test/v1/messages';
    const body = { model: 'x', max_tokens: 16, messages: [{ role: 'user', content: 'long' }] };
    const llama = readFixture(`${REAL}/a10-messages-stream-overflow.json`);
    await assert.rejects(
      complete(
        { url, body },
        {
          fetch: async () =>
            new Response(llama, {
              status: 400,
              headers: { 'content-type': 'application/json; charset=utf-8' },
            }),
        },
      ),
      (error: unknown) =>
        error instanceof HttpError &&
        error.status === 400 &&
        /exceeds the available context size/.test(error.detail ?? ''),
    );
    const anthropic = anthropicMessages.errorResponse({ status: 529, message: 'Overloaded' });
    assert.equal(JSON.parse(anthropic.body).error.type, 'overloaded_error');
    await assert.rejects(
      complete(
        { url, body },
        {
          fetch: async () =>
            new Response(anthropic.body, { status: 529, headers: { 'content-type': anthropic.contentType } }),
        },
      ),
      (error: unknown) =>
        error instanceof HttpError && error.status === 529 && /Overloaded/.test(error.detail ?? ''),
    );
  });
});

describe('anthropic-messages requests', () => {
  it('maps system blocks, content blocks, tools, tool_choice, stops, sampling and thinking', () => {
    const request = anthropicMessages.fromRequestBody({
      model: 'claude',
      max_tokens: 256,
      system: [{ type: 'text', text: 'Be brief.' }],
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Weather in ' },
            { type: 'text', text: 'Paris?' },
          ],
        },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'hm', signature: 's' },
            { type: 'text', text: 'Checking.' },
            { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: '18°C' }] },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } },
          ],
        },
      ],
      tools: [{ name: 'get_weather', description: 'weather', input_schema: { type: 'object' } }],
      tool_choice: { type: 'any' },
      stop_sequences: ['END'],
      temperature: 0.5,
      top_p: 0.9,
      top_k: 40,
      thinking: { type: 'enabled', budget_tokens: 2048 },
      metadata: { user_id: 'u1' },
      stream: true,
    });
    assert.deepEqual(request, {
      model: 'claude',
      maxTokens: 256,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Weather in Paris?' },
        {
          role: 'assistant',
          content: 'Checking.',
          toolCalls: [{ id: 'toolu_1', name: 'get_weather', arguments: '{"city":"Paris"}' }],
        },
        { role: 'tool', toolCallId: 'toolu_1', content: '18°C' },
        // The image block beside the tool result: a user turn of its own, with the image.
        { role: 'user', content: '', images: [{ data: 'AAAA', mediaType: 'image/png' }] },
      ],
      temperature: 0.5,
      topP: 0.9,
      topK: 40,
      stop: ['END'],
      stream: true,
      tools: [{ name: 'get_weather', description: 'weather', parameters: { type: 'object' } }],
      toolChoice: 'required',
      reasoning: true,
      reasoningBudgetTokens: 2048,
      extra: { metadata: { user_id: 'u1' } },
      // Earlier thinking sent back: named, for a translation to drop.
      unmapped: [{ name: 'messages[1].content[0] (thinking)', hint: true }],
    });
    const body = anthropicMessages.toRequestBody(request);
    assert.deepEqual(body, {
      model: 'claude',
      max_tokens: 256,
      system: 'Be brief.',
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Checking.' },
            { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
          ],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '18°C' }] },
        {
          role: 'user',
          content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }],
        },
      ],
      stream: true,
      temperature: 0.5,
      top_p: 0.9,
      top_k: 40,
      stop_sequences: ['END'],
      tools: [{ name: 'get_weather', description: 'weather', input_schema: { type: 'object' } }],
      tool_choice: { type: 'any' },
      thinking: { type: 'enabled', budget_tokens: 2048 },
      metadata: { user_id: 'u1' },
    });
    // And back: the normalized request survives the round trip (but for the thinking block, not written).
    const { unmapped: _unmapped, ...written } = request;
    assert.deepEqual(anthropicMessages.fromRequestBody(body), written);
  });

  it('maps the tool choice words and reasoning asks of other dialects', () => {
    const base = { messages: [{ role: 'user' as const, content: 'hi' }], maxTokens: 9 };
    const choice = (toolChoice: string) =>
      anthropicMessages.toRequestBody({ ...base, toolChoice }).tool_choice;
    assert.deepEqual(choice('auto'), { type: 'auto' });
    assert.deepEqual(choice('none'), { type: 'none' });
    assert.deepEqual(choice('lookup'), { type: 'tool', name: 'lookup' });
    assert.deepEqual(anthropicMessages.toRequestBody({ ...base, reasoning: 'high' }).thinking, {
      type: 'enabled',
      budget_tokens: 4096,
    });
    assert.deepEqual(anthropicMessages.toRequestBody({ ...base, reasoning: false }).thinking, {
      type: 'disabled',
    });
    assert.equal(
      anthropicMessages.fromRequestBody({
        max_tokens: 5,
        messages: [{ role: 'user', content: 'x' }],
        thinking: { type: 'disabled' },
      }).reasoning,
      false,
    );
    // Consecutive tool results share one user turn.
    const turns = anthropicMessages.toRequestBody({
      messages: [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: '', toolCalls: [{ id: 'a', name: 'f', arguments: '' }] },
        { role: 'tool', toolCallId: 'a', content: '1' },
        { role: 'tool', toolCallId: 'b', content: '2' },
      ],
    }).messages as { role: string; content: unknown }[];
    assert.equal(turns.length, 3);
    assert.deepEqual(turns[1]!.content, [{ type: 'tool_use', id: 'a', name: 'f', input: {} }]);
    assert.equal((turns[2]!.content as unknown[]).length, 2);
  });

  it('writes the default cap when a request from another dialect set none (Anthropic requires one)', () => {
    const body = anthropicMessages.toRequestBody({ messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(body.max_tokens, 4096);
    assert.equal(anthropicMessages.fromRequestBody(body).maxTokens, 4096);
  });

  it('refuses a body without max_tokens, naming it, and bad fields with their path', () => {
    const bad = (body: unknown, field: string) => {
      assert.throws(
        () => anthropicMessages.fromRequestBody(body),
        (error: unknown) => error instanceof RequestError && error.field === field && error.status === 400,
      );
    };
    bad({ model: 'x', messages: [{ role: 'user', content: 'hi' }] }, 'max_tokens');
    bad({ max_tokens: 5, messages: 'nope' }, 'messages');
    bad({ max_tokens: 5, messages: [] }, 'messages');
    bad({ max_tokens: 5, messages: [{ role: 'system', content: 'x' }] }, 'messages[0].role');
    bad({ max_tokens: 5, messages: [{ role: 'user', content: [{ text: 'x' }] }] }, 'messages[0].content[0]');
    bad({ max_tokens: 5, messages: [{ role: 'user', content: 'x' }], tool_choice: 'auto' }, 'tool_choice');
    bad({ max_tokens: 5, messages: [{ role: 'user', content: 'x' }], tools: [{}] }, 'tools[0].name');
    bad({ max_tokens: 5, messages: [{ role: 'user', content: 'x' }], thinking: true }, 'thinking');
  });

  it('answers errors in Anthropic’s shape', () => {
    const error = anthropicMessages.errorResponse({ status: 400, message: 'max_tokens is required' });
    assert.equal(error.status, 400);
    assert.equal(error.contentType, 'application/json');
    assert.deepEqual(JSON.parse(error.body), {
      type: 'error',
      error: { type: 'invalid_request_error', message: 'max_tokens is required' },
    });
    assert.equal(
      JSON.parse(anthropicMessages.errorResponse({ status: 503, message: 'x' }).body).error.type,
      'api_error',
    );
    assert.equal(
      JSON.parse(anthropicMessages.errorResponse({ status: 429, message: 'x' }).body).error.type,
      'rate_limit_error',
    );
  });
});
