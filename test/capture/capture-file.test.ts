import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatCaptureFile, parseCaptureFile, recordingBody } from '../../src/capture/capture-file.ts';
import type { Recording } from '../../src/capture/recording.ts';
import { replayRecording } from '../../src/cli/inspect/replay-recording.ts';

const enc = (text: string) => new TextEncoder().encode(text);
const chunk = (content: string) =>
  `data: ${JSON.stringify({ object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;

describe('capture files (the playground saves them; inspect replays them)', () => {
  const wire = enc(`${chunk('Reykjav')}${chunk('ík')}`);
  // Split inside í, as a read would be.
  const at = wire.indexOf(0xc3) + 1;
  const recording: Recording = {
    source: 'live',
    dialect: 'openai-chat',
    request: {
      method: 'POST',
      url: 'http://127.0.0.1:8080/sim/v1/chat/completions',
      headers: {},
      body: '{}',
    },
    response: { status: 200, statusText: 'OK', headers: { 'content-type': 'text/event-stream' }, atMs: 3 },
    reads: [
      { atMs: 10, bytes: wire.subarray(0, at) },
      { atMs: 25.5, bytes: wire.subarray(at) },
    ],
    end: { kind: 'read-error', atMs: 30, message: 'connection cut' },
  };

  it('round-trips the bytes, the read timings, the head and the end', () => {
    const text = formatCaptureFile(recording, 'a test');
    assert.match(text, /"format": "tokenwire-capture"/);
    const back = parseCaptureFile(enc(text), 'x.json');
    assert.ok(back !== undefined);
    assert.deepEqual(
      back.reads.map((read) => [read.atMs, [...read.bytes]]),
      recording.reads.map((read) => [read.atMs, [...read.bytes]]),
    );
    assert.deepEqual(back.end, recording.end);
    assert.equal(back.response?.status, 200);
    assert.equal(back.dialect, 'openai-chat');
    assert.equal(back.name, 'x.json');
    assert.deepEqual([...recordingBody(back)], [...wire]);
  });

  it('replays as the live stream was: the text, and incomplete without a terminal event', async () => {
    const back = parseCaptureFile(enc(formatCaptureFile(recording)))!;
    const result = await replayRecording(back, 'openai-chat');
    assert.equal(result?.text, 'Reykjavík');
    assert.equal(result?.complete, false);
    assert.equal(result?.incomplete, 'connection-closed');
    assert.equal(result?.metrics.ttftMs, 10);
  });

  it('is not a capture: a raw body, or other JSON; a broken capture says what is wrong', () => {
    assert.equal(parseCaptureFile(wire), undefined);
    assert.equal(parseCaptureFile(enc('{"choices":[]}')), undefined);
    assert.throws(
      () => parseCaptureFile(enc('{"format":"tokenwire-capture","version":2,"reads":[]}')),
      /version 2/,
    );
    assert.throws(
      () => parseCaptureFile(enc('{"format":"tokenwire-capture","version":1,"reads":[{"atMs":"x"}]}')),
      /read 0 needs/,
    );
  });
});
