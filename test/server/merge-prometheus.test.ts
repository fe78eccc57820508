import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { mergePrometheusText } from '../../src/server/observability/merge-prometheus.ts';
import { Counter, Gauge, Histogram, Registry } from '../../src/server/observability/prometheus.ts';

/** One update of one of three metrics, on one of a few label sets (values exact in binary). */
type Update =
  | { metric: 'counter'; labels: number; by: number }
  | { metric: 'gauge'; labels: number; by: number }
  | { metric: 'histogram'; labels: number; value: number };

const LABEL_SETS: Record<string, string>[] = [
  {},
  { route: 'openai-chat', upstream: 'sim' },
  { upstream: 'sim', route: 'ollama-chat' },
  // Quotes, backslashes, braces, spaces and a newline in values: the parser must not split inside them.
  { route: 'a "quoted" } {x} \\ back\nslash', upstream: 'u v' },
];

const update: fc.Arbitrary<Update> = fc.oneof(
  fc.record({
    metric: fc.constant('counter' as const),
    labels: fc.nat(LABEL_SETS.length - 1),
    by: fc.integer({ min: 0, max: 1000 }),
  }),
  fc.record({
    metric: fc.constant('gauge' as const),
    labels: fc.nat(LABEL_SETS.length - 1),
    by: fc.integer({ min: -50, max: 50 }),
  }),
  fc.record({
    metric: fc.constant('histogram' as const),
    labels: fc.nat(LABEL_SETS.length - 1),
    // Quarters: sums stay exact whatever the order they are added in.
    value: fc.integer({ min: 0, max: 200 }).map((n) => n / 4),
  }),
);

function registryOf(updates: readonly Update[]): Registry {
  const registry = new Registry();
  const counter = registry.register(new Counter('t_requests_total', 'Requests.'));
  const gauge = registry.register(new Gauge('t_active', 'Active.'));
  const histogram = registry.register(new Histogram('t_seconds', 'Seconds.', [0.5, 1, 10, 25]));
  for (const u of updates) {
    const labels = LABEL_SETS[u.labels]!;
    if (u.metric === 'counter') counter.inc(labels, u.by);
    else if (u.metric === 'gauge') gauge.add(labels, u.by);
    else histogram.observe(labels, u.value);
  }
  return registry;
}

/** The samples of an exposition as series -> value, and its # lines, in order of appearance. */
function parse(text: string): { samples: Map<string, number>; comments: string[] } {
  const samples = new Map<string, number>();
  const comments: string[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('#')) {
      comments.push(line);
      continue;
    }
    const space = line.lastIndexOf(' ');
    const series = line.slice(0, space);
    assert.equal(samples.has(series), false, `one line per series: ${series}`);
    samples.set(series, Number(line.slice(space + 1)));
  }
  return { samples, comments };
}

describe('mergePrometheusText (serve --workers: /metrics summed over workers)', () => {
  it('the sum of N workers’ expositions is the exposition of one registry that took every update', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(update, { maxLength: 30 }), { minLength: 1, maxLength: 5 }),
        (workers) => {
          const merged = parse(mergePrometheusText(workers.map((w) => registryOf(w).render())));
          const expected = parse(registryOf(workers.flat()).render());
          assert.deepEqual(new Map([...merged.samples].sort()), new Map([...expected.samples].sort()));
          // HELP and TYPE once per family, whatever the number of workers.
          assert.deepEqual(merged.comments, expected.comments);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('merging is order-insensitive in values and idempotent on one exposition', () => {
    fc.assert(
      fc.property(fc.array(update, { maxLength: 30 }), fc.array(update, { maxLength: 30 }), (a, b) => {
        const ta = registryOf(a).render();
        const tb = registryOf(b).render();
        assert.deepEqual(
          new Map([...parse(mergePrometheusText([ta, tb])).samples].sort()),
          new Map([...parse(mergePrometheusText([tb, ta])).samples].sort()),
        );
        assert.deepEqual(parse(mergePrometheusText([ta])).samples, parse(ta).samples);
      }),
      { numRuns: 100 },
    );
  });

  it('adds only identical label sets, keeps families apart, and reads +Inf and timestamps', () => {
    const a = [
      '# HELP x_total X.',
      '# TYPE x_total counter',
      'x_total{a="1"} 2',
      'x_total{a="2"} 5 1700000000000',
      '# TYPE y gauge',
      'y +Inf',
      '',
    ].join('\n');
    const b = [
      '# HELP x_total X.',
      '# TYPE x_total counter',
      'x_total{a="1"} 3',
      '# TYPE y gauge',
      'y 1',
      '',
    ].join('\n');
    assert.equal(
      mergePrometheusText([a, b]),
      [
        '# HELP x_total X.',
        '# TYPE x_total counter',
        'x_total{a="1"} 5',
        'x_total{a="2"} 5',
        '# TYPE y gauge',
        'y +Inf',
        '',
      ].join('\n'),
    );
    assert.equal(mergePrometheusText([]), '');
  });
});
