import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Counter, Histogram, labelSet } from '../../src/server/observability/prometheus.ts';

describe('prometheus registry', () => {
  it('counts a reused label set and an equal fresh object as one series, in sorted, escaped form', () => {
    const counter = new Counter('t_total', 'test');
    const set = labelSet({ upstream: 'a"b', route: 'openai-chat' });
    assert.ok(Object.isFrozen(set));
    counter.inc(set);
    counter.inc({ route: 'openai-chat', upstream: 'a"b' }, 2);
    counter.inc(set);
    assert.equal(counter.get({ upstream: 'a"b', route: 'openai-chat' }), 4);
    assert.equal(
      counter.render(),
      '# HELP t_total test\n# TYPE t_total counter\nt_total{route="openai-chat",upstream="a\\"b"} 4\n',
    );
  });

  it('keeps label sets apart by value, also in histograms', () => {
    const histogram = new Histogram('t_seconds', 'test', [1]);
    histogram.observe(labelSet({ route: 'a' }), 0.5);
    histogram.observe(labelSet({ route: 'b' }), 2);
    const text = histogram.render();
    assert.match(text, /t_seconds_bucket\{route="a",le="1"\} 1/);
    assert.match(text, /t_seconds_bucket\{route="b",le="1"\} 0/);
  });
});
