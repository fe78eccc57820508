import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TurnQueue } from '../../src/node/turn-queue.ts';

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('TurnQueue', () => {
  it('runs a lone task at once', () => {
    const queue = new TurnQueue();
    let ran = false;
    queue.run(() => {
      ran = true;
    });
    assert.equal(ran, true);
  });

  it('runs the rest of a burst one per event-loop turn, in order, with I/O turns between them', async () => {
    const queue = new TurnQueue();
    const order: string[] = [];
    for (const name of ['a', 'b', 'c', 'd']) queue.run(() => order.push(name));
    assert.deepEqual(order, ['a']);
    assert.equal(queue.waiting, 3);
    // Whatever the loop does between turns (here: a timer's callback) runs between two starts.
    setTimeout(() => order.push('timer'), 0);
    await nextTurn();
    assert.deepEqual(order, ['a', 'b']);
    await nextTurn();
    await nextTurn();
    await nextTurn();
    assert.deepEqual(
      order.filter((x) => x !== 'timer'),
      ['a', 'b', 'c', 'd'],
    );
    assert.ok(order.includes('timer'));
    assert.equal(queue.waiting, 0);
  });

  it('runs tasks that need not make room at once, and behind a burst already waiting, in order', async () => {
    const queue = new TurnQueue();
    const order: string[] = [];
    // Nothing to make room for (no response is streaming): a burst starts back to back.
    for (const name of ['a', 'b', 'c']) queue.run(() => order.push(name), false);
    assert.deepEqual(order, ['a', 'b', 'c']);
    assert.equal(queue.waiting, 0);
    // A burst that defers; a task that would not defer still waits behind it, never ahead.
    queue.run(() => order.push('d'));
    queue.run(() => order.push('e'));
    queue.run(() => order.push('f'), false);
    assert.deepEqual(order, ['a', 'b', 'c', 'd']);
    await nextTurn();
    await nextTurn();
    assert.deepEqual(order, ['a', 'b', 'c', 'd', 'e', 'f']);
  });

  it('runs at once again after a burst drained', async () => {
    const queue = new TurnQueue();
    queue.run(() => {});
    queue.run(() => {});
    for (let i = 0; i < 4; i++) await nextTurn();
    let ran = false;
    queue.run(() => {
      ran = true;
    });
    assert.equal(ran, true);
  });
});
