import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { encode } from 'gpt-tokenizer/encoding/cl100k_base';
import { ArrivalSchedule, gammaSample, seededRandom } from '../../src/bench/arrivals.ts';
import {
  BUILT_IN_PROMPTS,
  createWorkload,
  parsePrompts,
  parseTokenRange,
  syntheticPrompt,
} from '../../src/bench/workload.ts';
import { getDialect } from '../../src/dialects/registry.ts';

function meanAndCv(values: number[]): { mean: number; cv: number } {
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  const variance = values.reduce((a, b) => a + (b - mean) ** 2, 0) / values.length;
  return { mean, cv: Math.sqrt(variance) / mean };
}

describe('open-loop arrivals', () => {
  it('Poisson (burstiness 1): gaps average 1/rate with a coefficient of variation of 1', () => {
    const schedule = new ArrivalSchedule(50, 1, 7);
    const gaps = Array.from({ length: 20_000 }, () => schedule.gapMs());
    const { mean, cv } = meanAndCv(gaps);
    assert.ok(Math.abs(mean - 20) < 20 * 0.03, `mean gap ${mean} ms, want 20`);
    assert.ok(Math.abs(cv - 1) < 0.05, `cv ${cv}, want 1`);
  });

  it('burstiness is the gamma shape: CV = 1/sqrt(burstiness), same mean', () => {
    for (const burstiness of [0.25, 4]) {
      const schedule = new ArrivalSchedule(10, burstiness, 3);
      const { mean, cv } = meanAndCv(Array.from({ length: 20_000 }, () => schedule.gapMs()));
      assert.ok(Math.abs(mean - 100) < 100 * 0.05, `burstiness ${burstiness}: mean ${mean}`);
      assert.ok(Math.abs(cv - 1 / Math.sqrt(burstiness)) < 0.08, `burstiness ${burstiness}: cv ${cv}`);
    }
  });

  it('n arrivals at rate R span about n/R seconds; infinite burstiness is even, infinite rate all at once', () => {
    const schedule = new ArrivalSchedule(100, 1, 11);
    let last = 0;
    for (let i = 0; i < 5000; i++) last = schedule.next();
    assert.ok(Math.abs(last - 50_000) < 50_000 * 0.05, `5000 arrivals took ${last} ms, want ~50 s`);
    const even = new ArrivalSchedule(4, Number.POSITIVE_INFINITY, 1);
    assert.deepEqual([even.next(), even.next(), even.next()], [0, 250, 500]);
    const burst = new ArrivalSchedule(Number.POSITIVE_INFINITY, 1, 1);
    assert.deepEqual([burst.next(), burst.next()], [0, 0]);
  });

  it('the same seed gives the same schedule; gamma samples are positive', () => {
    const a = new ArrivalSchedule(5, 0.5, 42);
    const b = new ArrivalSchedule(5, 0.5, 42);
    for (let i = 0; i < 100; i++) assert.equal(a.next(), b.next());
    const random = seededRandom(9);
    for (let i = 0; i < 1000; i++) assert.ok(gammaSample(0.3, 1, random) > 0);
    assert.throws(() => new ArrivalSchedule(0, 1, 1), /rate must be positive/);
    assert.throws(() => new ArrivalSchedule(1, 0, 1), /burstiness must be positive/);
  });
});

describe('workload', () => {
  it('synthetic prompts are N tokens (cl100k), differ per request, and are reproducible', () => {
    for (const n of [1, 16, 128, 1000]) assert.equal(encode(` ${syntheticPrompt(n, 1, 5)}`).length, n);
    assert.notEqual(syntheticPrompt(32, 1, 0), syntheticPrompt(32, 1, 1));
    assert.equal(syntheticPrompt(32, 1, 3), syntheticPrompt(32, 1, 3));
    // They differ from the start, so no prefix cache can serve one from another.
    const starts = new Set(
      Array.from({ length: 50 }, (_, i) => syntheticPrompt(32, 1, i).split(' ').slice(0, 2).join(' ')),
    );
    assert.ok(starts.size >= 45, `${starts.size} distinct starts of 50`);
  });

  it('parses token counts and ranges', () => {
    assert.deepEqual(parseTokenRange('128'), { min: 128, max: 128 });
    assert.deepEqual(parseTokenRange('100-200'), { min: 100, max: 200 });
    assert.throws(() => parseTokenRange('0'), /at least 1/);
    assert.throws(() => parseTokenRange('20-10'), /MIN <= MAX/);
    assert.throws(() => parseTokenRange('lots'), /N or MIN-MAX/);
  });

  it('reads prompt files: plain lines, JSON strings, {prompt}, {messages}, arrays of turns', () => {
    const prompts = parsePrompts(
      [
        'plain text prompt',
        '',
        '"a JSON string"',
        '{"prompt": "from prompt"}',
        '{"text": "from text"}',
        '{"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]}',
        '[{"role": "user", "content": "turns"}]',
      ].join('\n'),
    );
    assert.deepEqual(prompts, [
      'plain text prompt',
      'a JSON string',
      'from prompt',
      'from text',
      [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'hi' },
      ],
      [{ role: 'user', content: 'turns' }],
    ]);
    assert.throws(() => parsePrompts('ok\n{"nope": 1}'), /line 2/);
    assert.throws(() => parsePrompts('{broken'), /line 1: not valid JSON/);
    assert.throws(() => parsePrompts('\n\n'), /no prompt/);
  });

  it('builds requests: prompts cycle, output cap, usage asked for, ignore_eos only where the server has it', () => {
    const w = createWorkload({
      dialect: 'openai-chat',
      model: 'm',
      outputTokens: { min: 64, max: 64 },
      ignoreEos: true,
    });
    const first = w.request(0);
    assert.equal(first.prompt, BUILT_IN_PROMPTS[0]);
    assert.equal(w.request(BUILT_IN_PROMPTS.length).prompt, BUILT_IN_PROMPTS[0]);
    assert.equal(first.maxTokens, 64);
    assert.equal(first.includeUsage, true);
    const body = getDialect('openai-chat').toRequestBody(first);
    assert.equal(body.ignore_eos, true);
    assert.equal(body.max_tokens, 64);
    assert.deepEqual(body.stream_options, { include_usage: true });
    assert.deepEqual(w.warnings, []);

    const ollama = createWorkload({ dialect: 'ollama-chat', ignoreEos: true });
    assert.equal(ollama.request(0).extra, undefined);
    assert.match(ollama.warnings[0] ?? '', /no way to ignore end-of-sequence/);

    const ranged = createWorkload({
      dialect: 'llamacpp',
      outputTokens: { min: 10, max: 20 },
      inputTokens: { min: 5, max: 5 },
    });
    const caps = new Set<number>();
    for (let i = 0; i < 200; i++) {
      const cap = ranged.request(i).maxTokens!;
      assert.ok(cap >= 10 && cap <= 20);
      caps.add(cap);
    }
    assert.ok(caps.size > 5, 'caps are spread over the range');
    assert.equal(ranged.request(3).prompt?.split(' ').length, 5);
    assert.equal(ranged.request(3).prompt, ranged.request(3).prompt, 'request i is the same every time');
  });
});
