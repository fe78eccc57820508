import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { LevelResult } from '../../src/bench/level-recorder.ts';
import { testOutputPath } from '../helpers/paths.ts';
import { cli, FakeIo, type ServedSim, serveSim } from './cli-helpers.ts';

/** Fast simulator settings for the built-in target: short, exact streams. */
const FAST = ['--sim-ttft-ms', '20', '--sim-tps', '400', '--sim-jitter', '0', '--output-tokens', '5'];

interface BenchJson {
  tool: string;
  target: { url: string; dialect: string; model?: string };
  levels: LevelResult[];
}

describe('tokenwire bench (CLI)', () => {
  let sim: ServedSim;
  before(async () => {
    sim = await serveSim({ timing: { ttftMs: 20, tokensPerSecond: 400, jitter: 0 } });
    mkdirSync(testOutputPath(), { recursive: true });
  });
  after(() => sim.close());

  it('with no URL benchmarks the built-in simulator and prints the table with the other tools’ names', async () => {
    const { code, io } = await cli(['bench', '-c', '2', '-n', '6', ...FAST]);
    assert.equal(code, 0, io.err);
    assert.match(io.err, /built-in simulator/);
    assert.match(
      io.out,
      /concurrency 2: 6 requests in .*: 6 completed \(6 truncated at the output cap\), 0 incomplete, 0 failed/,
    );
    for (const text of [
      'TTFT (ms)',
      'TPOT (ms)',
      'ITL (inter-chunk) (ms)',
      'E2E (ms)',
      'schedule lag (ms)',
      'p50',
      'p99',
      'max',
    ])
      assert.ok(io.out.includes(text), `table has ${text}`);
    // Each row says what the others call it, and the notes say where the names disagree.
    assert.match(io.out, /TPOT \(ms\).*TPOT\s+ITL\s+inter_token_latency_ms/);
    assert.match(io.out, /ITL \(inter-chunk\) \(ms\).*ITL\s+ICL/);
    assert.match(io.out, /Inter Chunk Latency/);
    assert.doesNotMatch(io.out + io.err, /\u001b\[/, 'no escape codes off a terminal');
  });

  it('--json writes every level and every request; a list of concurrencies is a sweep', async () => {
    // An SLO no machine misses (no assertion may depend on this machine's speed).
    const { code, io } = await cli([
      'bench',
      '-c',
      '1,3',
      '-n',
      '3',
      '--json',
      '--slo',
      'ttft=3600s',
      ...FAST,
    ]);
    assert.equal(code, 0, io.err);
    const output = JSON.parse(io.out) as BenchJson;
    assert.equal(output.tool, 'tokenwire bench');
    assert.equal(output.target.dialect, 'openai-chat');
    assert.deepEqual(
      output.levels.map((l) => l.load),
      [
        { kind: 'closed', concurrency: 1 },
        { kind: 'closed', concurrency: 3 },
      ],
    );
    for (const level of output.levels) {
      assert.equal(level.counts.truncated, 3);
      assert.equal(level.requests?.length, 3);
      assert.ok(level.metrics.ttft.p50 >= 20, `TTFT p50 ${level.metrics.ttft.p50}`);
      assert.equal(level.metrics.outputTokens.p50, 5);
      assert.equal(level.goodput?.fraction, 1);
      assert.ok(level.charts.timeline.outputTokensPerSecond.length > 0);
    }
  });

  it('benchmarks a URL, finding the dialect from its path, and splits TTFT by Ollama’s durations', async () => {
    const { code, io } = await cli([
      'bench',
      `${sim.url}/api/chat`,
      '--model',
      'sim',
      '-n',
      '3',
      '--output-tokens',
      '4',
    ]);
    assert.equal(code, 0, io.err);
    assert.match(io.err, /ollama-chat/);
    assert.match(io.out, /TTFT: prompt eval \(ms\)/);
    assert.match(io.out, /TTFT: queue\+net \(ms\)/);
  });

  it('open loop: --rate with --burstiness', async () => {
    const { code, io } = await cli([
      'bench',
      '-r',
      '50',
      '--burstiness',
      '0.5',
      '-n',
      '10',
      '--json',
      ...FAST,
    ]);
    assert.equal(code, 0, io.err);
    const level = (JSON.parse(io.out) as BenchJson).levels[0]!;
    assert.deepEqual(level.load, { kind: 'open', rate: 50, burstiness: 0.5 });
    assert.equal(level.counts.sent, 10);
  });

  it('--html writes a self-contained report with the charts', async () => {
    const file = testOutputPath('bench-cli-report.html');
    const { code, io } = await cli(['bench', '-c', '1,2', '-n', '4', '--html', file, ...FAST]);
    assert.equal(code, 0, io.err);
    assert.match(io.err, /HTML report written/);
    const html = readFileSync(file, 'utf8');
    assert.ok(html.startsWith('<!doctype html>'));
    assert.equal(html.match(/data-chart="ttft"/g)?.length, 2);
    assert.equal(html.match(/data-chart="itl"/g)?.length, 2);
    assert.equal(html.match(/data-chart="throughput"/g)?.length, 2);
    assert.doesNotMatch(html, /https?:\/\//);
    assert.doesNotMatch(html, /<script|<link|src=|@import|url\(/i);
  });

  it('fails (exit 1) when every request fails, saying why', async () => {
    const { code, io } = await cli([
      'bench',
      `${sim.url}/v1/chat/completions`,
      '--model',
      'sim',
      '-n',
      '3',
      '--header',
      'x-tokenwire-fault: status=500',
    ]);
    assert.equal(code, 1);
    assert.match(io.out, /0 completed, 0 incomplete, 3 failed/);
    assert.match(io.err, /every request failed \(http-500/);
  });

  it('fails (exit 1) when goodput is below --min-goodput', async () => {
    const { code, io } = await cli([
      'bench',
      '-n',
      '3',
      '--slo',
      'ttft=1ms',
      '--min-goodput',
      '90%',
      ...FAST,
    ]);
    assert.equal(code, 1);
    assert.match(io.out, /goodput \(ttft<=1ms\): 0\.0% of requests/);
    assert.match(io.err, /goodput 0\.0% is below --min-goodput 90\.0%/);
  });

  it('reads prompts from a file (lines and JSONL)', async () => {
    const file = testOutputPath('bench-prompts.jsonl');
    writeFileSync(
      file,
      'plain prompt\n{"prompt": "json prompt"}\n{"messages": [{"role": "user", "content": "hi"}]}\n',
    );
    const { code, io } = await cli(['bench', '-n', '3', '--prompts', file, '--json', ...FAST]);
    assert.equal(code, 0, io.err);
    assert.match((JSON.parse(io.out) as BenchJson).levels[0]!.workload, /3 prompts from the file/);
  });

  it('shows a progress bar on a terminal, without colours under NO_COLOR', async () => {
    const io = new FakeIo({ tty: true, env: { NO_COLOR: '1' } });
    const { code } = await cli(['bench', '-c', '2', '-n', '4', ...FAST], io);
    assert.equal(code, 0, io.err);
    assert.match(io.err, /\[[#-]{24}\] \d+\/4 {2}\d+ in flight/);
    assert.doesNotMatch(io.err + io.out, /\u001b\[(1|2|3\d)m/, 'no colour codes');
  });

  it('Ctrl-C stops the run, prints what finished, and exits 130', async () => {
    const io = new FakeIo();
    const argv = [
      'bench',
      '-c',
      '2',
      '-n',
      '1000',
      '--warmup',
      '0',
      '--sim-tps',
      '20',
      '--output-tokens',
      '50',
    ];
    const run = cli(argv, io);
    setTimeout(() => io.interrupt(), 800);
    const { code } = await run;
    assert.equal(code, 130);
    // Streams cut by the interrupt are never shown as completed.
    assert.match(io.out, /concurrency 2: 2 requests in .*: 0 completed/);
    assert.match(io.err, /interrupted/);
  });

  it('refuses bad options with exit 2', async () => {
    for (const argv of [
      ['bench', '-c', '0'],
      ['bench', '-c', '2', '-r', '5'],
      ['bench', '--slo', 'speed=fast'],
      ['bench', '--min-goodput', '0.5'],
      ['bench', '--input-tokens', '10', '--prompts', 'x.txt'],
      ['bench', '--burstiness', '2'],
      ['bench', 'http://127.0.0.1:1/v1/chat/completions', '--sim-tps', '5'],
      ['bench', '--dialect', 'nope'],
    ]) {
      const { code, io } = await cli(argv);
      assert.equal(code, 2, `${argv.join(' ')}: ${io.err}`);
    }
    const help = await cli(['bench', '--help']);
    assert.equal(help.code, 0);
    assert.match(help.io.out, /--concurrency/);
  });
});
