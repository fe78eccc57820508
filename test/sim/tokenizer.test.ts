import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { encode as referenceEncode } from 'gpt-tokenizer/encoding/cl100k_base';
import { loadTokenizer, pieces, SLICE_WORK } from '../../src/sim/tokenizer.ts';

/** What "linear" means here: no piece BPE sees is longer than this, whatever the cap is set to. */
const MAX_PIECE = 256;

const noSpecial = { disallowedSpecial: new Set<string>() };
// cl100k's pre-tokenizer (gpt-tokenizer's CL100K_TOKEN_SPLIT_REGEX), for the piece tests.
const CL100K_SPLIT =
  /'(?:[sS]|[dD]|[mM]|[tT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s+$|\s*[\r\n]|\s+(?!\S)|\s/gu;

describe('sim tokenizer', () => {
  it('encodes text of ordinary words exactly as gpt-tokenizer does', async () => {
    const tokenizer = await loadTokenizer();
    const word = fc.stringMatching(/^[A-Za-zéü中文]{1,12}$/);
    const separator = fc.constantFrom(
      ' ',
      '  ',
      ', ',
      '.\n',
      '\n\n',
      '!? ',
      '42 ',
      "'s ",
      '\t',
      '<|endoftext|>',
    );
    const text = fc.array(fc.tuple(word, separator), { maxLength: 30 }).map((parts) => parts.flat().join(''));
    fc.assert(
      fc.property(text, (value) => {
        assert.deepEqual(tokenizer.encode(value), referenceEncode(value, noSpecial));
      }),
      { numRuns: 200 },
    );
  });

  it('cuts long runs into pieces no longer than the cap, so BPE work is linear in the input', () => {
    const runs = [
      'a'.repeat(200_000),
      ' '.repeat(50_000),
      '!?'.repeat(20_000),
      '中'.repeat(30_000),
      '😀'.repeat(10_000),
      `lead ${'x'.repeat(1000)} tail`,
    ];
    for (const run of runs) {
      let total = 0;
      let work = 0;
      for (const piece of pieces(run, CL100K_SPLIT)) {
        assert.ok(piece.length <= MAX_PIECE, `a piece of ${piece.length} chars`);
        assert.ok(!/^[\uDC00-\uDFFF]/.test(piece), 'a piece starts inside a surrogate pair');
        total += piece.length;
        work += piece.length * piece.length;
      }
      // The pieces cover the text, and the BPE work (≤ length² per piece) is at most cap × length.
      assert.equal(total, run.length);
      assert.ok(work <= MAX_PIECE * run.length, `work ${work} for ${run.length} chars`);
    }
  });

  it('gives long runs realistic counts: the same as gpt-tokenizer for 4000 × "a", close for random letters', async () => {
    const tokenizer = await loadTokenizer();
    assert.equal(
      tokenizer.encode('a'.repeat(4000)).length,
      referenceEncode('a'.repeat(4000), noSpecial).length,
    );
    let seed = 7;
    let letters = '';
    for (let i = 0; i < 4000; i++) {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      letters += String.fromCharCode(97 + ((seed >> 16) % 26));
    }
    const ours = tokenizer.encode(letters).length;
    const reference = referenceEncode(letters, noSpecial).length;
    assert.ok(Math.abs(ours - reference) / reference < 0.02, `${ours} vs ${reference}`);
    // Deterministic.
    assert.deepEqual(tokenizer.encode(letters), tokenizer.encode(letters));
  });

  it('counts 200 000 letters as encode() does, letting the event loop turn while it counts', {
    timeout: 60_000,
  }, async () => {
    const tokenizer = await loadTokenizer();
    const text = `${'a'.repeat(100_000)} ${'qwertyuiopasdfghjklzxcvbnm'.repeat(4000).slice(0, 100_000)}`;
    assert.ok(text.length * 64 > SLICE_WORK, 'the text is long enough to need several slices');
    let turns = 0;
    let counting = true;
    const tick = (): void => {
      turns += 1;
      if (counting) setTimeout(tick, 0);
    };
    setTimeout(tick, 0);
    const counted = await tokenizer.count(text);
    counting = false;
    assert.equal(counted, tokenizer.encode(text).length);
    assert.ok(turns >= 1, 'no timer ran while counting');
  });

  it('stops counting once the signal aborts', async () => {
    const tokenizer = await loadTokenizer();
    const abort = new AbortController();
    const counting = tokenizer.count('b'.repeat(300_000), abort.signal);
    abort.abort();
    assert.equal(await counting, undefined);
  });
});
