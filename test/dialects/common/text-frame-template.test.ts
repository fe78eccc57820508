import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { TextFrameTemplate } from '../../../src/dialects/common/text-frame-template.ts';
import type { DialectDecoder } from '../../../src/dialects/dialect.ts';
import { DIALECTS } from '../../../src/dialects/registry.ts';
import type { StreamEvent } from '../../../src/events/stream-event.ts';
import type { Frame } from '../../../src/wire/frame.ts';
import { NdjsonDecoder } from '../../../src/wire/ndjson-decoder.ts';
import { SseDecoder } from '../../../src/wire/sse-decoder.ts';
import { fixturePath, readFixture } from '../../helpers/paths.ts';

/**
 * The template path must be invisible: for every frame, a decoder reading through its TextFrameTemplate
 * emits the same events (or throws the same error) as the same decoder parsing every frame.
 */

type Outcome = { events: StreamEvent[] } | { error: string };

function outcome(decoder: DialectDecoder, frame: Frame): Outcome {
  const events: StreamEvent[] = [];
  try {
    decoder.frame(frame, (event) => events.push(event));
    return { events };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

/** Decodes the frames with templates and without, side by side; fails at the first difference. */
function assertSame(dialectId: string, frames: readonly Frame[]): number {
  const dialect = DIALECTS[dialectId]!;
  const templated = dialect.createDecoder({});
  const parsed = dialect.createDecoder({ frameTemplates: false });
  for (const [i, frame] of frames.entries()) {
    assert.deepEqual(
      outcome(templated, frame),
      outcome(parsed, frame),
      `${dialectId}, frame ${i}: ${JSON.stringify(frame)}`,
    );
  }
  const endA: StreamEvent[] = [];
  const endB: StreamEvent[] = [];
  templated.end((event) => endA.push(event));
  parsed.end((event) => endB.push(event));
  assert.deepEqual(endA, endB);
  assert.equal(templated.complete, parsed.complete);
  return frames.length;
}

/** Raw hole values: JSON-escaped text most of the time, and bytes that break or bend JSON too. */
const RAW_PIECES = [
  'a',
  ' ',
  'é',
  '日本',
  '😀',
  '"',
  '\\',
  '\\"',
  '\\n',
  '\\u00e9',
  '\n',
  '\u0001',
  '\t',
  '0',
  '1',
  '9',
  '-',
  '.',
  'e',
  'E',
  '+',
  '}',
  ',',
  ':',
  '{',
  'null',
];
const rawValue = fc.array(fc.constantFrom(...RAW_PIECES), { maxLength: 5 }).map((parts) => parts.join(''));
const jsonBody = fc.string({ maxLength: 8, unit: 'binary' }).map((text) => JSON.stringify(text).slice(1, -1));
const holeValue = fc.oneof({ weight: 3, arbitrary: jsonBody }, { weight: 1, arbitrary: rawValue });
const numberValue = fc.oneof(
  { weight: 3, arbitrary: fc.integer({ min: -5, max: 99999 }).map(String) },
  { weight: 1, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }).map(String) },
  { weight: 2, arbitrary: rawValue },
);

/** One text frame of each dialect, with its holes filled raw (so the result may not be JSON at all). */
const SHAPES: Record<string, (text: string, str: string, n1: string, n2: string) => string> = {
  'openai-chat': (t, _s, n) =>
    `{"id":"c1","object":"chat.completion.chunk","created":${n},"model":"m","choices":[{"index":0,"delta":{"content":"${t}"},"logprobs":null,"finish_reason":null}]}`,
  'openai-completions': (t, _s, n) =>
    `{"id":"c1","object":"text_completion","created":${n},"model":"m","choices":[{"index":0,"text":"${t}","logprobs":null,"finish_reason":null}],"usage":null}`,
  'ollama-chat': (t, s) =>
    `{"model":"m","created_at":"${s}","message":{"role":"assistant","content":"${t}"},"done":false}`,
  'ollama-generate': (t, s) => `{"model":"m","created_at":"${s}","response":"${t}","done":false}`,
  llamacpp: (t, _s, n) =>
    `{"index":0,"content":"${t}","tokens":[],"stop":false,"id_slot":-1,"tokens_predicted":${n},"tokens_evaluated":0}`,
  'openai-responses': (t, _s, n1) =>
    `{"type":"response.output_text.delta","sequence_number":${n1},"item_id":"msg_1","output_index":0,"content_index":0,"delta":"${t}","logprobs":[]}`,
  tgi: (t, _s, n1, n2) =>
    `{"index":${n1},"token":{"id":${n2},"text":"${t}","logprob":${n1},"special":false},"generated_text":null,"details":null}`,
};

const frameArb = (dialectId: string) =>
  fc
    .tuple(holeValue, holeValue, numberValue, numberValue, fc.option(fc.nat(), { nil: undefined }))
    .map(([text, str, n1, n2, cut]) => {
      const data = SHAPES[dialectId]!(text, str, n1, n2);
      // Now and then a frame cut short, or with a byte dropped: never JSON, or JSON of another shape.
      if (cut === undefined || cut % 4 !== 0) return { data };
      const at = cut % data.length;
      return { data: cut % 8 === 0 ? data.slice(0, at) : data.slice(0, at) + data.slice(at + 1) };
    });

describe('TextFrameTemplate', () => {
  for (const dialectId of Object.keys(SHAPES)) {
    it(`${dialectId}: every frame decodes to the same events as JSON.parse would give`, () => {
      const good = (text: string) => ({ data: SHAPES[dialectId]!(text, '2026-01-01T00:00:00Z', '7', '42') });
      fc.assert(
        fc.property(fc.array(frameArb(dialectId), { maxLength: 30 }), (frames) => {
          // Two plain frames first (the first is the start), so a template is learned.
          assertSame(dialectId, [good('Hi'), good(' there'), ...frames]);
        }),
        { numRuns: 300 },
      );
    });
  }

  it('learns from the text frames of a stream and then reads them without JSON.parse', () => {
    const template = new TextFrameTemplate(['"created_at":']);
    const line = (text: string, at: string): Frame => ({
      data: `{"model":"m","created_at":"${at}","message":{"role":"assistant","content":"${text}"},"done":false}`,
    });
    const full = (frame: Frame, emit: (event: StreamEvent) => void) => {
      const payload = JSON.parse(frame.data) as { message: { content: string } };
      emit({ type: 'text', text: payload.message.content });
    };
    const events: StreamEvent[] = [];
    const emit = (event: StreamEvent) => events.push(event);
    assert.equal(template.match(line('a', 't1')), undefined, 'nothing learned yet');
    template.frame(line('Hello', 't0'), emit, full);
    assert.equal(template.match(line('a', 't1')), undefined, 'the first text frame is only counted');
    template.frame(line('Hello', 't1'), emit, full);
    assert.equal(
      template.match(line(' world, and more than thirteen', 't2.5')),
      ' world, and more than thirteen',
    );
    assert.equal(template.match(line('', 't3')), '');
    assert.equal(template.match(line('a\\"b', 't3')), undefined, 'escapes take the full path');
    assert.equal(template.match({ ...line('a', 't3'), event: 'error' }), undefined, 'another event type');
    assert.equal(template.match({ data: `${line('a', 't3').data} ` }), undefined, 'bytes after the template');
    assert.deepEqual(events, [
      { type: 'text', text: 'Hello' },
      { type: 'text', text: 'Hello' },
    ]);
  });

  it('learns nothing from a frame with escapes, or where the text occurs twice', () => {
    const template = new TextFrameTemplate();
    const full = (frame: Frame, emit: (event: StreamEvent) => void) => {
      emit({ type: 'text', text: (JSON.parse(frame.data) as { content: string }).content });
    };
    template.frame({ data: '{"model":"m","content":"first"}' }, () => {}, full);
    template.frame({ data: '{"model":"m","content":"m"}' }, () => {}, full);
    assert.equal(template.match({ data: '{"model":"m","content":"x"}' }), undefined);
    template.frame({ data: '{"model":"\\u006d","content":"m"}' }, () => {}, full);
    assert.equal(template.match({ data: '{"model":"\\u006d","content":"x"}' }), undefined);
    template.frame({ data: '{"model":"m","content":"ok"}' }, () => {}, full);
    assert.equal(template.match({ data: '{"model":"m","content":"x"}' }), 'x');
  });

  it('gives up learning when the frames of a stream never repeat a shape', () => {
    const template = new TextFrameTemplate();
    let calls = 0;
    const full = (frame: Frame, emit: (event: StreamEvent) => void) => {
      calls += 1;
      emit({ type: 'text', text: (JSON.parse(frame.data) as { t: string }).t });
    };
    for (let i = 0; i < 20; i++) template.frame({ data: `{"n":${i},"t":"x"}` }, () => {}, full);
    assert.equal(calls, 20);
    // The first frame is only counted; learning stopped after 8 fruitless templates, so the shape of the
    // 10th frame (n = 9) was the last one learned.
    assert.equal(template.match({ data: '{"n":9,"t":"y"}' }), 'y');
    assert.equal(template.match({ data: '{"n":19,"t":"y"}' }), undefined);
  });

  it('decodes every fixture stream to the same events with and without templates', () => {
    let checked = 0;
    for (const dir of [
      'wire-examples',
      'extra',
      'real-captures/llamacpp-b4747',
      'real-captures/llamacpp-b10108',
    ]) {
      for (const name of readdirSync(fixturePath(dir)).sort()) {
        const sse = name.endsWith('.sse');
        if (!sse && !name.endsWith('.ndjson')) continue;
        const frames: Frame[] = [];
        const onFrame = (frame: Frame) => frames.push(frame);
        const wire = sse ? new SseDecoder({ onFrame }) : new NdjsonDecoder({ onFrame });
        wire.feed(readFixture(dir, name));
        wire.end();
        for (const [dialectId, dialect] of Object.entries(DIALECTS)) {
          if ((dialect.framing === 'sse') !== sse) continue;
          assertSame(dialectId, frames);
          checked += 1;
        }
      }
    }
    assert.ok(checked > 20, `only ${checked} fixture streams`);
  });
});
