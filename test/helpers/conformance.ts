import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { Dialect } from '../../src/dialects/dialect.ts';
import type { FinishReason } from '../../src/events/finish-reason.ts';
import { emptyMetrics, ResultBuilder } from '../../src/events/result.ts';
import type { StreamEvent } from '../../src/events/stream-event.ts';
import { bytewise, splitAt, utf8 } from './chunks.ts';
import { decodeChunks, encodeEvents } from './decode.ts';
import { fixturePath, readFixture } from './paths.ts';

/**
 * The suite every dialect runs (hono's shared router cases, applied to dialects):
 * 1. each fixture decodes to its golden events (`<fixture>.events.json`, reviewed by hand;
 *    `UPDATE_GOLDEN=1` rewrites them);
 * 2. any split of a fixture's bytes into reads (1-byte reads, random cuts) decodes to the same events;
 * 3. for every encoder flavor, random answers survive encode -> decode (text chunk for chunk, reasoning,
 *    tool calls, finish reason, usage), and decode(encode(E)) == E for decoded events E (a fixpoint).
 */
export interface ConformanceOptions {
  /** Fixture files (relative to test/fixtures) in this dialect. */
  fixtures: readonly string[];
  /** What each flavor can carry. Flavors not listed are tested with the defaults. */
  capabilities?: (flavor: string) => Capabilities;
}

export interface Capabilities {
  reasoning: boolean;
  toolCalls: boolean;
  /** Usage reaches the stream (with `includeUsage` where the dialect makes it optional). */
  usage: boolean;
  finishReasons: readonly FinishReason[];
}

const DEFAULT_CAPABILITIES: Capabilities = {
  reasoning: true,
  toolCalls: true,
  usage: true,
  finishReasons: ['stop', 'length', 'tool-calls'],
};

export interface Golden {
  complete: boolean;
  terminated: boolean;
  events: StreamEvent[];
}

export function runConformance(dialect: Dialect, options: ConformanceOptions): void {
  describe(`${dialect.id} conformance`, () => {
    for (const fixture of options.fixtures) {
      it(`decodes ${fixture} to its golden events`, () => {
        const decoded = decodeChunks(dialect, [readFixture(fixture)]);
        const golden: Golden = {
          complete: decoded.complete,
          terminated: decoded.terminated,
          events: decoded.events,
        };
        const goldenPath = fixturePath(`${fixture.replace(/\.(sse|ndjson)$/, '')}.events.json`);
        if (process.env.UPDATE_GOLDEN === '1' || !existsSync(goldenPath)) {
          writeFileSync(goldenPath, `${JSON.stringify(golden, null, 2)}\n`);
          if (process.env.UPDATE_GOLDEN !== '1')
            assert.fail(`wrote a new golden file ${goldenPath}: review it`);
        }
        assert.deepEqual(JSON.parse(JSON.stringify(golden)), JSON.parse(readFileSync(goldenPath, 'utf8')));
      });

      it(`decodes ${fixture} the same however the bytes are split into reads`, () => {
        const bytes = readFixture(fixture);
        const whole = decodeChunks(dialect, [bytes]);
        assert.deepEqual(decodeChunks(dialect, bytewise(bytes)), whole);
        fc.assert(
          fc.property(fc.array(fc.nat({ max: bytes.length }), { maxLength: 20 }), (cuts) => {
            assert.deepEqual(decodeChunks(dialect, splitAt(bytes, cuts)), whole);
          }),
          { numRuns: 150 },
        );
      });
    }

    for (const flavor of dialect.flavors) {
      const caps = options.capabilities?.(flavor) ?? DEFAULT_CAPABILITIES;
      it(`round-trips random answers through the ${flavor} encoder`, () => {
        fc.assert(
          fc.property(answerArbitrary(caps), fc.array(fc.nat(), { maxLength: 6 }), (answer, cuts) => {
            const events = answerEvents(answer);
            const wire = encodeEvents(dialect, events, { flavor, includeUsage: true, created: 1767225600 });
            const decoded = decodeChunks(dialect, splitAt(utf8(wire), cuts));
            assert.equal(decoded.complete, true, `not complete:\n${wire}`);
            const got = fold(decoded.events);
            assert.deepEqual(
              decoded.events.filter((e) => e.type === 'text').map((e) => e.text),
              answer.texts.filter((t) => t !== ''),
              `text chunks differ:\n${wire}`,
            );
            assert.equal(got.reasoning, caps.reasoning ? answer.reasoning.join('') : '');
            assert.deepEqual(
              got.toolCalls.map((c) => ({ name: c.name, input: c.input })),
              answer.toolCalls.map((c) => ({ name: c.name, input: c.input })),
            );
            assert.equal(got.finishReason, answer.finish);
            if (caps.usage && answer.usage !== undefined) {
              assert.equal(got.usage?.inputTokens, answer.usage.input);
              assert.equal(got.usage?.outputTokens, answer.usage.output);
            }
            // Fixpoint: what we decoded, encoded again and decoded again, is what we decoded.
            const again = encodeEvents(dialect, decoded.events, {
              flavor,
              includeUsage: true,
              created: 1767225600,
            });
            assert.deepEqual(
              decodeChunks(dialect, [utf8(again)]).events,
              decoded.events,
              `not a fixpoint:\n${again}`,
            );
          }),
          { numRuns: 120 },
        );
      });

      it(`writes a mid-stream error in the ${flavor} shape that decodes as an error, never as complete`, () => {
        const events: StreamEvent[] = [
          { type: 'start', id: 'x', model: 'm' },
          { type: 'text', text: 'partial' },
        ];
        const wire = encodeEvents(dialect, events, {
          flavor,
          ending: { kind: 'error', error: { message: 'backend failed: CUDA out of memory', status: 500 } },
        });
        const decoded = decodeChunks(dialect, [utf8(wire)]);
        assert.equal(fold(decoded.events).text, 'partial');
        const error = decoded.events.find((e) => e.type === 'error');
        // Some servers (Ollama's OpenAI layer) have no error representation: the stream just stops.
        if (error === undefined) assert.equal(decoded.complete, false, `looks complete:\n${wire}`);
        else assert.match(error.message, /CUDA out of memory/);
      });
    }
  });
}

export interface Answer {
  reasoning: string[];
  texts: string[];
  toolCalls: { name: string; input: Record<string, unknown>; fragments: number }[];
  finish: FinishReason;
  usage?: { input: number; output: number } | undefined;
}

const textPiece = fc.oneof(
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 12 }),
  fc.constantFrom(
    ' the',
    ' Reykjavík',
    '東京',
    ' 👩‍👩‍👧',
    '\n',
    ' a\r\nb\r',
    ' <b>&amp;</b>',
    ' "quoted"',
    '\\',
    '\u2028',
  ),
);

/** Coherent answers: tool calls end in `tool-calls` (or `length`), plain answers never do. */
export function answerArbitrary(caps: Capabilities): fc.Arbitrary<Answer> {
  return rawAnswerArbitrary(caps).map((answer) => {
    const withTools = answer.toolCalls.length > 0;
    if (withTools && answer.finish !== 'length') return { ...answer, finish: 'tool-calls' };
    if (!withTools && answer.finish === 'tool-calls') return { ...answer, finish: 'stop' };
    return answer;
  });
}

function rawAnswerArbitrary(caps: Capabilities): fc.Arbitrary<Answer> {
  return fc.record({
    reasoning: caps.reasoning ? fc.array(textPiece, { maxLength: 3 }) : fc.constant([]),
    texts: fc.array(textPiece, { minLength: 1, maxLength: 8 }),
    toolCalls: caps.toolCalls
      ? fc.array(
          fc.record({
            name: fc.stringMatching(/^[a-z_]{1,12}$/),
            input: fc.dictionary(
              fc.stringMatching(/^[a-z]{1,6}$/),
              fc.oneof(fc.string({ maxLength: 10 }), fc.integer()),
              {
                maxKeys: 3,
                noNullPrototype: true,
              },
            ),
            fragments: fc.integer({ min: 1, max: 4 }),
          }),
          { maxLength: 2 },
        )
      : fc.constant([]),
    finish: fc.constantFrom(...caps.finishReasons),
    usage: fc.option(
      fc.record({ input: fc.integer({ min: 1, max: 5000 }), output: fc.integer({ min: 1, max: 5000 }) }),
      {
        nil: undefined,
      },
    ),
  });
}

/** The normalized events a server producing `answer` would decode to. */
export function answerEvents(answer: Answer): StreamEvent[] {
  const events: StreamEvent[] = [{ type: 'start', id: 'resp-1', model: 'sim-model', created: 1767225600 }];
  for (const text of answer.reasoning) events.push({ type: 'reasoning', text });
  for (const text of answer.texts) if (text !== '') events.push({ type: 'text', text });
  answer.toolCalls.forEach((call, index) => {
    const args = JSON.stringify(call.input);
    const size = Math.ceil(args.length / call.fragments);
    for (let i = 0; i < call.fragments; i++) {
      const piece = args.slice(i * size, (i + 1) * size);
      if (i === 0)
        events.push({
          type: 'tool-call-delta',
          index,
          id: `call_${index}`,
          name: call.name,
          argumentsDelta: piece,
        });
      else if (piece !== '') events.push({ type: 'tool-call-delta', index, argumentsDelta: piece });
    }
  });
  answer.toolCalls.forEach((call, index) => {
    events.push({
      type: 'tool-call',
      index,
      id: `call_${index}`,
      name: call.name,
      arguments: JSON.stringify(call.input),
      input: call.input,
    });
  });
  events.push({ type: 'finish', reason: answer.finish, raw: null });
  if (answer.usage !== undefined) {
    events.push({
      type: 'usage',
      usage: {
        inputTokens: answer.usage.input,
        outputTokens: answer.usage.output,
        totalTokens: answer.usage.input + answer.usage.output,
      },
    });
  }
  return events;
}

export function fold(events: readonly StreamEvent[]) {
  const builder = new ResultBuilder();
  for (const event of events) builder.add(event);
  return builder.build({ complete: true, metrics: emptyMetrics() });
}

/**
 * Decodes a fixture and encodes its events again with `flavor`: the bytes must be the fixture's own,
 * byte for byte (key order, spacing, escaping, the role chunk, where usage and timings go).
 */
export function assertByteFaithful(
  dialect: Dialect,
  fixture: string,
  flavor: string,
  options: { includeUsage?: boolean; strip?: (text: string) => string } = {},
): void {
  const bytes = readFixture(fixture);
  const original = new TextDecoder().decode(bytes);
  const decoded = decodeChunks(dialect, [bytes]);
  const error = decoded.events.find((e) => e.type === 'error');
  const wire = encodeEvents(dialect, decoded.events, {
    flavor,
    includeUsage: options.includeUsage ?? true,
    ending: error === undefined && decoded.complete ? { kind: 'complete' } : { kind: 'cut' },
  });
  assert.equal(wire, options.strip === undefined ? original : options.strip(original));
}
