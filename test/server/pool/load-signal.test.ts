import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { loadFromPrometheus, loadFromSlots } from '../../../src/server/pool/load-signal.ts';
import { fixturePath } from '../../helpers/paths.ts';

const fixture = (name: string) => readFileSync(fixturePath(`pool/${name}`), 'utf8');

describe('load signals from what the servers publish', () => {
  it("llama-server b10108's /metrics: two requests processing, one deferred", () => {
    assert.deepEqual(loadFromPrometheus(fixture('llamacpp-b10108-metrics-busy.txt')), {
      running: 2,
      waiting: 1,
    });
  });

  it("vLLM's /metrics: counts summed over engines, the cache as full as the fullest engine's", () => {
    assert.deepEqual(loadFromPrometheus(fixture('vllm-metrics-two-engines.txt')), {
      running: 5,
      waiting: 4,
      cacheUsage: 0.25,
    });
  });

  it("SGLang's gauge names, and the deprecated vLLM cache name", () => {
    const text = [
      'sglang:num_running_reqs{model_name="m"} 7',
      'sglang:num_queue_reqs{model_name="m"} 2',
      'sglang:token_usage{model_name="m"} 0.5',
    ].join('\n');
    assert.deepEqual(loadFromPrometheus(text), { running: 7, waiting: 2, cacheUsage: 0.5 });
    assert.deepEqual(loadFromPrometheus('vllm:gpu_cache_usage_perc{model_name="m"} 0.9\n'), {
      cacheUsage: 0.9,
    });
  });

  it('nothing from metrics without those gauges, an HTML page, or values that are not numbers', () => {
    assert.equal(loadFromPrometheus('# HELP x\nprocess_cpu_seconds_total 12\n'), undefined);
    assert.equal(loadFromPrometheus('<html><body>Not found</body></html>'), undefined);
    assert.equal(loadFromPrometheus('llamacpp:requests_processing NaN\n'), undefined);
  });

  it("llama-server b10108's /slots: busy slots are running", () => {
    assert.deepEqual(loadFromSlots(JSON.parse(fixture('llamacpp-b10108-slots-busy.json'))), { running: 2 });
    assert.deepEqual(loadFromSlots(JSON.parse(fixture('llamacpp-b10108-slots-idle.json'))), { running: 0 });
    assert.equal(
      loadFromSlots({ error: { code: 501, message: 'This server does not support slots endpoint.' } }),
      undefined,
    );
    assert.equal(loadFromSlots([{ id: 0 }]), undefined);
  });
});
