import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DialectId } from '../../src/dialects/dialect.ts';
import { serve } from '../../src/node/serve.ts';
import { createGateway } from '../../src/server/create-gateway.ts';
import { readFixture } from '../helpers/paths.ts';
import { type RecordedRequest, type ScriptedResponse, scriptServer } from '../helpers/script-server.ts';

/**
 * What a TGI, Ollama or llama.cpp client's request becomes on its way
 * to a llama-server (scripted here, answering as b10108 does on each route; the upstream's dialects as
 * `serve --upstream` probes them), recorded byte for byte as the upstream received it.
 */

const SCHEMA = {
  type: 'object',
  properties: { a: { type: 'integer' } },
  required: ['a'],
  additionalProperties: false,
};

/** llama-server b10108's answer on each route (short, but its shape). */
function llamaServerAnswer(request: RecordedRequest): ScriptedResponse {
  const headers = { 'content-type': 'text/event-stream' };
  if (request.path === '/completion') {
    return {
      headers,
      steps: [
        {
          write:
            'data: {"index":0,"content":"{}","tokens":[90],"stop":false,"id_slot":-1,"tokens_predicted":1,"tokens_evaluated":2}\n\n' +
            'data: {"index":0,"content":"","tokens":[],"id_slot":0,"stop":true,"model":"tiny","tokens_predicted":1,"tokens_evaluated":2,"has_new_line":false,"truncated":false,"stop_type":"eos","stopping_word":"","tokens_cached":2}\n\n',
        },
      ],
    };
  }
  if (request.path === '/v1/completions') {
    return {
      headers,
      steps: [
        {
          write:
            'data: {"choices":[{"text":"{}","index":0,"logprobs":null,"finish_reason":null}],"created":1796533508,"model":"tiny","system_fingerprint":"b10108-0a50d99","object":"text_completion","id":"chatcmpl-a"}\n\n' +
            'data: {"choices":[{"text":"","index":0,"logprobs":null,"finish_reason":"stop"}],"created":1796533508,"model":"tiny","system_fingerprint":"b10108-0a50d99","object":"text_completion","usage":{"completion_tokens":1,"prompt_tokens":2,"total_tokens":3},"id":"chatcmpl-a"}\n\n' +
            'data: [DONE]\n\n',
        },
      ],
    };
  }
  return {
    headers,
    steps: [
      {
        write:
          'data: {"choices":[{"finish_reason":null,"index":0,"delta":{"role":"assistant","content":null}}],"created":1,"id":"chatcmpl-b","model":"tiny","system_fingerprint":"b10108-0a50d99","object":"chat.completion.chunk"}\n\n' +
          'data: {"choices":[{"finish_reason":null,"index":0,"delta":{"content":"{}"}}],"created":1,"id":"chatcmpl-b","model":"tiny","system_fingerprint":"b10108-0a50d99","object":"chat.completion.chunk"}\n\n' +
          'data: {"choices":[{"finish_reason":"stop","index":0,"delta":{}}],"created":1,"id":"chatcmpl-b","model":"tiny","system_fingerprint":"b10108-0a50d99","object":"chat.completion.chunk"}\n\n' +
          'data: {"choices":[],"created":1,"id":"chatcmpl-b","model":"tiny","system_fingerprint":"b10108-0a50d99","object":"chat.completion.chunk","usage":{"completion_tokens":1,"prompt_tokens":2,"total_tokens":3}}\n\n' +
          'data: [DONE]\n\n',
      },
    ],
  };
}

interface Exchange {
  status: number;
  headers: Headers;
  text: string;
  /** What the upstream received: its path and body (none when the gateway refused). */
  sent: { path: string; body: Record<string, unknown> } | undefined;
}

/** One request through a gateway in front of a scripted llama-server. */
async function exchange(
  path: string,
  body: unknown,
  dialects: readonly DialectId[] = ['openai-chat', 'openai-completions', 'llamacpp'],
  answer: (request: RecordedRequest) => ScriptedResponse = llamaServerAnswer,
): Promise<Exchange> {
  const upstream = await scriptServer(answer);
  const gateway = createGateway({
    upstreams: [{ name: 'llama-server', url: upstream.url, dialects, anyModelName: true }],
  });
  const served = await serve(gateway.fetch);
  try {
    const response = await fetch(`${served.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    const first = upstream.requests[0];
    return {
      status: response.status,
      headers: response.headers,
      text,
      sent:
        first === undefined
          ? undefined
          : { path: first.path, body: JSON.parse(first.body) as Record<string, unknown> },
    };
  } finally {
    await gateway.close();
    await served.close();
    await upstream.close();
  }
}

describe('a JSON schema reaches llama-server’s completion routes as json_schema', () => {
  it('TGI grammar {type: json}: /v1/completions gets json_schema (what the route reads)', async () => {
    const result = await exchange('/generate_stream', {
      inputs: 'hi',
      parameters: { max_new_tokens: 8, grammar: { type: 'json', value: SCHEMA } },
    });
    assert.equal(result.status, 200, result.text);
    assert.equal(result.sent?.path, '/v1/completions');
    assert.deepEqual(result.sent?.body.json_schema, SCHEMA);
  });

  it('Ollama /api/generate format (a schema): /v1/completions gets json_schema', async () => {
    const result = await exchange('/api/generate', { model: 'tiny', prompt: 'hi', format: SCHEMA });
    assert.equal(result.status, 200, result.text);
    assert.equal(result.sent?.path, '/v1/completions');
    assert.deepEqual(result.sent?.body.json_schema, SCHEMA);
  });

  it('Ollama format "json": /v1/completions gets the schema of any object', async () => {
    const result = await exchange('/api/generate', { model: 'tiny', prompt: 'hi', format: 'json' });
    assert.equal(result.status, 200, result.text);
    assert.deepEqual(result.sent?.body.json_schema, { type: 'object' });
  });

  it('a native json_schema toward an upstream that speaks only /v1/completions', async () => {
    const result = await exchange('/completion', { prompt: 'hi', n_predict: 8, json_schema: SCHEMA }, [
      'openai-completions',
    ]);
    assert.equal(result.status, 200, result.text);
    assert.deepEqual(result.sent?.body.json_schema, SCHEMA);
  });
});

describe('the repetition penalty reaches llama-server as repeat_penalty', () => {
  it('TGI parameters.repetition_penalty: /v1/completions gets repeat_penalty', async () => {
    const result = await exchange('/generate_stream', {
      inputs: 'hi',
      parameters: { max_new_tokens: 8, repetition_penalty: 1.3 },
    });
    assert.equal(result.status, 200, result.text);
    assert.equal(result.sent?.path, '/v1/completions');
    assert.equal(result.sent?.body.repeat_penalty, 1.3);
  });

  it('Ollama options.repeat_penalty: /v1/chat/completions gets repeat_penalty', async () => {
    const result = await exchange('/api/chat', {
      model: 'tiny',
      messages: [{ role: 'user', content: 'hi' }],
      options: { repeat_penalty: 1.3 },
    });
    assert.equal(result.status, 200, result.text);
    assert.equal(result.sent?.path, '/v1/chat/completions');
    assert.equal(result.sent?.body.repeat_penalty, 1.3);
  });
});

describe('TGI answers say what the request said', () => {
  it('non-stream /generate carries the request’s seed in details', async () => {
    const result = await exchange('/generate', {
      inputs: 'hi',
      parameters: { max_new_tokens: 8, seed: 1, do_sample: true, details: true },
    });
    assert.equal(result.status, 200, result.text);
    const answer = JSON.parse(result.text) as { details: { seed: unknown } };
    assert.equal(answer.details.seed, 1);
  });

  it('decoder_input_details: true has no counterpart: a 400 naming it, nothing sent', async () => {
    const result = await exchange('/generate', {
      inputs: 'hi',
      parameters: { max_new_tokens: 8, decoder_input_details: true },
    });
    assert.equal(result.status, 400);
    assert.match(result.text, /parameters\.decoder_input_details/);
    assert.equal(result.sent, undefined);
  });

  it('decoder_input_details: false (TGI’s default) is no loss', async () => {
    const result = await exchange('/generate', {
      inputs: 'hi',
      parameters: { max_new_tokens: 8, decoder_input_details: false },
    });
    assert.equal(result.status, 200, result.text);
  });
});

describe('a native multi-prompt /completion', () => {
  const wire = new TextDecoder().decode(
    readFixture('real-captures/llamacpp-b10108/n10-completion-stream-multiprompt.sse'),
  );

  it('is relayed to a llama.cpp upstream, prompts and stream as they are', async () => {
    const result = await exchange(
      '/completion',
      { prompt: ['Hello', 'Goodbye world'], n_predict: 4, stream: true },
      ['openai-chat', 'openai-completions', 'llamacpp'],
      () => ({ headers: { 'content-type': 'text/event-stream' }, steps: [{ write: wire }] }),
    );
    assert.equal(result.status, 200, result.text);
    assert.equal(result.sent?.path, '/completion');
    assert.deepEqual(result.sent?.body.prompt, ['Hello', 'Goodbye world']);
    const payloads = result.text
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => line.slice(6));
    const upstreamPayloads = wire
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => line.slice(6));
    assert.deepEqual(payloads, upstreamPayloads);
  });

  it('is refused with a 400 naming prompt where it cannot be translated', async () => {
    const result = await exchange('/completion', { prompt: ['Hello', 'Goodbye'], n_predict: 4 }, [
      'openai-completions',
    ]);
    assert.equal(result.status, 400);
    assert.match(result.text, /prompt/);
    assert.equal(result.sent, undefined);
  });
});

describe('Ollama keep_alive toward another dialect', () => {
  it('is a residency hint: dropped, named in x-tokenwire-dropped-params, not sent', async () => {
    const result = await exchange('/api/chat', {
      model: 'tiny',
      messages: [{ role: 'user', content: 'hi' }],
      keep_alive: '5m',
      stream: false,
    });
    assert.equal(result.status, 200, result.text);
    assert.equal(result.headers.get('x-tokenwire-dropped-params'), 'keep_alive');
    assert.equal(result.sent?.body.keep_alive, undefined);
  });

  it('a hint does not excuse a real loss: options.mirostat is still a 400', async () => {
    const result = await exchange('/api/chat', {
      model: 'tiny',
      messages: [{ role: 'user', content: 'hi' }],
      keep_alive: '5m',
      options: { mirostat: 2 },
    });
    assert.equal(result.status, 400);
    assert.match(result.text, /options\.mirostat/);
    assert.doesNotMatch(result.text, /keep_alive/);
  });
});

describe('content parts over the gateway, toward llama-server’s chat route', () => {
  const document = {
    type: 'document',
    source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0xLjQK' },
  };

  it('an Anthropic document block: a 400 naming it, nothing sent', async () => {
    const result = await exchange('/v1/messages', {
      model: 'tiny',
      max_tokens: 8,
      messages: [{ role: 'user', content: [document, { type: 'text', text: 'summarize' }] }],
    });
    assert.equal(result.status, 400);
    assert.match(result.text, /messages\[0\]\.content\[0\] \(document\)/);
    assert.equal(result.sent, undefined);
  });

  it('with drop_params: sent without it, named in x-tokenwire-dropped-params', async () => {
    const result = await exchange('/v1/messages', {
      model: 'tiny',
      max_tokens: 8,
      stream: false,
      drop_params: true,
      messages: [{ role: 'user', content: [document, { type: 'text', text: 'summarize' }] }],
    });
    assert.equal(result.status, 200, result.text);
    assert.equal(
      decodeURIComponent(result.headers.get('x-tokenwire-dropped-params') ?? ''),
      'messages[0].content[0] (document)',
    );
    assert.deepEqual(result.sent?.body.messages, [{ role: 'user', content: 'summarize' }]);
  });

  it('an OpenAI input_audio part toward an Ollama upstream: a 400 naming it', async () => {
    const result = await exchange(
      '/v1/chat/completions',
      {
        model: 'tiny',
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'hi' },
              { type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } },
            ],
          },
        ],
      },
      ['ollama-chat'],
    );
    assert.equal(result.status, 400);
    assert.match(result.text, /messages\[0\]\.content\[1\] \(input_audio\)/);
    assert.equal(result.sent, undefined);
  });

  it('earlier thinking sent back: dropped and named, the conversation answered', async () => {
    const result = await exchange('/v1/messages', {
      model: 'tiny',
      max_tokens: 8,
      stream: false,
      messages: [
        { role: 'user', content: 'q' },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'hmm', signature: 's' },
            { type: 'text', text: 'a' },
          ],
        },
        { role: 'user', content: 'more' },
      ],
    });
    assert.equal(result.status, 200, result.text);
    assert.equal(
      decodeURIComponent(result.headers.get('x-tokenwire-dropped-params') ?? ''),
      'messages[1].content[0] (thinking)',
    );
    assert.equal(JSON.stringify(result.sent?.body.messages).includes('hmm'), false);
  });
});

describe("a bare prompt from another dialect goes to llama-server's native /completion when it is probed", () => {
  it("a TGI client's stop string comes back as stop_sequence (real capture n02: stop_type word)", async () => {
    const capture = readFixture('real-captures', 'llamacpp-b10108', 'n02-completion-stream-stopword.sse');
    const result = await exchange(
      '/generate_stream',
      { inputs: 'Once upon a time', parameters: { max_new_tokens: 16, stop: ['April'], seed: 1 } },
      // The order `serve --upstream` probes a llama-server in: /completion before /v1/completions.
      ['openai-chat', 'llamacpp', 'openai-completions'],
      () => ({ headers: { 'content-type': 'text/event-stream' }, steps: [{ write: capture }] }),
    );
    assert.equal(result.sent?.path, '/completion');
    assert.deepEqual(result.sent?.body.stop, ['April']);
    assert.match(result.text, /"finish_reason":"stop_sequence"/);
  });
});
