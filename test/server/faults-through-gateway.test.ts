import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { HttpError } from '../../src/client/client-errors.ts';
import { complete } from '../../src/client/token-stream.ts';
import { DIALECT_IDS, type DialectId } from '../../src/dialects/dialect.ts';
import { getDialect } from '../../src/dialects/registry.ts';
import type { ChatRequest } from '../../src/events/chat-request.ts';
import type { Result } from '../../src/events/result.ts';
import { startGateway, type TestGateway } from '../helpers/gateway.ts';

/**
 * Each simulator fault, through the gateway, for a client of each dialect: what the client gets.
 * Transport faults the gateway absorbs give the same answer as a clean stream; upstream failures reach
 * the client as its own dialect's error (incomplete, never a clean finish); HTTP errors pass through.
 */
type Expect =
  | 'same-text'
  | 'server-error'
  | { status: number }
  | { check: (result: Result, dialect: DialectId) => void };

const SSE_DIALECTS = new Set<DialectId>([
  'openai-chat',
  'openai-completions',
  'llamacpp',
  'tgi',
  'openai-responses',
  'anthropic-messages',
]);
const OPENAI = new Set<DialectId>(['openai-chat', 'openai-completions']);

const CASES: [string, Expect | ((dialect: DialectId) => Expect)][] = [
  ['bytewise', 'same-text'],
  ['split=random', 'same-text'],
  ['split-utf8', 'same-text'],
  ['batch=3', 'same-text'],
  ['keepalive=5,tps=200', 'same-text'],
  ['slow-headers=150', 'same-text'],
  ['cumulative', 'same-text'],
  ['buffer=20', 'same-text'],
  ['tps=400', 'same-text'],
  ['ttft=100', 'same-text'],
  ['content-type=text/plain', 'same-text'],
  ['stall=300,stall-after=3', 'same-text'],
  // OpenAI and Ollama streams carry counts only in usage fields; llama.cpp and TGI events always count tokens.
  // A Messages stream always carries `output_tokens`, as Anthropic's does: the gateway writes
  // its own estimate there, so its client reads a count (the gateway's metrics say `source="estimate"`).
  [
    'no-usage',
    {
      check: (result, dialect) =>
        assert.equal(
          result.metrics.outputTokensEstimated,
          OPENAI.has(dialect) || dialect.startsWith('ollama') || dialect === 'openai-responses',
        ),
    },
  ],
  // Only the OpenAI routes can finish without their sentinel; elsewhere the terminal event *is* the end.
  ['no-done', (dialect) => (OPENAI.has(dialect) ? 'same-text' : 'server-error')],
  ['cut-after=3', 'server-error'],
  ['error-after=3', 'server-error'],
  ['invalid-utf8', 'server-error'],
  ['framing=ndjson', (dialect) => (SSE_DIALECTS.has(dialect) ? 'server-error' : 'same-text')],
  ['framing=sse', (dialect) => (SSE_DIALECTS.has(dialect) ? 'same-text' : 'server-error')],
  // The leak happens where an answer ends on its own, so this one asks for more tokens than it will use.
  ['control-tokens|natural', { check: (result) => assert.match(result.text, /<\|eot_id\|>/) }],
  ['status=429', { status: 429 }],
  ['status=400', { status: 400 }],
  ['status=503', { status: 503 }],
];

describe('simulator faults through the gateway, for a client of each dialect', () => {
  let g: TestGateway;
  const reference = new Map<DialectId, Result>();
  const request: ChatRequest = { model: 'sim', prompt: 'Say something about rivers', maxTokens: 12 };
  const target = (dialect: DialectId, fault?: string) => ({
    url: `${g.url}${getDialect(dialect).paths[0]}`,
    dialect,
    request: fault?.endsWith('|natural') === true ? { ...request, maxTokens: 500 } : request,
    headers: fault === undefined ? {} : { 'x-tokenwire-fault': fault.replace('|natural', '') },
  });

  before(async () => {
    g = await startGateway({
      sim: { timing: { tokensPerSecond: 3000, loadMs: 0 } },
      gateway: { keepaliveMs: 50 },
    });
    for (const dialect of DIALECT_IDS) reference.set(dialect, await complete(target(dialect)));
  });
  after(() => g?.close());

  for (const [fault, rule] of CASES) {
    it(`${fault}`, async () => {
      for (const dialect of DIALECT_IDS) {
        const expect = typeof rule === 'function' ? rule(dialect) : rule;
        const clean = reference.get(dialect)!;
        assert.equal(clean.complete, true);
        if (typeof expect === 'object' && 'status' in expect) {
          await assert.rejects(complete(target(dialect, fault)), (error: unknown) => {
            assert.ok(error instanceof HttpError, `${dialect}: ${error}`);
            assert.equal(error.status, expect.status, dialect);
            return true;
          });
          continue;
        }
        const result = await complete(target(dialect, fault), { timeouts: { totalMs: 10000 } });
        if (expect === 'same-text') {
          assert.equal(result.complete, true, `${dialect}: ${result.error?.message}`);
          assert.equal(result.text, clean.text, dialect);
          assert.equal(result.finishReason, clean.finishReason, dialect);
        } else if (expect === 'server-error') {
          assert.equal(result.complete, false, dialect);
          assert.equal(
            result.incomplete,
            'server-error',
            `${dialect}: ${result.incomplete} ${result.error?.message}`,
          );
          assert.ok(
            clean.text.startsWith(result.text),
            `${dialect}: the partial text is a prefix of the answer`,
          );
        } else {
          expect.check(result, dialect);
        }
      }
    });
  }
});
