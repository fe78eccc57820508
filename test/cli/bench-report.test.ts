import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';
import { axisTicks, niceTicks } from '../../src/bench/html-report.ts';
import type { LevelResult } from '../../src/bench/level-recorder.ts';
import { estimateTokens, parseDataset } from '../../src/bench/workload.ts';
import { testOutputPath } from '../helpers/paths.ts';
import { cli, type ServedSim, serveSim } from './cli-helpers.ts';

const FAST = ['--sim-ttft-ms', '20', '--sim-tps', '400', '--sim-jitter', '0', '--output-tokens', '5'];

/**
 * A round tick, after undoing a `k`/`M` suffix: a multiple of a 1, 2 or 5 × 10^n step, so at most
 * three significant digits with a last one of 0 or 5 (0.05, 250, 1500, 22.5 on a 0.5 step).
 */
function isRound(label: string): boolean {
  const match = /^(-?[\d.]+)(k|M)?$/.exec(label);
  if (match === null) return false;
  const value = Number(match[1]) * (match[2] === 'k' ? 1e3 : match[2] === 'M' ? 1e6 : 1);
  if (value === 0 || Number(value.toPrecision(2)) === value) return true;
  const three = value.toPrecision(3);
  return Number(three) === value && /[05]$/.test(three.replace(/e.*$/, '').replace('.', ''));
}

describe('tokenwire bench: reports and datasets', () => {
  let sim: ServedSim;
  let html: string;
  const reportFile = testOutputPath('bench-sweep-report.html');
  before(async () => {
    sim = await serveSim({ timing: { ttftMs: 20, tokensPerSecond: 400, jitter: 0 } });
    mkdirSync(testOutputPath(), { recursive: true });
    const { code, io } = await cli(['bench', '-c', '1,2,4', '-n', '6', '--html', reportFile, ...FAST]);
    assert.equal(code, 0, io.err);
    html = readFileSync(reportFile, 'utf8');
  });
  after(() => sim.close());

  it('a server that reports no load time (llama.cpp): model load reads unknown, not 0', async () => {
    const { code, io } = await cli(['bench', `${sim.url}/completion`, '-n', '3', '--output-tokens', '4']);
    assert.equal(code, 0, io.err);
    assert.match(io.out, /TTFT: prompt eval \(ms\)/, 'the TTFT split is shown (llama.cpp reports prompt_ms)');
    assert.match(io.out, /TTFT: model load \(ms\)\s+unknown \(the server reports no load time\)/);
    assert.doesNotMatch(io.out, /TTFT: model load \(ms\)\s+0\.000/);
    const json = await cli(['bench', `${sim.url}/completion`, '-n', '2', '--output-tokens', '4', '--json']);
    const level = (JSON.parse(json.io.out) as { levels: LevelResult[] }).levels[0]!;
    assert.equal(level.metrics.load.count, 0, 'no load time recorded');
    assert.ok(level.metrics.promptEval.count > 0);
  });

  it("Ollama's load_duration is still shown as the figure it is", async () => {
    const cold = await serveSim({ timing: { ttftMs: 20, tokensPerSecond: 400, jitter: 0, loadMs: 30 } });
    try {
      const args = ['bench', `${cold.url}/api/chat`, '--model', 'sim', '-n', '2', '--output-tokens', '4'];
      const { io } = await cli(args);
      assert.match(io.out, /TTFT: model load \(ms\)\s+[\d.]+/);
      assert.doesNotMatch(io.out, /unknown \(the server reports no load time\)/);
    } finally {
      await cold.close();
    }
  });

  it('--dataset takes a ShareGPT file (a JSON array): the first human turn is sent, the reply length is the cap', async () => {
    const file = testOutputPath('bench-sharegpt.json');
    const replies = [
      'A mutex is a lock that lets one thread at a time into a critical section.',
      'Nile, Amazon, Danube.',
    ];
    writeFileSync(
      file,
      JSON.stringify([
        {
          id: 'a',
          conversations: [
            { from: 'human', value: 'What is a mutex?' },
            { from: 'gpt', value: replies[0] },
            { from: 'human', value: 'And a semaphore?' },
            { from: 'gpt', value: 'A counter of permits.' },
          ],
        },
        {
          id: 'b',
          conversations: [
            { from: 'system', value: 'Be brief.' },
            { from: 'human', value: 'Name three rivers.' },
            { from: 'gpt', value: replies[1] },
          ],
        },
        { id: 'c', conversations: [{ from: 'gpt', value: 'a reply with no question' }] },
      ]),
    );
    const before = sim.sim.stats.log.length;
    const { code, io } = await cli([
      'bench',
      `${sim.url}/v1/chat/completions`,
      '--model',
      'sim',
      '-n',
      '4',
      '--dataset',
      file,
      '--json',
    ]);
    assert.equal(code, 0, io.err);
    const level = (JSON.parse(io.out) as { levels: LevelResult[] }).levels[0]!;
    assert.match(level.workload, /2 records from the dataset/);
    assert.match(level.workload, /recorded answer length as the output cap/);
    assert.match(io.err, /1 record\(s\) skipped/);
    const caps = replies.map(estimateTokens);
    const sent = sim.sim.stats.log.slice(before).map((record) => record.outputTokens);
    assert.deepEqual(sent, [caps[0], caps[1], caps[0], caps[1]], 'each request capped at its reply length');
  });

  it('--dataset takes JSON Lines of plain prompts and strings; --dataset with --prompts is a usage error', async () => {
    const file = testOutputPath('bench-dataset.jsonl');
    writeFileSync(file, '{"prompt": "first"}\n"second"\n{"text": "third", "output_tokens": 3}\n');
    const { code, io } = await cli([
      'bench',
      `${sim.url}/v1/chat/completions`,
      '--model',
      'sim',
      '-n',
      '3',
      '--dataset',
      file,
      '--json',
    ]);
    assert.equal(code, 0, io.err);
    assert.match(
      (JSON.parse(io.out) as { levels: LevelResult[] }).levels[0]!.workload,
      /3 records from the dataset/,
    );
    assert.equal(sim.sim.stats.log.at(-1)?.outputTokens, 3, 'a record’s own output_tokens is its cap');
    assert.equal((await cli(['bench', '--dataset', file, '--prompts', file])).code, 2);
    assert.match((await cli(['bench', '--help'])).io.out, /--dataset FILE/);
  });

  it('parseDataset: ShareGPT roles, system turns, skipped records, JSON Lines of conversations', () => {
    const lines = [
      JSON.stringify({
        conversations: [
          { from: 'system', value: 'S' },
          { from: 'human', value: 'Q' },
          { from: 'gpt', value: 'x'.repeat(40) },
        ],
      }),
      JSON.stringify({ conversations: [{ from: 'user', value: 'Q2' }] }),
      JSON.stringify({ conversations: [{ from: 'gpt', value: 'orphan' }] }),
      JSON.stringify({ messages: [{ role: 'user', content: 'M' }] }),
    ].join('\n');
    const { entries, skipped } = parseDataset(lines);
    assert.equal(skipped, 1);
    assert.deepEqual(entries, [
      {
        prompt: [
          { role: 'system', content: 'S' },
          { role: 'user', content: 'Q' },
        ],
        outputTokens: 10,
      },
      { prompt: [{ role: 'user', content: 'Q2' }] },
      { prompt: [{ role: 'user', content: 'M' }] },
    ]);
    assert.throws(() => parseDataset('{"conversations": []}'), /no usable record/);
  });

  it('the HTML sweep has a throughput-versus-latency chart: a point per level and series', () => {
    assert.equal(html.match(/data-chart="throughput-latency"/g)?.length, 1);
    const chart = html.slice(html.indexOf('data-chart="throughput-latency"'));
    const svg = chart.slice(0, chart.indexOf('</svg>'));
    assert.match(svg, /Throughput vs latency/);
    assert.match(svg, /output tokens \/ s/);
    assert.equal(svg.match(/<circle /g)?.length, 3 * 3, '3 levels x TTFT p50, TTFT p99, TPOT p50');
    for (const label of ['c=1', 'c=2', 'c=4']) assert.ok(svg.includes(`>${label}</text>`), label);
  });

  it('axis ticks fall on round values: the histogram x axes and the throughput axis', () => {
    const ticks = [...html.matchAll(/<text class="tick"[^>]*>([^<]+)<\/text>/g)].map((m) => m[1]!);
    assert.ok(ticks.length > 10, `tick labels found: ${ticks.length}`);
    for (const label of ticks) assert.ok(isRound(label), `tick ${label} is not round`);
    assert.deepEqual(niceTicks(9), [0, 5, 10]);
    assert.deepEqual(niceTicks(0.3), [0, 0.1, 0.2, 0.3]);
    assert.deepEqual(niceTicks(2, 4, true), [0, 1, 2], 'counts: whole numbers only');
    assert.deepEqual(axisTicks(3.7, 480, true), [5, 10, 20, 50, 100, 200]);
    assert.deepEqual(axisTicks(3, 30_000, true), [10, 100, 1000, 10_000]);
    assert.deepEqual(axisTicks(13, 61, false), [20, 30, 40, 50, 60]);
    assert.deepEqual(axisTicks(0.012, 0.048, false), [0.02, 0.03, 0.04]);
  });

  it('the sweep charts fill their cards (headless Chromium)', async () => {
    const profile = mkdtempSync(join(tmpdir(), 'tokenwire-chromium-'));
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: '/usr/bin/chromium',
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
      viewport: { width: 1400, height: 900 },
    });
    try {
      const page = context.pages()[0] ?? (await context.newPage());
      await page.goto(pathToFileURL(reportFile).href);
      // In the page (this project's TypeScript has no DOM types): each card's content width and its SVG's.
      const boxes = (await page.evaluate(`[...document.querySelectorAll('.sweep .chart')].map((card) => {
        const style = getComputedStyle(card);
        const inner = card.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
        return { inner, svg: card.querySelector('svg').getBoundingClientRect().width };
      })`)) as { inner: number; svg: number }[];
      assert.equal(boxes.length, 2);
      for (const box of boxes)
        assert.ok(box.svg >= box.inner - 2, `svg ${box.svg} px in a card of ${box.inner} px`);
    } finally {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    }
  });
});
