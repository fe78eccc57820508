import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { serve } from '../../src/node/serve.ts';
import { createGateway } from '../../src/server/create-gateway.ts';
import { readFixture } from '../helpers/paths.ts';
import { paced, scriptServer } from '../helpers/script-server.ts';

/**
 * "TGI output is not TGI's", through the gateway: a TGI client (`/generate_stream`) in front
 * of an OpenAI-chat upstream gets one token event per generated token with the details on the last,
 * the upstream's log probabilities where it asked (`top_n_tokens`), `null` where nothing is known, the
 * stop-sequence finish and its seed; its greedy `do_sample: false` reaches the upstream as temperature 0.
 */

interface Choice {
  content?: string;
  logprobs?: unknown;
  finish?: string;
  stopReason?: string | null;
}

/** A vLLM-like chat chunk. */
function chunk(choice: Choice, usage: unknown = null): string {
  const choices =
    choice.content === undefined && choice.finish === undefined
      ? []
      : [
          {
            index: 0,
            delta: choice.content === undefined ? {} : { content: choice.content },
            logprobs: choice.logprobs ?? null,
            finish_reason: choice.finish ?? null,
            ...(choice.finish === undefined ? {} : { stop_reason: choice.stopReason ?? null }),
          },
        ];
  return `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1767225600, model: 'm', choices, usage })}\n\n`;
}

const withLogprobs = (token: string, logprob: number, alternative: string) => ({
  content: [
    {
      token,
      logprob,
      bytes: [...new TextEncoder().encode(token)],
      top_logprobs: [
        { token, logprob, bytes: null },
        { token: alternative, logprob: logprob - 1, bytes: null },
      ],
    },
  ],
});

async function throughGateway(
  upstreamWire: string,
  body: unknown,
  dialect: 'openai-chat' | 'llamacpp' = 'openai-chat',
  pace: 'per-chunk' | 'one-write' = 'per-chunk',
) {
  const upstream = await scriptServer({
    headers: { 'content-type': 'text/event-stream' },
    // One read per chunk (each token is written when its read is over), or the whole stream in one.
    steps: pace === 'per-chunk' ? paced(upstreamWire, 5) : [{ write: upstreamWire }],
  });
  const gateway = createGateway({
    upstreams: [{ name: 'vllm', url: upstream.url, dialects: [dialect] }],
  });
  const served = await serve(gateway.fetch);
  try {
    const response = await fetch(`${served.url}/generate_stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    assert.equal(response.status, 200);
    const wire = await response.text();
    const events = wire
      .split('\n')
      .filter((line) => line.startsWith('data:'))
      .map((line) => JSON.parse(line.slice(5)) as Record<string, unknown>);
    const sent = JSON.parse(upstream.requests[0]!.body) as Record<string, unknown>;
    return { events, sent, wire };
  } finally {
    await gateway.close();
    await served.close();
    await upstream.close();
  }
}

describe('a TGI client in front of an OpenAI-chat upstream', () => {
  it('gets one event per token, details on the last, the upstream’s logprobs as token.logprob and top_tokens', async () => {
    const upstreamWire =
      chunk({ content: 'Hello', logprobs: withLogprobs('Hello', -0.25, 'Hi') }) +
      chunk({ content: ' world', logprobs: withLogprobs(' world', -0.5, ' there') }) +
      chunk({ content: '!', logprobs: withLogprobs('!', -1, '.') }) +
      chunk({ content: '', finish: 'stop', stopReason: '###' }) +
      chunk({}, { prompt_tokens: 5, total_tokens: 8, completion_tokens: 3 }) +
      'data: [DONE]\n\n';
    const { events, sent } = await throughGateway(
      upstreamWire,
      {
        inputs: 'Say hello',
        parameters: {
          max_new_tokens: 16,
          do_sample: false,
          seed: 7,
          top_n_tokens: 2,
          stop: ['###'],
          details: true,
        },
      },
      'openai-chat',
      'one-write',
    );
    // The request: greedy, the seed, the top-2 log probabilities.
    assert.equal(sent.temperature, 0);
    assert.equal(sent.seed, 7);
    assert.equal(sent.logprobs, true);
    assert.equal(sent.top_logprobs, 2);
    assert.deepEqual(sent.stop, ['###']);
    // The answer: 3 events for generated_tokens 3, no empty or end-of-sequence event.
    assert.equal(events.length, 3);
    assert.deepEqual(events[0], {
      index: 1,
      token: { id: null, text: 'Hello', logprob: -0.25, special: false },
      top_tokens: [
        { id: null, text: 'Hello', logprob: -0.25, special: false },
        { id: null, text: 'Hi', logprob: -1.25, special: false },
      ],
      generated_text: null,
      details: null,
    });
    assert.deepEqual(events[2], {
      index: 3,
      token: { id: null, text: '!', logprob: -1, special: false },
      top_tokens: [
        { id: null, text: '!', logprob: -1, special: false },
        { id: null, text: '.', logprob: -2, special: false },
      ],
      generated_text: 'Hello world!',
      details: { finish_reason: 'stop_sequence', generated_tokens: 3, seed: 7, input_length: 5 },
    });
  });

  it('without logprobs: null ids and logprobs, never 0; an end of sequence is not invented as a token', async () => {
    const upstreamWire =
      chunk({ content: 'Hi' }) +
      chunk({ content: ' there' }) +
      chunk({ finish: 'stop' }) +
      chunk({}, { prompt_tokens: 4, total_tokens: 6, completion_tokens: 2 }) +
      'data: [DONE]\n\n';
    const { events, sent, wire } = await throughGateway(upstreamWire, { inputs: 'hi' });
    // No parameters at all: TGI's greedy default.
    assert.equal(sent.temperature, 0);
    assert.equal(sent.logprobs, undefined);
    assert.doesNotMatch(wire, /eot_id|128009|"id":0|"logprob":0\.0/);
    // The finish came a read after the last token, which was written then: the end of sequence is its
    // own special event, as on TGI, but with no text or id (the upstream named neither).
    assert.deepEqual(events, [
      {
        index: 1,
        token: { id: null, text: 'Hi', logprob: null, special: false },
        generated_text: null,
        details: null,
      },
      {
        index: 2,
        token: { id: null, text: ' there', logprob: null, special: false },
        generated_text: null,
        details: null,
      },
      {
        index: 3,
        token: { id: null, text: '', logprob: null, special: true },
        generated_text: 'Hi there',
        details: { finish_reason: 'eos_token', generated_tokens: 2, seed: null, input_length: 4 },
      },
    ]);
  });

  it('writes each token when its upstream read is over, never waiting for the next token', async () => {
    // The upstream writes one token and then nothing more: a token held for the next would never come.
    const upstream = await scriptServer({
      headers: { 'content-type': 'text/event-stream' },
      steps: [{ write: chunk({ content: 'Hi' }) }, { hang: true }],
    });
    const gateway = createGateway({
      upstreams: [{ name: 'vllm', url: upstream.url, dialects: ['openai-chat'] }],
    });
    const served = await serve(gateway.fetch);
    try {
      const response = await fetch(`${served.url}/generate_stream`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ inputs: 'hi' }),
        // Only a guard against hanging forever, never a latency bound.
        signal: AbortSignal.timeout(20_000),
      });
      const reader = response.body!.getReader();
      let seen = '';
      while (!seen.includes('"text":"Hi"')) {
        const { value, done } = await reader.read();
        assert.equal(done, false, seen);
        seen += new TextDecoder().decode(value);
      }
      assert.match(seen, /"generated_text":null,"details":null/);
      await reader.cancel();
    } finally {
      await gateway.close();
      await served.close();
      await upstream.close();
    }
  });

  it('puts the details on the last token when max_new_tokens makes it the last, whatever the reads', async () => {
    const upstreamWire =
      chunk({ content: 'Hi' }) +
      chunk({ content: ' there' }) +
      chunk({ finish: 'length' }) +
      chunk({}, { prompt_tokens: 4, total_tokens: 6, completion_tokens: 2 }) +
      'data: [DONE]\n\n';
    const { events } = await throughGateway(upstreamWire, {
      inputs: 'hi',
      parameters: { max_new_tokens: 2 },
    });
    assert.equal(events.length, 2);
    assert.deepEqual(events[1], {
      index: 2,
      token: { id: null, text: ' there', logprob: null, special: false },
      generated_text: 'Hi there',
      details: { finish_reason: 'length', generated_tokens: 2, seed: null, input_length: 4 },
    });
  });

  it('writes the tokens before a mid-stream error, then TGI’s error event', async () => {
    const upstreamWire =
      chunk({ content: 'Hi' }) +
      chunk({ content: ' there' }) +
      'data: {"error": {"message": "boom", "type": "InternalServerError", "param": null, "code": 500}}\n\n' +
      'data: [DONE]\n\n';
    const { events } = await throughGateway(upstreamWire, { inputs: 'hi' });
    assert.deepEqual(
      events.map((event) => (event.token as { text?: string } | undefined)?.text ?? event.error_type),
      ['Hi', ' there', 'generation'],
    );
    assert.equal(events[1]!.details, null);
  });
});

describe('a TGI client in front of a real llama-server (b10108 captures)', () => {
  const capture = (name: string) =>
    new TextDecoder().decode(readFixture(`real-captures/llamacpp-b10108/${name}.sse`));

  it('gets the server’s token ids, log probabilities and top alternatives (n_probs), one event per token', async () => {
    const { events, sent } = await throughGateway(
      capture('n06-completion-stream-nprobs'),
      {
        inputs: 'Once upon a time',
        parameters: { max_new_tokens: 8, do_sample: false, seed: 1, top_n_tokens: 2, details: true },
      },
      'llamacpp',
    );
    assert.equal(sent.n_probs, 2);
    assert.equal(sent.temperature, 0);
    assert.equal(sent.seed, 1);
    assert.equal(sent.n_predict, 8);
    // tokens_predicted 8: 8 events.
    assert.equal(events.length, 8);
    assert.deepEqual(events[0], {
      index: 1,
      token: { id: 5244, text: ' Work', logprob: -6.560988426208496, special: false },
      top_tokens: [
        { id: 5244, text: ' Work', logprob: -6.560988426208496, special: false },
        { id: 2357, text: 'icro', logprob: -6.593782424926758, special: false },
      ],
      generated_text: null,
      details: null,
    });
    const ids = events.map((event) => (event.token as { id: unknown }).id);
    assert.deepEqual(ids.slice(0, 4), [5244, 1588, 17814, 3786]);
    assert.ok(ids.every((id) => typeof id === 'number'));
    assert.deepEqual(events.at(-1)!.details, {
      finish_reason: 'length',
      generated_tokens: 8,
      seed: 1,
      input_length: 5,
    });
  });

  it('reports its stop word (stop_type "word") as stop_sequence, with as many events as tokens_predicted', async () => {
    const { events } = await throughGateway(
      capture('n02-completion-stream-stopword'),
      { inputs: 'Once upon a time', parameters: { max_new_tokens: 16, stop: ['April'], seed: 1 } },
      'llamacpp',
      // The final event in the same read as the last token; a later read would add an empty event.
      'one-write',
    );
    assert.equal(events.length, 4);
    const last = events.at(-1) as { token: unknown; generated_text: unknown; details: unknown };
    // llama-server sends each token's id (`tokens`) unasked; no log probability was asked for.
    assert.deepEqual(last.token, { id: 3786, text: ' ', logprob: null, special: false });
    assert.equal(last.generated_text, ' Work Pr proto ');
    assert.deepEqual(last.details, {
      finish_reason: 'stop_sequence',
      generated_tokens: 4,
      seed: 1,
      input_length: 5,
    });
  });
});
