import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DialectId } from '../../src/dialects/dialect.ts';
import { getDialect } from '../../src/dialects/registry.ts';
import type { StreamEvent, TokenLogprob } from '../../src/events/stream-event.ts';
import { decodeChunks, encodeEvents } from '../helpers/decode.ts';

/**
 * A re-encoded stream writes each event's `choice` and a text event's `logprobs` in
 * the client dialect's shape, so decode(encode(events)) gives them back. What a shape has no place for
 * is compared without it (the legacy completions object has no bytes or ids).
 */

function token(text: string, logprob: number, id: number, alternative: string): TokenLogprob {
  const bytes = [...new TextEncoder().encode(text)];
  return {
    token: text,
    logprob,
    bytes,
    id,
    top: [
      { token: text, logprob, bytes, id },
      {
        token: alternative,
        logprob: logprob - 1,
        bytes: [...new TextEncoder().encode(alternative)],
        id: id + 1,
      },
    ],
  };
}

const LOGPROBS: StreamEvent[] = [
  { type: 'start', id: 'x-1', model: 'm', created: 1767225600 },
  { type: 'text', text: 'Hi', logprobs: [token('Hi', -0.5, 10, 'Hey')] },
  { type: 'text', text: ' there', logprobs: [token(' there', -1.25, 20, ' you')] },
  { type: 'finish', reason: 'length', raw: 'length' },
  { type: 'usage', usage: { inputTokens: 3, outputTokens: 2 } },
];

const CHOICES: StreamEvent[] = [
  { type: 'start', id: 'x-1', model: 'm', created: 1767225600 },
  { type: 'text', text: 'Hi', logprobs: [token('Hi', -0.5, 10, 'Hey')] },
  { type: 'text', text: 'Yo', choice: 1, logprobs: [token('Yo', -0.25, 30, 'Oh')] },
  { type: 'text', text: ' there', logprobs: [token(' there', -1.25, 20, ' you')] },
  { type: 'text', text: ' man', choice: 1, logprobs: [token(' man', -2, 40, ' dude')] },
  { type: 'finish', reason: 'length', raw: 'length' },
  { type: 'finish', reason: 'length', raw: 'length', choice: 1 },
  { type: 'usage', usage: { inputTokens: 3, outputTokens: 4 } },
];

interface Shape {
  bytes: boolean;
  ids: boolean;
}

/** The events' choices, texts, logprobs and finishes, as far as the shape can carry them. */
function project(events: readonly StreamEvent[], shape: Shape): unknown[] {
  const out: unknown[] = [];
  const strip = (entry: {
    token: string;
    logprob: number;
    bytes?: number[] | undefined;
    id?: number | undefined;
  }) => {
    const kept: Record<string, unknown> = { token: entry.token, logprob: entry.logprob };
    if (shape.bytes) kept.bytes = entry.bytes;
    if (shape.ids) kept.id = entry.id;
    return kept;
  };
  for (const event of events) {
    if (event.type === 'text') {
      out.push({
        type: 'text',
        choice: event.choice ?? 0,
        text: event.text,
        logprobs: event.logprobs?.map((entry) => ({ ...strip(entry), top: (entry.top ?? []).map(strip) })),
      });
    } else if (event.type === 'finish') {
      out.push({ type: 'finish', choice: event.choice ?? 0, reason: event.reason });
    }
  }
  return out;
}

/** Per choice, in order: the order between choices is the stream's, not part of the contract. */
function byChoice(projected: unknown[]): unknown[][] {
  const choices: unknown[][] = [];
  for (const item of projected as { choice: number }[]) {
    const list = choices[item.choice] ?? [];
    choices[item.choice] = list;
    list.push(item);
  }
  return choices;
}

function roundTrip(id: DialectId, flavor: string, events: StreamEvent[], shape: Shape): void {
  const dialect = getDialect(id);
  const wire = encodeEvents(dialect, events, { flavor, includeUsage: true });
  const decoded = decodeChunks(dialect, [new TextEncoder().encode(wire)]);
  assert.ok(decoded.complete, `${id}/${flavor}: incomplete\n${wire}`);
  assert.deepEqual(byChoice(project(decoded.events, shape)), byChoice(project(events, shape)), wire);
}

describe('choices and logprobs survive encode -> decode', () => {
  for (const flavor of ['vllm', 'llamacpp', 'llamacpp-legacy']) {
    it(`openai-chat (${flavor}): logprobs on every content chunk, two choices with their own index`, () => {
      const shape = { bytes: true, ids: flavor.startsWith('llamacpp') };
      roundTrip('openai-chat', flavor, LOGPROBS, shape);
      roundTrip('openai-chat', flavor, CHOICES, shape);
    });
  }
  for (const flavor of ['tgi', 'ollama', 'ollama-legacy']) {
    it(`openai-chat (${flavor}): two choices with their own index and logprobs`, () => {
      roundTrip('openai-chat', flavor, CHOICES, { bytes: true, ids: false });
    });
  }
  for (const flavor of ['vllm', 'tgi']) {
    it(`openai-completions (${flavor}): the legacy logprobs object, two choices with their own index`, () => {
      roundTrip('openai-completions', flavor, LOGPROBS, { bytes: false, ids: false });
      roundTrip('openai-completions', flavor, CHOICES, { bytes: false, ids: false });
    });
  }
  for (const flavor of ['llamacpp', 'llamacpp-legacy']) {
    it(`openai-completions (${flavor}): llama-server's logprobs.content, two choices with their own index`, () => {
      roundTrip('openai-completions', flavor, LOGPROBS, { bytes: true, ids: true });
      roundTrip('openai-completions', flavor, CHOICES, { bytes: true, ids: true });
    });
  }
  for (const flavor of ['modern', 'legacy']) {
    it(`llamacpp (${flavor}): completion_probabilities from a text event's logprobs`, () => {
      roundTrip('llamacpp', flavor, LOGPROBS, { bytes: true, ids: true });
    });
  }

  it('writes the legacy completions object as vLLM does: text offsets per choice, top alternatives as a map', () => {
    const wire = encodeEvents(getDialect('openai-completions'), CHOICES, { flavor: 'vllm' });
    const choices = wire
      .split('\n')
      .filter((line) => line.startsWith('data: {'))
      .flatMap((line) => (JSON.parse(line.slice(6)) as { choices: Record<string, unknown>[] }).choices)
      .filter((choice) => choice.logprobs !== null);
    assert.deepEqual(
      choices.map((choice) => [choice.index, choice.logprobs]),
      [
        [
          0,
          {
            text_offset: [0],
            token_logprobs: [-0.5],
            tokens: ['Hi'],
            top_logprobs: [{ Hi: -0.5, Hey: -1.5 }],
          },
        ],
        [
          1,
          {
            text_offset: [0],
            token_logprobs: [-0.25],
            tokens: ['Yo'],
            top_logprobs: [{ Yo: -0.25, Oh: -1.25 }],
          },
        ],
        [
          0,
          {
            text_offset: [2],
            token_logprobs: [-1.25],
            tokens: [' there'],
            top_logprobs: [{ ' there': -1.25, ' you': -2.25 }],
          },
        ],
        [
          1,
          {
            text_offset: [2],
            token_logprobs: [-2],
            tokens: [' man'],
            top_logprobs: [{ ' man': -2, ' dude': -3 }],
          },
        ],
      ],
    );
  });

  it("writes llama-server's key order: the same bytes as its own chunks", () => {
    const events: StreamEvent[] = [
      { type: 'text', text: ' Work', logprobs: [token(' Work', -6.560988426208496, 5244, 'icro')] },
    ];
    const wire = encodeEvents(getDialect('llamacpp'), events, { ending: { kind: 'cut' } });
    assert.match(
      wire,
      /"completion_probabilities":\[\{"id":5244,"token":" Work","bytes":\[32,87,111,114,107\],"logprob":-6\.560988426208496,"top_logprobs":\[\{"id":5244,"token":" Work","bytes":\[32,87,111,114,107\],"logprob":-6\.560988426208496\},\{"id":5245,"token":"icro",/,
    );
    const chat = encodeEvents(getDialect('openai-chat'), events, {
      flavor: 'llamacpp',
      ending: { kind: 'cut' },
    });
    assert.match(
      chat,
      /"delta":\{"content":" Work"\},"logprobs":\{"content":\[\{"id":5244,"token":" Work","bytes"/,
    );
  });

  it('keeps the vLLM text hot path for choice 0 without logprobs (logprobs: null, token_ids: null)', () => {
    const wire = encodeEvents(getDialect('openai-chat'), [{ type: 'text', text: 'Hi' }], {
      ending: { kind: 'cut' },
    });
    assert.match(
      wire,
      /\{"index":0,"delta":\{"content":"Hi"\},"logprobs":null,"finish_reason":null,"token_ids":null\}/,
    );
  });
});
