import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Deadlines, type TimeoutKind } from '../../src/client/timeouts.ts';

const now = () => performance.now();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Deadlines under `options`, with what expired and when (ms after it was made). */
function watch(options: ConstructorParameters<typeof Deadlines>[0]) {
  const started = now();
  const expired: { kind: TimeoutKind; afterMs: number }[] = [];
  const deadlines = new Deadlines(options, (kind) => expired.push({ kind, afterMs: now() - started }), now);
  return { deadlines, expired };
}

describe('Deadlines', () => {
  it('runs no idle deadline while reading waits for a slow consumer (hold), and counts from the release', async () => {
    const { deadlines, expired } = watch({ idleMs: 60 });
    deadlines.headers();
    deadlines.firstByte();
    deadlines.hold();
    await sleep(400);
    assert.equal(expired.length, 0, 'the consumer was slow, the server was not idle');
    deadlines.release();
    await sleep(400);
    assert.deepEqual(
      expired.map((e) => e.kind),
      ['idle'],
      'after the release the idle deadline runs again',
    );
    deadlines.stop();
  });

  it('arms one timer for a whole request when the connect and idle timeouts are equal', () => {
    const original = globalThis.setTimeout;
    let armed = 0;
    globalThis.setTimeout = ((...args: Parameters<typeof setTimeout>) => {
      armed += 1;
      return original(...args);
    }) as typeof setTimeout;
    try {
      const { deadlines } = watch({ connectMs: 300000, idleMs: 300000 });
      deadlines.headers();
      deadlines.firstByte();
      deadlines.activity();
      deadlines.stop();
    } finally {
      globalThis.setTimeout = original;
    }
    assert.equal(armed, 1);
  });

  it('re-arms when a phase brings its deadline closer (a short first-byte timeout after a long connect one)', async () => {
    const { deadlines, expired } = watch({ connectMs: 20000, firstByteMs: 60 });
    deadlines.headers();
    await sleep(600);
    deadlines.stop();
    assert.equal(expired.length, 1);
    assert.equal(expired[0]!.kind, 'first-byte');
    assert.ok(expired[0]!.afterMs >= 55, `after ${expired[0]!.afterMs} ms`);
  });

  it('outlives an earlier timer when a phase moves its deadline later (idle after a short connect)', async () => {
    const { deadlines, expired } = watch({ connectMs: 60, idleMs: 250 });
    await sleep(20);
    deadlines.headers(); // the connect timer (due at 60 ms) stays and fires early: nothing is due then
    deadlines.firstByte();
    await sleep(150);
    assert.equal(expired.length, 0, 'nothing is due 170 ms in: the idle deadline is at 270 ms');
    await sleep(400);
    deadlines.stop();
    assert.equal(expired.length, 1);
    assert.equal(expired[0]!.kind, 'idle');
    assert.ok(expired[0]!.afterMs >= 265, `after ${expired[0]!.afterMs} ms`);
  });
});
