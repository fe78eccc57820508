import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { htmlReport } from '../../src/bench/html-report.ts';
import { LevelRecorder, type LevelResult } from '../../src/bench/level-recorder.ts';
import { formatLevel, formatSweep } from '../../src/bench/text-report.ts';
import type { Result } from '../../src/events/result.ts';
import { testOutputPath } from '../helpers/paths.ts';

const SLO = { ttft: 500, tpot: 50 };
const TOKENS = 12;

/**
 * One scripted request of a closed-loop level: 12 tokens, a TTFT that grows with the load, 11 gaps
 * of 20-22 ms. At concurrency 8 the last two requests wait past the 500 ms TTFT bound.
 */
function scripted(concurrency: number, index: number): { sentMs: number; result: Result } {
  const ttftMs = 40 + 10 * concurrency + index + (concurrency === 8 && index >= 6 ? 600 : 0);
  const interChunkMs = Array.from({ length: TOKENS - 1 }, (_, i) => 20 + ((index + i) % 3));
  const totalMs = ttftMs + interChunkMs.reduce((a, b) => a + b, 0);
  // Closed loop: request i starts when request i - concurrency ends (all requests of a round alike).
  const sentMs = Math.floor(index / concurrency) * (totalMs + 5);
  return {
    sentMs,
    result: {
      text: 'x'.repeat(TOKENS),
      reasoning: '',
      toolCalls: [],
      complete: true,
      truncated: true,
      finishReason: 'length',
      usage: { inputTokens: 9, outputTokens: TOKENS },
      metrics: {
        ttfbMs: ttftMs - 1,
        ttftMs,
        totalMs,
        chunkCount: TOKENS,
        interChunkMs,
        outputTokens: TOKENS,
        outputTokensEstimated: false,
        inputTokens: 9,
        keepaliveCount: 0,
        bytes: 120 * TOKENS,
      },
    },
  };
}

/**
 * A recorded sweep (concurrency 1, 4 and 8, 8 requests each) fed to the recorder as the bench feeds
 * it: the reports draw fixed samples, so nothing here depends on how fast the machine is (a live run
 * against the simulator missed its TTFT bound at load average 6).
 */
function scriptedSweep(): LevelResult[] {
  return [1, 4, 8].map((concurrency) => {
    const recorder = new LevelRecorder({ slo: SLO });
    for (let index = 0; index < 8; index++) {
      const { sentMs, result } = scripted(concurrency, index);
      recorder.sent(sentMs);
      recorder.result(index, sentMs, sentMs, result);
    }
    return recorder.summary({ kind: 'closed', concurrency }, 'openai-chat, 12 output tokens', new Date(0));
  });
}

describe('reports', () => {
  const levels = scriptedSweep();

  it('the HTML report is self-contained and holds the charts of every level', () => {
    const html = htmlReport({
      target: 'http://127.0.0.1:8080/v1/chat/completions',
      command: 'tokenwire bench -c 1,4,8 -n 8',
      generatedAt: new Date(0),
      levels,
      notes: ['a note <with> markup & "quotes"'],
    });
    mkdirSync(testOutputPath(), { recursive: true });
    writeFileSync(testOutputPath('bench-report.html'), html);
    assert.ok(html.startsWith('<!doctype html>'));
    // Nothing is fetched: no URL of any kind, no script, no external style, font or image.
    assert.doesNotMatch(html.replace('http://127.0.0.1:8080/v1/chat/completions', ''), /https?:\/\//);
    assert.doesNotMatch(html, /<script|<link|<img|<iframe|src=|@import|url\(/i);
    // Three charts per level (TTFT and inter-chunk distributions, throughput over time), and the sweep.
    for (const chart of ['ttft', 'itl', 'throughput'])
      assert.equal(html.match(new RegExp(`data-chart="${chart}"`, 'g'))?.length, 3, chart);
    assert.ok((html.match(/<svg /g)?.length ?? 0) >= 10);
    assert.ok((html.match(/<rect class="bar"/g)?.length ?? 0) > 10, 'histogram bars drawn');
    assert.ok((html.match(/<polyline class="l1"/g)?.length ?? 0) >= 4, 'throughput and sweep lines drawn');
    assert.match(html, /Latency by load level/);
    // The names table, and text escaped.
    assert.match(html, /Inter Chunk Latency/);
    assert.match(html, /inter_token_latency_ms/);
    assert.match(html, /a note &#60;with&#62; markup &#38; &#34;quotes&#34;/);
  });

  it('the text report shows each level, its goodput, and the sweep', () => {
    const text = formatLevel(levels[1]!);
    assert.match(text, /^concurrency 4: 8 requests in /);
    assert.match(text, /goodput \(ttft<=500ms, tpot<=50ms\): 100\.0% of requests met every SLO/);
    // Two of the eight scripted requests at concurrency 8 wait past the TTFT bound.
    assert.match(
      formatLevel(levels[2]!),
      /goodput \(ttft<=500ms, tpot<=50ms\): 75\.0% of requests met every SLO/,
    );
    const sweep = formatSweep(levels);
    assert.equal(sweep.trim().split('\n').length, 2 + levels.length);
    assert.match(sweep, /concurrency 8/);
  });
});
