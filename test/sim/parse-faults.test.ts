import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  DEFAULT_CONTROL_TOKEN,
  FAULTS,
  formatFaults,
  mergeFaults,
  parseFaults,
} from '../../src/sim/index.ts';

describe('parseFaults', () => {
  it('reads flags and name=value pairs', () => {
    assert.deepEqual(parseFaults('cut-after=5, stall=2000,bytewise'), {
      cutAfter: 5,
      stall: 2000,
      bytewise: true,
    });
    assert.deepEqual(parseFaults(''), {});
    assert.deepEqual(parseFaults(' , '), {});
  });

  it('lets numbers after split= continue its list', () => {
    assert.deepEqual(parseFaults('split=3,7,11,bytewise'), { split: [3, 7, 11], bytewise: true });
    assert.deepEqual(parseFaults('split=random'), { split: 'random' });
  });

  it('reads every fault in the table', () => {
    const spec =
      'split=1,2,bytewise,split-utf8,stall=5,stall-after=2,cut-after=3,die-after=6,error-after=4,keepalive=100,batch=2,' +
      'slow-headers=10,cumulative,status=429,tps=2.5,ttft=50,control-tokens,ignore-stop,buffer=20,' +
      'content-type=text/plain,no-done,invalid-utf8,no-usage,multilingual,framing=ndjson';
    const faults = parseFaults(spec);
    for (const info of FAULTS) assert.notEqual(faults[info.key], undefined, info.name);
    assert.equal(faults.controlTokens, DEFAULT_CONTROL_TOKEN);
    assert.equal(faults.tps, 2.5);
    // The canonical form parses back to the same set.
    assert.deepEqual(parseFaults(formatFaults(faults)), faults);
  });

  it('keeps an empty content-type (no header at all) and a custom control token', () => {
    assert.deepEqual(parseFaults('content-type='), { contentType: '' });
    assert.deepEqual(parseFaults('control-tokens=<|im_end|>'), { controlTokens: '<|im_end|>' });
  });

  it('names the bad fault in its error', () => {
    assert.throws(() => parseFaults('bytewise,explode'), /unknown fault "explode"/);
    assert.throws(() => parseFaults('stall=soon'), /fault stall: expected milliseconds/);
    assert.throws(() => parseFaults('status=200'), /fault status: expected an HTTP status from 400 to 599/);
    assert.throws(() => parseFaults('batch=0'), /fault batch: expected a positive number/);
    assert.throws(() => parseFaults('batch=1.5'), /fault batch: expected a positive integer/);
    assert.throws(() => parseFaults('bytewise=1'), /fault bytewise: expected no value/);
    assert.throws(() => parseFaults('framing=xml'), /fault framing: expected sse or ndjson/);
    assert.throws(() => parseFaults('cut-after'), /fault cut-after: expected a token count/);
    assert.throws(() => parseFaults('3,bytewise'), /unknown fault "3"/);
  });

  it('merges later sets over earlier ones, fault by fault', () => {
    const merged = mergeFaults(
      parseFaults('stall=100,bytewise'),
      parseFaults('stall=5'),
      parseFaults('no-done'),
    );
    assert.deepEqual(merged, { stall: 5, bytewise: true, noDone: true });
  });

  it('documents every fault with a unique name and a description', () => {
    const names = FAULTS.map((info) => info.name);
    assert.equal(new Set(names).size, names.length);
    for (const info of FAULTS) assert.ok(info.description.length > 10, info.name);
  });
});
