import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { htmlReport } from '../../src/bench/html-report.ts';
import type { LevelResult } from '../../src/bench/level-recorder.ts';
import { runLevel } from '../../src/bench/run-level.ts';
import { formatLevel, formatSweep } from '../../src/bench/text-report.ts';
import { createWorkload } from '../../src/bench/workload.ts';
import { testOutputPath } from '../helpers/paths.ts';
import { type ServedSim, serveSim } from './bench-helpers.ts';

describe('reports', () => {
  let sim: ServedSim;
  const levels: LevelResult[] = [];
  before(async () => {
    sim = await serveSim({ ttftMs: 30, tokensPerSecond: 200 });
    const workload = createWorkload({
      dialect: 'openai-chat',
      model: 'sim',
      outputTokens: { min: 12, max: 12 },
    });
    for (const concurrency of [1, 4, 8]) {
      const run = runLevel({
        target: { url: sim.url(), dialect: 'openai-chat' },
        load: { kind: 'closed', concurrency },
        workload,
        requests: 8,
        slo: { ttft: 500, tpot: 50 },
      });
      levels.push(await run.done);
    }
  });
  after(() => sim.close());

  it('the HTML report is self-contained and holds the charts of every level', () => {
    const html = htmlReport({
      target: `${sim.url()}`,
      command: 'tokenwire bench -c 1,4,8 -n 8',
      generatedAt: new Date(),
      levels,
      notes: ['a note <with> markup & "quotes"'],
    });
    mkdirSync(testOutputPath(), { recursive: true });
    writeFileSync(testOutputPath('bench-report.html'), html);
    assert.ok(html.startsWith('<!doctype html>'));
    // Nothing is fetched: no URL of any kind, no script, no external style, font or image.
    assert.doesNotMatch(html, /https?:\/\//);
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

  it('the text report shows each level and the sweep', () => {
    const text = formatLevel(levels[1]!);
    assert.match(text, /^concurrency 4: 8 requests in /);
    assert.match(text, /goodput \(ttft<=500ms, tpot<=50ms\): 100\.0% of requests met every SLO/);
    const sweep = formatSweep(levels);
    assert.equal(sweep.trim().split('\n').length, 2 + levels.length);
    assert.match(sweep, /concurrency 8/);
  });
});
