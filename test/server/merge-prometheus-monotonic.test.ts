import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mergePrometheusText, monotonicPart } from '../../src/server/observability/merge-prometheus.ts';

// What the primary of `serve --workers` keeps of a dead worker — its counters and
// histograms (summed into every later scrape), never its gauges (no longer true).

const worker = [
  '# HELP tokenwire_requests_total Requests.',
  '# TYPE tokenwire_requests_total counter',
  'tokenwire_requests_total{route="openai-chat"} 5',
  '# HELP tokenwire_active_streams Open streams.',
  '# TYPE tokenwire_active_streams gauge',
  'tokenwire_active_streams 3',
  '# HELP tokenwire_ttft_seconds Time to first token.',
  '# TYPE tokenwire_ttft_seconds histogram',
  'tokenwire_ttft_seconds_bucket{le="0.1"} 2',
  'tokenwire_ttft_seconds_bucket{le="+Inf"} 4',
  'tokenwire_ttft_seconds_sum 0.5',
  'tokenwire_ttft_seconds_count 4',
  'untyped_sample 7',
  '',
].join('\n');

describe('monotonicPart', () => {
  it('keeps counters and histograms with their HELP and TYPE, drops gauges and untyped samples', () => {
    assert.equal(
      monotonicPart(worker),
      [
        '# HELP tokenwire_requests_total Requests.',
        '# TYPE tokenwire_requests_total counter',
        'tokenwire_requests_total{route="openai-chat"} 5',
        '# HELP tokenwire_ttft_seconds Time to first token.',
        '# TYPE tokenwire_ttft_seconds histogram',
        'tokenwire_ttft_seconds_bucket{le="0.1"} 2',
        'tokenwire_ttft_seconds_bucket{le="+Inf"} 4',
        'tokenwire_ttft_seconds_sum 0.5',
        'tokenwire_ttft_seconds_count 4',
        '',
      ].join('\n'),
    );
  });

  it('summed with a live worker: the counters add up, the gauge is the live one only', () => {
    const merged = mergePrometheusText([worker, monotonicPart(worker)]);
    assert.match(merged, /^tokenwire_requests_total\{route="openai-chat"\} 10$/m);
    assert.match(merged, /^tokenwire_active_streams 3$/m);
    assert.match(merged, /^tokenwire_ttft_seconds_count 8$/m);
    assert.equal(merged.match(/^# TYPE tokenwire_requests_total counter$/gm)?.length, 1);
  });
});
