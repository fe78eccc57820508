import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Recording } from '../../src/capture/recording.ts';
import { styleFor } from '../../src/cli/cli-io.ts';
import { analyzeRecording } from '../../src/cli/inspect/analyze-recording.ts';
import { detectBuffering, type TimedFrame } from '../../src/cli/inspect/detect-buffering.ts';
import { diagnose } from '../../src/cli/inspect/diagnose.ts';
import { findControlTokens } from '../../src/cli/inspect/find-control-tokens.ts';
import { firstInvalidUtf8 } from '../../src/cli/inspect/first-invalid-utf8.ts';
import { guessServer } from '../../src/cli/inspect/guess-server.ts';
import { renderInspect } from '../../src/cli/inspect/render-inspect.ts';
import { scanWire } from '../../src/cli/inspect/scan-wire.ts';

const bytes = (text: string) => new TextEncoder().encode(text);
const reads = (...parts: [number, string | Uint8Array][]) =>
  parts.map(([atMs, part]) => ({ atMs, bytes: typeof part === 'string' ? bytes(part) : part }));

/** A live recording of an openai-chat stream, made of the given reads. */
function recording(parts: [number, string | Uint8Array][], headers: Record<string, string> = {}): Recording {
  return {
    source: 'live',
    request: {
      method: 'POST',
      url: 'http://127.0.0.1:1/v1/chat/completions',
      headers: {},
      body: JSON.stringify({
        model: 'm',
        messages: [],
        stream: true,
        stream_options: { include_usage: true },
      }),
    },
    response: {
      status: 200,
      statusText: 'OK',
      headers: { 'content-type': 'text/event-stream', ...headers },
      atMs: 1,
    },
    dialect: 'openai-chat',
    dialectSource: 'path',
    reads: reads(...parts),
    end: { kind: 'eof', atMs: parts.at(-1)?.[0] ?? 1 },
  };
}

const chunk = (text: string, finish: string | null = null) =>
  `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: text }, finish_reason: finish }] })}\n\n`;
const usage = `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 1, completion_tokens: 3, total_tokens: 4 } })}\n\n`;

describe('inspect engine: the wire scan', () => {
  it('gives every frame its byte range and reads, and marks frames that reads split', () => {
    const whole = `${chunk('Hi')}: ping\n\n${chunk(' there')}data: [DONE]\n\n`;
    const cut = whole.indexOf('there');
    const scan = scanWire(reads([5, whole.slice(0, cut)], [9, whole.slice(cut)]), 'sse');
    assert.equal(scan.frames.length, 3);
    const [first, second, done] = scan.frames;
    assert.equal(first!.start, 0);
    assert.equal(first!.end, chunk('Hi').length);
    assert.deepEqual([first!.firstRead, first!.lastRead, first!.atMs], [1, 1, 5]);
    assert.deepEqual(
      [second!.firstRead, second!.lastRead, second!.atMs],
      [1, 2, 9],
      'split across reads 1-2',
    );
    assert.equal(done!.frame.data, '[DONE]');
    assert.equal(scan.comments.length, 1);
    assert.equal(scan.comments[0]!.text, ' ping');
    assert.equal(scan.comments[0]!.read, 1);
  });

  it('handles CRLF and CR line ends, and an event the body ends inside', () => {
    const scan = scanWire(reads([1, 'data: {"a":1}\r\n\r\ndata: {"b":2}\r\rdata: {"c"']), 'sse');
    assert.deepEqual(
      scan.frames.map((f) => f.frame.data),
      ['{"a":1}', '{"b":2}'],
    );
    assert.equal(scan.frames[1]!.end, 'data: {"a":1}\r\n\r\ndata: {"b":2}\r\r'.length);
    assert.equal(scan.partialTail?.raw, 'data: {"c"');
  });

  it('reads NDJSON lines, including a last line without its newline', () => {
    const scan = scanWire(reads([1, '{"a":1}\n{"b":'], [2, '2}\n{"c":3}']), 'ndjson');
    assert.deepEqual(
      scan.frames.map((f) => [f.frame.data, f.firstRead, f.lastRead, f.unterminated === true]),
      [
        ['{"a":1}', 1, 1, false],
        ['{"b":2}', 1, 2, false],
        ['{"c":3}', 2, 2, true],
      ],
    );
  });

  it('counts data: lines without the space (the TGI <= 2.0 fingerprint)', () => {
    const scan = scanWire(reads([1, 'data:{"a":1}\n\ndata:{"b":2}\n\n']), 'sse');
    assert.equal(scan.dataWithoutSpace, 2);
    assert.equal(scan.dataWithSpace, 0);
  });

  it('points at invalid UTF-8 instead of failing', () => {
    const body = new Uint8Array([...bytes('data: {"x":"a'), 0xff, ...bytes('b"}\n\n')]);
    const scan = scanWire(reads([1, body]), 'sse');
    assert.equal(scan.frames[0]!.invalidUtf8At, 'data: {"x":"a'.length);
    assert.match(scan.frames[0]!.frame.data, /a\uFFFDb/);
  });
});

describe('inspect engine: building blocks', () => {
  it('firstInvalidUtf8 finds stray, truncated, overlong and surrogate sequences', () => {
    assert.equal(firstInvalidUtf8(bytes('héllo 🙂 日本')), -1);
    assert.equal(firstInvalidUtf8(new Uint8Array([0x61, 0xff])), 1);
    assert.equal(firstInvalidUtf8(new Uint8Array([0x61, 0xe6, 0x97])), 1, 'truncated');
    assert.equal(firstInvalidUtf8(new Uint8Array([0xc0, 0xaf])), 0, 'overlong');
    assert.equal(firstInvalidUtf8(new Uint8Array([0xed, 0xa0, 0x80])), 0, 'surrogate');
    assert.equal(firstInvalidUtf8(new Uint8Array([0x61, 0x80])), 1, 'lone continuation byte');
  });

  it('findControlTokens finds the common families and counts them', () => {
    const hits = findControlTokens(
      'a<|eot_id|>b<|im_end|></s>[INST]<end_of_turn><｜end▁of▁sentence｜><|eot_id|>',
    );
    assert.deepEqual(
      hits.map((h) => [h.token, h.count]),
      [
        ['<|eot_id|>', 2],
        ['<|im_end|>', 1],
        ['</s>', 1],
        ['[INST]', 1],
        ['<end_of_turn>', 1],
        ['<｜end▁of▁sentence｜>', 1],
      ],
    );
    assert.deepEqual(findControlTokens('a < b and c > d, <b>bold</b>, | pipes |'), []);
  });

  it('guessServer reads headers and the first payload (wire-formats.md §2.2)', () => {
    const base = { dialect: 'openai-chat' as const, dataWithoutSpace: 0, dataWithSpace: 3 };
    assert.equal(
      guessServer({ ...base, headers: { server: 'llama.cpp' }, payloads: [] })?.server,
      'llama.cpp',
    );
    assert.equal(
      guessServer({
        ...base,
        headers: {},
        payloads: [{ object: 'chat.completion.chunk', id: '', choices: [] }],
      })?.server,
      'TGI',
    );
    assert.equal(
      guessServer({
        ...base,
        headers: {},
        payloads: [{ id: 'x', choices: [{ index: 0, stop_reason: null }] }],
      })?.server,
      'vLLM',
    );
    assert.equal(
      guessServer({
        ...base,
        headers: {},
        payloads: [{ id: 'x', system_fingerprint: 'fp_ollama', choices: [] }],
      })?.server,
      'Ollama',
    );
    assert.equal(guessServer({ ...base, headers: {}, payloads: [{ id: 'x', choices: [] }] }), undefined);
  });

  it('guessServer names the gateway, the upstream that answered and the attempts before it', () => {
    const guess = guessServer({
      dialect: 'openai-chat',
      dataWithoutSpace: 0,
      dataWithSpace: 3,
      headers: {
        'x-tokenwire-stream-id': 'abc',
        'x-tokenwire-upstream': 'llama-b',
        'x-tokenwire-attempts': 'llama-a, llama-b',
      },
      payloads: [],
    });
    assert.equal(guess?.server, 'the tokenwire gateway');
    assert.deepEqual(guess?.evidence, [
      'its x-tokenwire-stream-id header',
      'answered by its upstream "llama-b" (x-tokenwire-upstream)',
      'after failed attempts: llama-a, llama-b (x-tokenwire-attempts)',
    ]);
  });
});

describe('inspect engine: buffering', () => {
  const smooth = (n: number, every: number, start = 100): TimedFrame[] =>
    Array.from({ length: n }, (_, i) => ({ atMs: start + i * every, read: i + 1 }));

  it('a smooth stream is not buffered, slow or fast', () => {
    assert.equal(detectBuffering(smooth(60, 20), 0)?.buffered, false);
    assert.equal(detectBuffering(smooth(60, 0.5), 0)?.buffered, false);
  });

  it('frames the network coalesced at a high rate (a few per read, short gaps) are not buffering', () => {
    const frames: TimedFrame[] = [];
    for (let i = 0; i < 60; i++)
      frames.push({ atMs: 50 + Math.floor(i / 4) * 2, read: Math.floor(i / 4) + 1 });
    assert.equal(detectBuffering(frames, 0)?.buffered, false);
  });

  it('one hiccup that piles a few frames into one read is not buffering', () => {
    const frames = smooth(60, 10);
    for (let i = 20; i < 26; i++) frames[i] = { atMs: 100 + 26 * 10, read: 21 };
    for (let i = 26; i < 60; i++) frames[i] = { atMs: 100 + i * 10, read: i };
    assert.equal(detectBuffering(frames, 0)?.buffered, false);
  });

  it('events released in bursts after long gaps (a buffering proxy) are', () => {
    const frames: TimedFrame[] = [];
    for (let burst = 0; burst < 4; burst++) {
      for (let i = 0; i < 15; i++) frames.push({ atMs: 100 + burst * 100, read: burst + 1 });
    }
    const verdict = detectBuffering(frames, 0);
    assert.equal(verdict?.buffered, true);
    assert.equal(verdict?.bursts, 4);
    assert.equal(verdict?.framesInBursts, 60);
  });

  it('a whole answer held back to the end and released at once is', () => {
    const frames = Array.from({ length: 40 }, () => ({ atMs: 900, read: 1 }));
    assert.equal(detectBuffering(frames, 5)?.buffered, true);
  });

  it("bursts that inspect's own stalled process explains are not buffering", () => {
    const frames: TimedFrame[] = [];
    for (let burst = 0; burst < 4; burst++) {
      for (let i = 0; i < 15; i++) frames.push({ atMs: 100 + burst * 100, read: burst + 1 });
    }
    const stalls = [0, 1, 2, 3].map((burst) => ({ fromMs: 20 + burst * 100, toMs: 99 + burst * 100 }));
    const verdict = detectBuffering(frames, 0, stalls);
    assert.equal(verdict?.buffered, false);
    assert.equal(verdict?.localBursts, 4);
    assert.equal(verdict?.bursts, 0);
    assert.equal(
      detectBuffering(frames, 0, stalls.slice(0, 1))?.buffered,
      true,
      'one explained burst of four',
    );
  });

  it('too few frames to judge: no verdict', () => {
    assert.equal(detectBuffering(smooth(5, 100), 0), undefined);
  });
});

describe('inspect engine: analysis and diagnosis of recordings', () => {
  it('a clean recording: no problem; the client replay agrees and reports TTFT from the read times', async () => {
    const analysis = await analyzeRecording(
      recording([
        [10, chunk('Hi')],
        [20, chunk(' there')],
        [30, chunk('', 'stop') + usage],
        [31, 'data: [DONE]\n\n'],
      ]),
    );
    assert.deepEqual(
      diagnose(analysis).filter((f) => f.severity !== 'info'),
      [],
    );
    assert.equal(analysis.result?.complete, true);
    assert.equal(analysis.result?.metrics.ttftMs, 10);
    assert.equal(analysis.text, 'Hi there');
  });

  it('the text report shows each read with its time and size, and where a read split a frame', async () => {
    const whole = chunk('Hi') + chunk(' there', 'stop') + usage;
    const analysis = await analyzeRecording(
      recording([
        [10, whole.slice(0, 20)],
        [12, whole.slice(20)],
        [15, 'data: [DONE]\n\n'],
      ]),
    );
    const text = renderInspect(analysis, diagnose(analysis), {
      style: styleFor({ isTTY: false }, {}),
      width: 140,
      full: false,
      wire: true,
      failOn: 'warning',
    });
    assert.match(text, /\+10 ms +#1 +20 B {2}frame 1 begins here… \(split: it ends in read 2\)/);
    assert.match(text, /\+12 ms +#2 +\d+ B {2}frame 1 .*text "Hi" \[split: reads 1-2\]/);
    assert.match(text, /frame 2 .*text " there", finish stop/);
    assert.match(text, /\+15 ms +#3 +14 B {2}frame 4 +data: \[DONE\] +→ \[DONE\]/);
    assert.match(text, /No problems found\./);
  });

  it('a recording cut mid-event: missing-terminal-event, and the client agrees it is incomplete', async () => {
    const analysis = await analyzeRecording({
      ...recording([
        [10, chunk('Hi')],
        [20, 'data: {"choi'],
      ]),
      end: { kind: 'read-error', atMs: 21, message: 'other side closed' },
    });
    const ids = diagnose(analysis).map((f) => f.id);
    assert.ok(ids.includes('missing-terminal-event'));
    assert.equal(analysis.result?.complete, false);
    assert.equal(analysis.result?.incomplete, 'connection-closed');
  });
});
