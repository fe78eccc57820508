import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { openAiChat } from '../../src/dialects/openai-chat/index.ts';
import type { ResumeSubscription, StoredFrame, StoredStatus } from '../../src/server/resume/resume-store.ts';
import { resumedBody } from '../../src/server/resume/resumed-body.ts';
import { decodeChunks } from '../helpers/decode.ts';

const chunk = (n: number) =>
  JSON.stringify({
    id: 'c',
    object: 'chat.completion.chunk',
    created: 0,
    model: 'm',
    choices: [{ index: 0, delta: { content: `t${n} ` }, finish_reason: null }],
  });

/** A subscription that yields `seqs` (then `[DONE]` as the next seq when `done`) and ends as `status`. */
function subscription(seqs: number[], status: StoredStatus, endSeq?: number): ResumeSubscription {
  const frames: StoredFrame[] = seqs.map((seq) => ({ seq, data: chunk(seq) }));
  return {
    meta: { dialect: 'openai-chat', flavor: undefined, headers: {}, model: 'm', createdAt: 0 },
    frames: (async function* () {
      yield* frames;
    })(),
    status: () => status,
    endSeq: () => endSeq,
  };
}

async function read(sub: ResumeSubscription, after: number) {
  const text = await new Response(resumedBody(sub, 'abc', after, 1000, () => {})).text();
  return { text, decoded: decodeChunks(openAiChat, [new TextEncoder().encode(text)]) };
}

describe('resumedBody: never silently short', () => {
  it('ends with the dialect error "resume data lost" at a hole in the sequence numbers', async () => {
    const { text, decoded } = await read(subscription([3, 4, 7, 8], 'complete', 8), 2);
    assert.match(text, /id: abc\.4\n/);
    assert.doesNotMatch(text, /abc\.7/, 'nothing after the hole');
    assert.match(text, /resume data lost: event 5/);
    assert.equal(decoded.complete, false);
    assert.ok(decoded.events.some((e) => e.type === 'error'));
  });

  it('ends with that error when the first frame is not the one after the client id', async () => {
    const { text, decoded } = await read(subscription([5, 6], 'complete', 6), 2);
    assert.match(text, /resume data lost: event 3/);
    assert.equal(decoded.complete, false);
  });

  it('ends with that error when the producer wrote more than was read before its ending', async () => {
    const { text, decoded } = await read(subscription([3, 4], 'complete', 9), 2);
    assert.match(text, /id: abc\.4\n/);
    assert.match(text, /resume data lost: event 5/);
    assert.equal(decoded.complete, false);
  });

  it('passes a contiguous replay through untouched', async () => {
    const { text } = await read(subscription([3, 4, 5], 'complete', 5), 2);
    assert.doesNotMatch(text, /error/);
    assert.match(text, /id: abc\.5\n/);
  });
});

describe('resumedBody: a Responses stream’s ending numbered on from its last event', () => {
  it('gives the cancelled-stream error the sequence_number after the last replayed one', async () => {
    const delta = (seq: number) =>
      JSON.stringify({
        type: 'response.output_text.delta',
        sequence_number: seq + 3,
        item_id: 'msg_1',
        output_index: 0,
        content_index: 0,
        delta: `t${seq}`,
        logprobs: [],
      });
    const frames: StoredFrame[] = [5, 6].map((seq) => ({
      seq,
      data: delta(seq),
      kind: 'response.output_text.delta',
    }));
    const sub: ResumeSubscription = {
      meta: { dialect: 'openai-responses', flavor: undefined, headers: {}, model: 'm', createdAt: 0 },
      frames: (async function* () {
        yield* frames;
      })(),
      status: () => 'cancelled',
      endSeq: () => undefined,
    };
    const text = await new Response(resumedBody(sub, 'abc', 4, 1000, () => {})).text();
    const payloads = text
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => JSON.parse(line.slice(6)) as { type: string; sequence_number: number });
    assert.deepEqual(
      payloads.map((p) => [p.type, p.sequence_number]),
      [
        ['response.output_text.delta', 8],
        ['response.output_text.delta', 9],
        ['error', 10],
      ],
    );
    assert.match(text, /id: abc\.7\ndata: \{"type":"error"/);
  });
});
