import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { DIALECT_IDS } from '../../src/dialects/dialect.ts';
import { dialectForPath } from '../../src/dialects/registry.ts';
import { createGuardedGateway, type GuardedGateway } from '../../src/server/guard/guard-gateway.ts';
import { encodeEvents } from '../helpers/decode.ts';

/**
 * Fuzzing the gateway's request parsing in-process: arbitrary paths, methods, headers and bodies (random
 * bytes, random JSON, valid requests with fields replaced by anything). Never a 5xx, never an uncaught
 * exception or unhandled rejection; a refused request always gets a 4xx with a JSON body.
 */

const MAX_BODY = 4096;

/** An upstream that answers any request with a tiny valid stream in its dialect: only parsing is under test. */
function stubUpstream(request: Request): Response {
  const dialect = dialectForPath(new URL(request.url).pathname)!;
  const text = encodeEvents(dialect, [
    { type: 'start', model: 'sim' },
    { type: 'text', text: 'ok' },
    { type: 'finish', reason: 'stop', raw: 'stop' },
  ]);
  return new Response(text, { headers: dialect.responseHeaders() });
}

let guarded: GuardedGateway;
const escaped: unknown[] = [];
const onEscape = (error: unknown) => escaped.push(error);
before(() => {
  process.on('uncaughtException', onEscape);
  process.on('unhandledRejection', onEscape);
  guarded = createGuardedGateway({
    upstreams: [
      {
        name: 'stub',
        url: 'http://stub.internal',
        dialects: DIALECT_IDS,
        fetch: stubUpstream,
        models: ['sim'],
      },
    ],
    keepaliveMs: 0,
    maxBodyBytes: MAX_BODY,
  });
});
after(async () => {
  await guarded.gateway.close();
  process.off('uncaughtException', onEscape);
  process.off('unhandledRejection', onEscape);
});

const PATHS = [
  '/v1/chat/completions',
  '/chat/completions',
  '/v1/completions',
  '/api/chat',
  '/api/generate',
  '/completion',
  '/completions',
  '/generate_stream',
  '/',
  '/v1/models',
  '/api/tags',
  '/metrics',
  '/healthz',
  '/nope',
];

const BASES: Record<string, Record<string, unknown>> = {
  '/v1/chat/completions': {
    model: 'sim',
    stream: true,
    messages: [{ role: 'user', content: 'hi' }],
    max_tokens: 3,
  },
  '/v1/completions': { model: 'sim', stream: true, prompt: 'hi', max_tokens: 3 },
  '/api/chat': { model: 'sim', messages: [{ role: 'user', content: 'hi' }], options: { num_predict: 3 } },
  '/api/generate': { model: 'sim', prompt: 'hi', options: { num_predict: 3 } },
  '/completion': { prompt: 'hi', stream: true, n_predict: 3 },
  '/generate_stream': { inputs: 'hi', parameters: { max_new_tokens: 3 } },
};

const FIELDS = [
  'model',
  'messages',
  'prompt',
  'stream',
  'stream_options',
  'max_tokens',
  'max_completion_tokens',
  'temperature',
  'stop',
  'tools',
  'tool_choice',
  'options',
  'inputs',
  'parameters',
  'n_predict',
  'format',
  'think',
  'images',
  'suffix',
  'logprobs',
  'n',
  'seed',
];

/** Small values of every JSON kind, nested (numbers stay small: the stub makes length irrelevant anyway). */
const jsonValue = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constant(null),
    fc.boolean(),
    fc.integer({ min: -3, max: 1e6 }),
    fc.double({ noNaN: false }),
    fc.string({ maxLength: 20 }),
    fc.constantFrom('', 'user', 'assistant', 'system', 'tool', '\r\n', '\u0000', 'sim@cut-after=1', '[DONE]'),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(
      fc.oneof(
        fc.constantFrom('role', 'content', 'type', 'name', 'arguments', 'include_usage'),
        fc.string({ maxLength: 8 }),
      ),
      tie('value'),
      { maxKeys: 4 },
    ),
  ),
})).value;

const headerValue = fc.stringMatching(/^[\x21-\x7e]([\x20-\x7e]{0,60}[\x21-\x7e])?$/);

const headers = fc.record(
  {
    'content-type': fc.constantFrom(
      'application/json',
      'text/plain',
      'application/x-www-form-urlencoded',
      'garbage',
      '',
    ),
    'last-event-id': fc.oneof(
      headerValue,
      fc.constantFrom('abc.1', 'deadbeefdeadbeef.0', 'x.999999999999999999999', '.', 'a.'),
    ),
    accept: fc.constantFrom(
      'text/event-stream',
      'text/plain',
      'application/json',
      '*/*',
      'application/x-ndjson',
      'x',
    ),
    'content-length': fc.constantFrom('0', '-1', 'abc', '1e9', '99999999999999999999', '10'),
    'x-request-id': headerValue,
    traceparent: fc.oneof(
      headerValue,
      fc.constant('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'),
    ),
  },
  { requiredKeys: [] },
);

const body = fc.oneof(
  fc.uint8Array({ maxLength: 300 }),
  fc.json({ maxDepth: 3 }).map((text) => new TextEncoder().encode(text)),
  fc
    .record({
      base: fc.constantFrom(...Object.keys(BASES)),
      changes: fc.dictionary(
        fc.oneof(fc.constantFrom(...FIELDS), fc.string({ maxLength: 10 })),
        fc.option(jsonValue),
        { maxKeys: 4 },
      ),
    })
    .map(({ base, changes }) => {
      const out: Record<string, unknown> = { ...BASES[base] };
      for (const [key, value] of Object.entries(changes)) {
        if (value === null) delete out[key];
        else out[key] = value;
      }
      return new TextEncoder().encode(JSON.stringify(out));
    }),
);

async function send(
  path: string,
  method: string,
  headerSet: Record<string, string>,
  bytes: Uint8Array | undefined,
  query = '',
): Promise<Response> {
  const init: RequestInit = { method, headers: headerSet };
  if (bytes !== undefined && method !== 'GET' && method !== 'HEAD') init.body = bytes;
  return guarded.fetch(new Request(`http://gw.test${path}${query}`, init));
}

/**
 * A refused request gets a JSON error, except where the client asked for plain-text output (`Accept:
 * text/plain` or `?format=text`, the gateway's curl-friendly mode): then a plain-text error line.
 */
async function checkResponse(response: Response, what: string, wantsText = false): Promise<void> {
  assert.ok(response.status < 500, `${what}: ${response.status} ${await response.clone().text()}`);
  const type = response.headers.get('content-type') ?? '';
  const text = await response.text();
  if (response.status < 400) return; // a request that was valid after all: its stream ended (the stub is short)
  if (wantsText && type.startsWith('text/plain')) {
    assert.match(text, /error/, what);
    return;
  }
  // 404/405 of routes that are not the API (no route, wrong method) may be bare; API errors are JSON.
  if (response.status === 404 || response.status === 405) {
    if (/json/.test(type)) JSON.parse(text);
    return;
  }
  assert.match(type, /json/, `${what}: ${response.status} ${type}`);
  JSON.parse(text);
}

describe('gateway request fuzzing', () => {
  it('random paths, methods, headers and bodies: never a 5xx, always a JSON error for a refused request', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...PATHS),
        fc.constantFrom('POST', 'POST', 'POST', 'GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'),
        headers,
        fc.option(body, { nil: undefined }),
        fc.constantFrom('', '?', '?format=text', '?stream=true&x=%ZZ', '?a=b#frag'),
        async (path, method, headerSet, bytes, query) => {
          const response = await send(path, method, headerSet, bytes, query);
          const wantsText = headerSet.accept === 'text/plain' || query.includes('format=text');
          await checkResponse(response, `${method} ${path}${query} ${JSON.stringify(headerSet)}`, wantsText);
        },
      ),
      { numRuns: 400 },
    );
    assert.deepEqual(escaped, []);
  });

  it('valid requests with fields replaced by anything: a 200 stream or a 4xx JSON error naming the problem', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...Object.keys(BASES)),
        fc.dictionary(fc.constantFrom(...FIELDS), fc.option(jsonValue), { minKeys: 1, maxKeys: 3 }),
        async (path, changes) => {
          const out: Record<string, unknown> = { ...BASES[path] };
          for (const [key, value] of Object.entries(changes)) {
            if (value === null) delete out[key];
            else out[key] = value;
          }
          const response = await send(
            path,
            'POST',
            { 'content-type': 'application/json' },
            new TextEncoder().encode(JSON.stringify(out)),
          );
          assert.ok(
            response.status === 200 || (response.status >= 400 && response.status < 500),
            `${path} ${JSON.stringify(out)}: ${response.status}`,
          );
          await checkResponse(response, `${path} ${JSON.stringify(out)}`);
        },
      ),
      { numRuns: 400 },
    );
    assert.deepEqual(escaped, []);
  });

  it('any body larger than the limit gets a 413 JSON error, whatever it holds, and is not read past the limit', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('/v1/chat/completions', '/api/chat', '/generate_stream', '/completion'),
        fc.integer({ min: MAX_BODY + 1, max: MAX_BODY * 4 }),
        fc.integer({ min: 0, max: 255 }),
        async (path, size, fill) => {
          let pulled = 0;
          const stream = new ReadableStream<Uint8Array>({
            pull(controller) {
              if (pulled >= size) {
                controller.close();
                return;
              }
              const chunk = new Uint8Array(Math.min(1024, size - pulled)).fill(fill);
              pulled += chunk.length;
              controller.enqueue(chunk);
            },
          });
          const response = await guarded.fetch(
            new Request(`http://gw.test${path}`, {
              method: 'POST',
              body: stream,
              duplex: 'half',
            } as RequestInit),
          );
          assert.equal(response.status, 413);
          JSON.parse(await response.text());
          assert.ok(pulled <= MAX_BODY + 2048, `read ${pulled} bytes of a ${size}-byte body`);
        },
      ),
      { numRuns: 60 },
    );
  });
});
