import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { CumulativeTextFilter } from '../../src/client/cumulative-text.ts';

function run(pieces: string[]): string[] {
  const filter = new CumulativeTextFilter();
  const out: string[] = [];
  for (const piece of pieces) {
    const text = filter.next(piece);
    if (text !== '') out.push(text);
  }
  const held = filter.flush();
  if (held !== '') out.push(held);
  return out;
}

describe('CumulativeTextFilter', () => {
  it('passes deltas through untouched', () => {
    assert.deepEqual(run(['Hel', 'lo', ' world']), ['Hel', 'lo', ' world']);
  });

  it('turns cumulative text into deltas, even after a 1-character first event', () => {
    // The second event is held until the third confirms the pattern, then both new parts go out together.
    assert.deepEqual(run(['A', 'A careless', 'A careless one', 'A careless one stops']), [
      'A',
      ' careless one',
      ' stops',
    ]);
    assert.deepEqual(run(['Quantum', 'Quantum entanglement']), ['Quantum', ' entanglement']);
  });

  it('releases a held short candidate as a delta when the next event does not confirm it', () => {
    assert.deepEqual(run(['a', 'ab', 'x']).join(''), 'aabx');
    assert.deepEqual(run(['a', 'ab']).join(''), 'aab');
  });

  it('never loses or duplicates text of a delta stream whose pieces do not prefix the text so far', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ minLength: 1, maxLength: 6 }), { maxLength: 20 }), (pieces) => {
        // A delta stream where no piece starts with all the text before it is passed through exactly.
        let seen = '';
        for (const [i, piece] of pieces.entries()) {
          if (i > 0 && piece.startsWith(seen)) return;
          seen += piece;
        }
        assert.equal(run(pieces).join(''), pieces.join(''));
      }),
    );
  });

  // Two events whose second starts with a short first are ambiguous and read as deltas; from three on it is settled.
  it('recovers the text of any cumulative stream of three or more events', () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ minLength: 1, maxLength: 6 }), { minLength: 3, maxLength: 20 }),
        (deltas) => {
          const cumulative: string[] = [];
          let text = '';
          for (const delta of deltas) {
            text += delta;
            cumulative.push(text);
          }
          assert.equal(run(cumulative).join(''), text);
        },
      ),
    );
  });
});
