import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { TextFrameTemplate } from '../../../src/dialects/common/text-frame-template.ts';
import { DIALECTS } from '../../../src/dialects/registry.ts';
import type { StreamEvent } from '../../../src/events/stream-event.ts';
import type { Frame } from '../../../src/wire/frame.ts';
import { NdjsonDecoder } from '../../../src/wire/ndjson-decoder.ts';
import { SseDecoder } from '../../../src/wire/sse-decoder.ts';
import { outcome } from '../../helpers/decode.ts';
import { fixturePath, readFixture } from '../../helpers/paths.ts';

/**
 * The template path must be invisible: for every frame, a decoder reading through its TextFrameTemplate
 * emits the same events (or throws the same error) as the same decoder parsing every frame.
 */

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
  // Near-numbers: JSON or not by one character.
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '01',
      '00',
      '-0',
      '-01',
      '1.',
      '.5',
      '1e',
      '1e+',
      '1E-2',
      '-',
      '0.0',
      '1.5e-3',
    ),
  },
);

/** A token-id list body: mostly plain ids, sometimes what the ids hole must refuse (the full path's). */
const idsValue = fc.oneof(
  { weight: 3, arbitrary: fc.array(fc.nat(), { minLength: 1, maxLength: 3 }).map((ids) => ids.join(',')) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '',
      '0',
      '01',
      '-1',
      '1.5',
      '1e3',
      '"a"',
      '1,,2',
      ',1',
      '1,',
      ' 1',
      '1 ',
      'null',
      '999999999999999',
      '1000000000000000',
      '9007199254740993',
    ),
  },
  { weight: 1, arbitrary: rawValue },
);

/** A `timings_per_token` snapshot on a partial event, its numbers raw. */
const timings = (n1: string, n2: string): string =>
  `{"cache_n":4,"prompt_n":${n1},"prompt_ms":0.854,"prompt_per_token_ms":0.854,"prompt_per_second":1170.96018735363,"predicted_n":${n2},"predicted_ms":${n1},"predicted_per_token_ms":0.2215,"predicted_per_second":${n2}}`;

/**
 * One text frame of each dialect (a name's part before `+` is the dialect), with its holes filled raw
 * (so the result may not be JSON at all).
 */
const SHAPES: Record<string, (text: string, str: string, n1: string, n2: string, ids: string) => string> = {
  'openai-chat': (t, _s, n) =>
    `{"id":"c1","object":"chat.completion.chunk","created":${n},"model":"m","choices":[{"index":0,"delta":{"content":"${t}"},"logprobs":null,"finish_reason":null}]}`,
  'openai-completions': (t, _s, n) =>
    `{"id":"c1","object":"text_completion","created":${n},"model":"m","choices":[{"index":0,"text":"${t}","logprobs":null,"finish_reason":null}],"usage":null}`,
  'ollama-chat': (t, s) =>
    `{"model":"m","created_at":"${s}","message":{"role":"assistant","content":"${t}"},"done":false}`,
  'ollama-generate': (t, s) => `{"model":"m","created_at":"${s}","response":"${t}","done":false}`,
  llamacpp: (t, _s, n) =>
    `{"index":0,"content":"${t}","tokens":[],"stop":false,"id_slot":-1,"tokens_predicted":${n},"tokens_evaluated":0}`,
  // llama-server's partial events as every build since Dec 2024 writes them: the token ids on each.
  'llamacpp+tokens': (t, _s, n, _n2, ids) =>
    `{"index":0,"content":"${t}","tokens":[${ids}],"stop":false,"id_slot":-1,"tokens_predicted":${n},"tokens_evaluated":5}`,
  // With `timings_per_token`: a progress snapshot on each partial event, which the decoder ignores.
  'llamacpp+timings': (t, _s, n1, n2, ids) =>
    `{"index":0,"content":"${t}","tokens":[${ids}],"stop":false,"id_slot":-1,"tokens_predicted":${n1},"tokens_evaluated":5,"timings":${timings(n1, n2)}}`,
  'openai-responses': (t, _s, n1) =>
    `{"type":"response.output_text.delta","sequence_number":${n1},"item_id":"msg_1","output_index":0,"content_index":0,"delta":"${t}","logprobs":[]}`,
  tgi: (t, _s, n1, n2) =>
    `{"index":${n1},"token":{"id":${n2},"text":"${t}","logprob":${n1},"special":false},"generated_text":null,"details":null}`,
};

const dialectOf = (shape: string): string => shape.split('+')[0]!;

const frameArb = (shape: string) =>
  fc
    .tuple(holeValue, holeValue, numberValue, numberValue, idsValue, fc.option(fc.nat(), { nil: undefined }))
    .map(([text, str, n1, n2, ids, cut]) => {
      const data = SHAPES[shape]!(text, str, n1, n2, ids);
      // Now and then a frame cut short, or with a byte dropped: never JSON, or JSON of another shape.
      if (cut === undefined || cut % 4 !== 0) return { data };
      const at = cut % data.length;
      return { data: cut % 8 === 0 ? data.slice(0, at) : data.slice(0, at) + data.slice(at + 1) };
    });

describe('TextFrameTemplate', () => {
  for (const shape of Object.keys(SHAPES)) {
    const good = (text: string, n = '7') => ({
      data: SHAPES[shape]!(text, '2026-01-01T00:00:00Z', n, '42', '1234'),
    });
    it(`${shape}: every frame decodes to the same events as JSON.parse would give`, () => {
      fc.assert(
        fc.property(fc.array(frameArb(shape), { maxLength: 30 }), (frames) => {
          // Two plain frames first (the first is the start), so a template is learned.
          assertSame(dialectOf(shape), [good('Hi'), good(' there'), ...frames]);
        }),
        { numRuns: 300 },
      );
    });

    it(`${shape}: the compiled template takes exactly the frames, text and ids the byte matcher does`, () => {
      const dialect = DIALECTS[dialectOf(shape)]!;
      const full = dialect.createDecoder({ frameTemplates: false });
      const decode = (frame: Frame, emit: (event: StreamEvent) => void) => full.frame(frame, emit);
      const ignored = { 'openai-chat': ['"created":'], 'openai-completions': ['"created":'] }[
        dialectOf(shape)
      ];
      const keys = ignored ?? [
        '"created_at":',
        '"tokens_predicted":',
        '"sequence_number":',
        '"index":',
        '"id":',
        '"logprob":',
        '"cache_n":',
        '"prompt_n":',
        '"prompt_ms":',
        '"predicted_n":',
        '"predicted_ms":',
        '"predicted_per_second":',
      ];
      const bytes = new TextFrameTemplate(keys, { tokenIdsKey: '"tokens":', compileAfter: Infinity });
      const compiled = new TextFrameTemplate(keys, { tokenIdsKey: '"tokens":', compileAfter: 0 });
      for (const frame of [good('Hi'), good(' there'), good('!')]) {
        bytes.frame(frame, () => {}, decode);
        compiled.frame(frame, () => {}, decode);
      }
      assert.equal(bytes.match(good('x', '8')), 'x', 'a template was learned');
      fc.assert(
        fc.property(frameArb(shape), (frame) => {
          const a = bytes.match(frame);
          const b = compiled.match(frame);
          assert.equal(b, a, frame.data);
          if (a !== undefined) assert.deepEqual(compiled.matchedTokenIds, bytes.matchedTokenIds, frame.data);
        }),
        { numRuns: 1000 },
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

  it('learns no frame whose text event carries what a match cannot give', () => {
    const frame = (text: string): Frame => ({ data: `{"content":"${text}","tokens":[5]}` });
    const learnsFrom = (event: (text: string) => StreamEvent, options = {}): boolean => {
      const template = new TextFrameTemplate([], options);
      const full = (f: Frame, emit: (event: StreamEvent) => void) => {
        emit(event((JSON.parse(f.data) as { content: string }).content));
      };
      template.frame(frame('a'), () => {}, full);
      template.frame(frame('b'), () => {}, full);
      return template.match(frame('c')) !== undefined;
    };
    assert.equal(
      learnsFrom((text) => ({ type: 'text', text })),
      true,
      'a bare text event',
    );
    assert.equal(
      learnsFrom((text) => ({ type: 'text', text, choice: 1 })),
      false,
      'a choice',
    );
    assert.equal(
      learnsFrom((text) => ({ type: 'text', text, logprobs: [{ token: text, logprob: -1 }] })),
      false,
      'log probabilities',
    );
    assert.equal(
      learnsFrom((text) => ({ type: 'text', text, tokenIds: [5] })),
      false,
      'ids, no ids key',
    );
    const ids = { tokenIdsKey: '"tokens":' };
    assert.equal(
      learnsFrom((text) => ({ type: 'text', text, tokenIds: [5] }), ids),
      true,
      'ids, read there',
    );
    // Ids the decoder took from somewhere else than the ids key: a match would give the key's.
    assert.equal(
      learnsFrom((text) => ({ type: 'text', text, tokenIds: [6] }), ids),
      false,
      'other ids',
    );
    assert.equal(
      learnsFrom((text) => ({ type: 'text', text, tokenIds: [5, 5] }), ids),
      false,
      'more ids',
    );
  });

  it('compiles a template after its 512th match, and then reads the same frames', () => {
    const line = (text: string, n: number): Frame => ({
      data: `{"n":${n},"content":"${text}","tokens":[${n}]}`,
    });
    const template = new TextFrameTemplate(['"n":'], { tokenIdsKey: '"tokens":' });
    const full = (f: Frame, emit: (event: StreamEvent) => void) => {
      const payload = JSON.parse(f.data) as { content: string; tokens: number[] };
      emit({ type: 'text', text: payload.content, tokenIds: payload.tokens });
    };
    template.frame(line('a', 0), () => {}, full);
    template.frame(line('b', 1), () => {}, full);
    for (let n = 2; n < 600; n++) {
      const text = n % 2 === 0 ? 'x' : 'a text of more than thirteen characters';
      assert.equal(template.match(line(text, n)), text);
      assert.deepEqual(template.matchedTokenIds, [n]);
    }
    assert.equal(template.match(line('a\\"b', 1)), undefined, 'escapes take the full path');
    assert.equal(template.match({ data: `${line('a', 1).data} ` }), undefined, 'bytes after the template');
    assert.equal(template.match({ data: line('a', 1).data.replace('[1]', '[]') }), undefined, 'no ids');
  });

  it('keeps reading frames too long to compile (V8 refuses a RegExp of ~50,000 characters)', () => {
    const blob = 'b'.repeat(60_000);
    const line = (text: string): Frame => ({ data: `{"blob":"${blob}","content":"${text}"}` });
    const template = new TextFrameTemplate();
    const full = (f: Frame, emit: (event: StreamEvent) => void) => {
      emit({ type: 'text', text: (JSON.parse(f.data) as { content: string }).content });
    };
    template.frame(line('a'), () => {}, full);
    template.frame(line('b'), () => {}, full);
    for (let n = 0; n < 600; n++) assert.equal(template.match(line(`t${n}`)), `t${n}`);
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
