import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { Frame } from '../../src/wire/frame.ts';
import { SseDecoder } from '../../src/wire/sse-decoder.ts';
import { encodeSseComment, encodeSseEvent } from '../../src/wire/sse-encoder.ts';
import { WireError } from '../../src/wire/wire-error.ts';
import { bytewise, splitAt, utf8 } from '../helpers/chunks.ts';

function decode(chunks: Uint8Array[], options: { maxLineBytes?: number } = {}) {
  const frames: Frame[] = [];
  const comments: string[] = [];
  const decoder = new SseDecoder({
    onFrame: (f) => frames.push(f),
    onComment: (c) => comments.push(c),
    ...options,
  });
  for (const chunk of chunks) decoder.feed(chunk);
  const partial = decoder.end();
  return { frames, comments, partial, decoder };
}

const text = (s: string) => [utf8(s)];

describe('SseDecoder', () => {
  it('splits events on a blank line and strips one space after the colon', () => {
    const { frames } = decode(text('data: {"a":1}\n\ndata:{"b":2}\n\ndata:  two spaces\n\n'));
    assert.deepEqual(
      frames.map((f) => f.data),
      ['{"a":1}', '{"b":2}', ' two spaces'],
    );
  });

  it('accepts LF, CR and CRLF line ends, mixed in one stream', () => {
    const { frames } = decode(text('data: a\r\n\r\ndata: b\r\rdata: c\n\ndata: d\r\n\n'));
    assert.deepEqual(
      frames.map((f) => f.data),
      ['a', 'b', 'c', 'd'],
    );
  });

  it('treats a CRLF split across two reads as one line end', () => {
    const { frames } = decode([utf8('data: a\r'), utf8('\n\r'), utf8('\ndata: b\r\n\r\n')]);
    assert.deepEqual(
      frames.map((f) => f.data),
      ['a', 'b'],
    );
  });

  it('joins multi-line data with LF', () => {
    const { frames } = decode(text('data: line one\ndata: line two\ndata\n\n'));
    assert.equal(frames[0]?.data, 'line one\nline two\n');
  });

  it('reads event, id and retry, ignores unknown fields and an id holding NUL', () => {
    const { frames, decoder } = decode(
      text(
        'event: update\nid: 7\nretry: 1500\nfoo: bar\ndata: x\n\nid: a\u0000b\ndata: y\n\nretry: 12x\ndata: z\n\n',
      ),
    );
    assert.deepEqual(frames[0], { data: 'x', event: 'update', id: '7', retry: 1500 });
    assert.deepEqual(frames[1], { data: 'y' });
    assert.deepEqual(frames[2], { data: 'z' });
    assert.equal(decoder.lastEventId, '7');
    assert.equal(decoder.retryMs, 1500);
  });

  it('reports comments (keepalives) and never turns them into frames', () => {
    const { frames, comments } = decode(text(':\n\n: ping\n\ndata: x\n\n:\n\n'));
    assert.deepEqual(
      frames.map((f) => f.data),
      ['x'],
    );
    assert.deepEqual(comments, ['', ' ping', '']);
  });

  it('does not dispatch an event without data, but an empty data field is an event', () => {
    const { frames } = decode(text('event: nothing\n\ndata:\n\n'));
    assert.deepEqual(frames, [{ data: '' }]);
  });

  it('strips a BOM at the start even when it arrives one byte at a time', () => {
    const bytes = new Uint8Array([0xef, 0xbb, 0xbf, ...utf8('data: x\n\n')]);
    assert.deepEqual(decode(bytewise(bytes)).frames, [{ data: 'x' }]);
    // A BOM later in the stream is not stripped (it is part of the field name, so the line is ignored).
    const late = new Uint8Array([...utf8('data: a\n\n'), 0xef, 0xbb, 0xbf, ...utf8('data: b\n\n')]);
    assert.deepEqual(
      decode([late]).frames.map((f) => f.data),
      ['a'],
    );
  });

  it("turns old llama-server's non-standard `error:` line into an error frame", () => {
    const { frames } = decode(
      text('data: {"a":1}\n\nerror: {"code":500,"message":"boom"}\n\ndata: [DONE]\n\n'),
    );
    assert.deepEqual(frames[1], { data: '{"code":500,"message":"boom"}', event: 'error', legacyError: true });
    assert.equal(frames[2]?.data, '[DONE]');
  });

  it('discards an event cut before its blank line, and says so', () => {
    const { frames, partial } = decode(text('data: a\n\ndata: {"cut'));
    assert.deepEqual(
      frames.map((f) => f.data),
      ['a'],
    );
    assert.equal(partial, true);
    assert.equal(decode(text('data: a\n\ndata: b\n')).partial, true);
    assert.equal(decode(text('data: a\n\n')).partial, false);
  });

  it('decodes a multi-byte character split across reads', () => {
    const bytes = utf8('data: Reykjavík 東京 👩‍👩‍👧\n\n');
    for (let cut = 1; cut < bytes.length; cut++) {
      assert.equal(decode(splitAt(bytes, [cut])).frames[0]?.data, 'Reykjavík 東京 👩‍👩‍👧');
    }
  });

  it('fails with line-too-long instead of growing memory on an endless line', () => {
    const decoder = new SseDecoder({ onFrame: () => {}, maxLineBytes: 1024 });
    const chunk = new Uint8Array(512).fill(0x61);
    decoder.feed(utf8('data: '));
    assert.throws(
      () => {
        for (let i = 0; i < 10; i++) decoder.feed(chunk);
      },
      (error: unknown) => error instanceof WireError && error.code === 'line-too-long',
    );
    assert.throws(
      () => decoder.feed(chunk),
      (error: unknown) => error instanceof WireError && error.code === 'decoder-failed',
    );
  });

  it('fails with event-too-large when many data lines add up past the limit', () => {
    const line = `data: ${'x'.repeat(100)}\n`;
    assert.throws(
      () => decode(text(line.repeat(20)), { maxLineBytes: 1000 }),
      (error: unknown) => error instanceof WireError && error.code === 'event-too-large',
    );
  });

  it('fails with invalid-utf8 on bytes that are not UTF-8, or replaces them when asked', () => {
    const bad = new Uint8Array([...utf8('data: a'), 0xff, 0xfe, ...utf8('\n\n')]);
    assert.throws(
      () => decode([bad]),
      (error: unknown) => error instanceof WireError && error.code === 'invalid-utf8',
    );
    const frames: Frame[] = [];
    const lenient = new SseDecoder({ onFrame: (f) => frames.push(f), invalidUtf8: 'replace' });
    lenient.feed(bad);
    assert.equal(frames[0]?.data, 'a\ufffd\ufffd');
    assert.equal(lenient.invalidUtf8Lines, 1);
  });

  const eventArbitrary = fc.record(
    {
      data: fc.string({ unit: 'grapheme', maxLength: 40 }),
      event: fc.stringMatching(/^[a-z]{1,8}$/),
      id: fc.stringMatching(/^[a-z0-9]{1,8}$/),
    },
    { requiredKeys: ['data'] },
  );

  it('decodes any split of an encoded stream (1-byte reads, inside characters and CRLF) to the same frames', () => {
    fc.assert(
      fc.property(
        fc.array(eventArbitrary, { maxLength: 8 }),
        fc.array(fc.nat(), { maxLength: 12 }),
        fc.constantFrom('\n', '\r\n', '\r'),
        fc.boolean(),
        (events, cuts, newline, comments) => {
          let wire = '';
          for (const event of events) {
            if (comments) wire += encodeSseComment('keepalive');
            wire += encodeSseEvent(event);
          }
          wire = wire.replace(/\n/g, newline);
          const bytes = utf8(wire);
          const expected = events.map((e) => {
            const frame: Frame = { data: e.data.replace(/\r\n|\r/g, '\n') };
            if (e.event !== undefined) frame.event = e.event;
            if (e.id !== undefined) frame.id = e.id;
            return frame;
          });
          assert.deepEqual(decode([bytes]).frames, expected);
          assert.deepEqual(decode(splitAt(bytes, cuts)).frames, expected);
        },
      ),
      { numRuns: 300 },
    );
    const sample = utf8(encodeSseEvent({ data: 'héllo\r\nwörld 🎉' }).replace(/\n/g, '\r\n'));
    assert.deepEqual(
      decode(bytewise(sample)).frames.map((f) => f.data),
      ['héllo\nwörld 🎉'],
    );
  });

  it('never throws anything but a WireError on arbitrary bytes, and memory stays bounded', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 300 }), { maxLength: 10 }), (chunks) => {
        const decoder = new SseDecoder({ onFrame: () => {}, maxLineBytes: 256 });
        try {
          for (const chunk of chunks) decoder.feed(chunk);
          decoder.end();
        } catch (error) {
          assert.ok(error instanceof WireError, String(error));
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('encodeSseEvent', () => {
  it('refuses CR or LF in id and event, so a value cannot inject fields', () => {
    assert.throws(() => encodeSseEvent({ data: 'x', id: '1\ndata: evil' }), WireError);
    assert.throws(() => encodeSseEvent({ data: 'x', event: 'a\rb' }), WireError);
    assert.throws(() => encodeSseEvent({ data: 'x', id: 'a\u0000' }), WireError);
  });

  it('writes multi-line data as several data fields and honours the no-space style', () => {
    assert.equal(encodeSseEvent({ data: 'a\nb\r\nc' }), 'data: a\ndata: b\ndata: c\n\n');
    assert.equal(encodeSseEvent({ data: '{}' }, { space: false }), 'data:{}\n\n');
    assert.equal(
      encodeSseEvent({ data: 'x', id: '3', event: 'e', retry: 10 }),
      'event: e\nid: 3\nretry: 10\ndata: x\n\n',
    );
    assert.equal(encodeSseComment(), ':\n\n');
  });
});
