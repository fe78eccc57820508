import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { randomStreamId } from '../../src/server/http/stream-id.ts';

describe('randomStreamId', () => {
  it('gives 72-bit hex ids, flat strings, none repeated across pool refills', () => {
    const seen = new Set<string>();
    // 5,000 ids draw 45,000 bytes: the 4 KiB pool is refilled about ten times.
    for (let i = 0; i < 5000; i++) {
      const id = randomStreamId();
      assert.match(id, /^[0-9a-f]{18}$/);
      seen.add(id);
    }
    assert.equal(seen.size, 5000);
  });
});
