import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { describeFaults, wireLevelFaults } from '../../web/describe-faults.ts';
import { FAULT_PRESETS, presetSummary } from '../../web/fault-presets.ts';
import { ReadViewer } from '../../web/wire-reads.ts';

const bytes = (text: string) => new TextEncoder().encode(text);

describe('ReadViewer: what the page shows of each read', () => {
  it('shows a character split across reads as its bytes on both sides, and says where it split', () => {
    const whole = bytes('data: {"content":"日本"}\n\n');
    const at = whole.indexOf(0xe6) + 1; // one byte into 日 (e6 97 a5)
    const viewer = new ReadViewer();
    const first = viewer.view(whole.subarray(0, at));
    assert.equal(first.endsInsideCharacter, true);
    assert.equal(first.endsMidLine, true);
    assert.match(first.text, /‹e6›$/);
    const second = viewer.view(whole.subarray(at));
    assert.equal(second.endsInsideCharacter, false);
    assert.equal(second.endsMidLine, false);
    assert.match(second.text, /^‹97 a5›本"\}⏎\n⏎\n$/);
  });

  it('counts comment lines, marks a mid-line split and control bytes', () => {
    const viewer = new ReadViewer();
    const view = viewer.view(bytes(': keepalive\n\n: ping\n\ndata: {"a'));
    assert.equal(view.comments, 2);
    assert.equal(view.endsMidLine, true);
    assert.equal(view.endsInsideCharacter, false);
    // A colon later in the line is not a comment.
    assert.equal(viewer.view(bytes('":1}\n\n')).comments, 0);
    assert.equal(viewer.view(bytes('a\r\n\u0000')).text, 'a␍⏎\n‹00›');
    assert.equal(new ReadViewer().view(new Uint8Array([0xff, 0x41])).text, '‹ff›A');
  });
});

describe('the fault hint and the presets', () => {
  it("describes each fault of a spec in the simulator's own words", () => {
    const text = describeFaults('tps=8,cut-after=8');
    assert.match(text, /cut-after=8: after n output tokens, break the connection/);
    assert.match(text, /tps=8: output tokens per second/);
    assert.equal(describeFaults(''), '');
    assert.throws(() => describeFaults('nope'), /unknown fault "nope"/);
    assert.deepEqual(wireLevelFaults('split-utf8,tps=8,keepalive=100'), ['split-utf8', 'keepalive']);
  });

  it('every preset says what it sets', () => {
    for (const preset of FAULT_PRESETS) {
      const summary = presetSummary(preset);
      assert.match(summary, /idle timeout \d+ ms/);
      assert.match(summary, /max tokens/);
      if (preset.spec !== '') assert.ok(summary.includes(preset.spec), preset.id);
    }
    const length = FAULT_PRESETS.find((preset) => preset.id === 'length')!;
    assert.match(presetSummary(length), /max tokens 12/);
  });
});
