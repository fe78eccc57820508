import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  cellFigures,
  type PipeCell,
  type PipeStream,
  type PipeSubject,
  pipeMarkdown,
  pipeVerdicts,
  ratioToPipe,
  summarizePipeCells,
  withinPipe,
} from '../../bench/gateway-vs-pipe-summary.ts';

/** A stream sent at 0 that reached the upstream at `leg`, chunks written every 20 ms from 20, each read `delay` later. */
function stream(leg: number, delay: number, chunks = 3): PipeStream {
  const sent = Array.from({ length: chunks }, (_, k) => leg + 20 * (k + 1));
  return { sentAt: 0, receivedAt: leg, chunkSent: sent, chunkArrived: sent.map((t) => t + delay) };
}

function cell(subject: PipeSubject, level: number, round: number, figures: Partial<PipeCell>): PipeCell {
  return {
    subject,
    level,
    round,
    streams: 1,
    failed: 0,
    mismatched: 0,
    chunks: 100,
    netTtftP50: 0,
    netTtftP99: 0,
    requestLegP50: 0,
    responseLegP50: 0,
    delayP99: 0,
    cpuUsPerChunk: subject === 'direct' ? undefined : 100,
    rssBytes: subject === 'direct' ? undefined : 50 * 2 ** 20,
    ...figures,
  };
}

describe('gateway-vs-pipe figures', () => {
  it('takes the upstream’s own wait out of TTFT and counts chunk delays from the upstream’s writes', () => {
    const figures = cellFigures('pipe', 1, 1, [stream(1, 0.5), stream(3, 1.5)], { cpuUs: 600, rssBytes: 7 });
    // Net TTFT = request leg + response leg: 1 + 0.5 and 3 + 1.5.
    assert.equal(figures.netTtftP50, 3);
    assert.equal(figures.netTtftP99, 1.5 + 0.99 * 3);
    assert.ok(Math.abs(figures.delayP99 - 1.5) < 1e-9);
    assert.equal(figures.requestLegP50, 2);
    assert.equal(figures.responseLegP50, 1);
    assert.equal(figures.chunks, 6);
    assert.equal(figures.cpuUsPerChunk, 100);
    assert.equal(figures.rssBytes, 7);
    assert.equal(figures.mismatched, 0);
  });

  it('counts failed and short streams, and leaves failed ones out of the quantiles', () => {
    const short: PipeStream = { ...stream(1, 1), chunkArrived: [22] };
    const failed: PipeStream = { ...stream(100, 100), error: 'aborted' };
    const figures = cellFigures('tokenwire', 32, 1, [short, failed]);
    assert.equal(figures.failed, 1);
    assert.equal(figures.mismatched, 1);
    assert.equal(figures.firstError, 'aborted');
    assert.equal(figures.netTtftP50, 2);
    assert.equal(figures.cpuUsPerChunk, undefined);
  });

  it('counts probes towards TTFT only', () => {
    const probes = [stream(0.5, 30, 2), stream(0.5, 30, 2), stream(0.5, 30, 2)];
    const figures = cellFigures('pipe', 1, 1, [stream(10, 1)], { cpuUs: 300, rssBytes: 1 }, probes);
    assert.equal(figures.streams, 4);
    // Net TTFT: 11 for the full stream, 30.5 for each probe.
    assert.equal(figures.netTtftP50, 30.5);
    assert.equal(figures.chunks, 3);
    assert.equal(figures.cpuUsPerChunk, 100);
    assert.equal(figures.delayP99, 1);
  });

  it('subtracts direct within each round, then takes the median over rounds', () => {
    const cells = [
      // Direct varies a lot from round to round; only the within-round difference counts.
      cell('direct', 1, 1, { netTtftP50: 1, netTtftP99: 2, delayP99: 1 }),
      cell('direct', 1, 2, { netTtftP50: 10, netTtftP99: 20, delayP99: 10 }),
      cell('direct', 1, 3, { netTtftP50: 5, netTtftP99: 6, delayP99: 5 }),
      cell('pipe', 1, 1, { netTtftP50: 1.5, netTtftP99: 3, delayP99: 2, cpuUsPerChunk: 200 }),
      cell('pipe', 1, 2, { netTtftP50: 10.7, netTtftP99: 21, delayP99: 11, cpuUsPerChunk: 220 }),
      cell('pipe', 1, 3, { netTtftP50: 5.9, netTtftP99: 7, delayP99: 6, cpuUsPerChunk: 210 }),
      cell('tokenwire', 1, 1, { netTtftP50: 3, netTtftP99: 4, delayP99: 2, cpuUsPerChunk: 400 }),
      cell('tokenwire', 1, 2, { netTtftP50: 11.4, netTtftP99: 22, delayP99: 12, cpuUsPerChunk: 500 }),
      cell('tokenwire', 1, 3, { netTtftP50: 5.8, netTtftP99: 8, delayP99: 6, cpuUsPerChunk: 450 }),
    ];
    const [one] = summarizePipeCells(cells);
    assert.ok(one !== undefined);
    assert.equal(one.level, 1);
    assert.equal(one.pipe.rounds, 3);
    // Pipe added p50 per round: 0.5, 0.7, 0.9 -> 0.7; tokenwire: 2, 1.4, 0.8 -> 1.4.
    assert.ok(Math.abs(one.pipe.addedTtftP50 - 0.7) < 1e-9);
    assert.ok(Math.abs(one.tokenwire.addedTtftP50 - 1.4) < 1e-9);
    assert.equal(one.tokenwire.addedTtftP99, 2);
    assert.equal(one.tokenwire.cpuUsPerChunk, 450);
    assert.equal(one.pipe.cpuUsPerChunk, 210);
    const verdicts = pipeVerdicts([one]);
    const ttft = verdicts.find((v) => v.target.startsWith('added TTFT p50'));
    assert.equal(ttft?.met, false);
    assert.match(ttft?.measured ?? '', /2\.00×/);
    // The p99 target is read at c = 128 only.
    assert.equal(
      verdicts.some((v) => v.target.startsWith('added TTFT p99')),
      false,
    );
    assert.match(pipeMarkdown([one]), /\| 1 \| 3 \| 2\.00× \(\+1\.40 ms vs \+0\.70 ms\)/);
  });

  it('a round without direct gives no added figure', () => {
    const [one] = summarizePipeCells([
      cell('direct', 128, 1, { netTtftP50: 1 }),
      cell('pipe', 128, 1, { netTtftP50: 2 }),
      cell('pipe', 128, 2, { netTtftP50: 50 }),
      cell('tokenwire', 128, 1, { netTtftP50: 2 }),
    ]);
    assert.equal(one?.pipe.rounds, 1);
    assert.equal(one?.pipe.addedTtftP50, 1);
    assert.equal(
      pipeVerdicts(one === undefined ? [] : [one]).filter((v) => v.target.includes('p99')).length,
      1,
    );
  });

  it('gives no ratio against a pipe that measured nothing added, and then needs nothing added', () => {
    assert.equal(ratioToPipe(2, 1), 2);
    assert.ok(Number.isNaN(ratioToPipe(1, 0)));
    assert.ok(Number.isNaN(ratioToPipe(1, -0.2)));
    assert.equal(withinPipe(1.25, 1, 1.25), true);
    assert.equal(withinPipe(1.26, 1, 1.25), false);
    assert.equal(withinPipe(0.1, -0.2, 1.25), false);
    assert.equal(withinPipe(-0.1, -0.2, 1.25), true);
    assert.equal(withinPipe(Number.NaN, 1, 1.5), false);
  });
});
