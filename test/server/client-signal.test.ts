import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { abortSignalOf, type ClientSignal, LightClientSignal } from '../../src/server/http/client-signal.ts';

/**
 * One step: add or remove listener `i`, or abort. A listener may remove one on its call. (Not add one:
 * the DOM standard calls no listener added during the dispatch, and neither does LightClientSignal;
 * Node's EventTarget calls one appended behind a listener it has not reached yet.)
 */
type Op = { kind: 'add' | 'remove'; i: number } | { kind: 'abort' };
type OnCall = { kind: 'remove'; i: number } | undefined;

const LISTENERS = 4;
const index = fc.integer({ min: 0, max: LISTENERS - 1 });
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constantFrom('add' as const, 'remove' as const), i: index }),
  fc.constant({ kind: 'abort' as const }),
);
const onCall: fc.Arbitrary<OnCall> = fc.option(
  fc.record({ kind: fc.constant('remove' as const), i: index }),
  { nil: undefined },
);

/** Runs `ops` on a signal and its abort; returns the order listeners were called in. */
function run(
  signal: ClientSignal,
  abort: () => void,
  ops: readonly Op[],
  onCalls: readonly OnCall[],
): string[] {
  const log: string[] = [];
  const listeners: (() => void)[] = [];
  for (let i = 0; i < LISTENERS; i++) {
    listeners.push(() => {
      log.push(`L${i} (aborted: ${signal.aborted})`);
      const then = onCalls[i];
      if (then?.kind === 'remove') signal.removeEventListener('abort', listeners[then.i]!);
    });
  }
  for (const o of ops) {
    if (o.kind === 'abort') abort();
    else if (o.kind === 'add') signal.addEventListener('abort', listeners[o.i]!, { once: true });
    else signal.removeEventListener('abort', listeners[o.i]!);
    log.push(`after ${o.kind}: aborted ${signal.aborted}`);
  }
  return log;
}

describe('LightClientSignal', () => {
  it('calls, skips and orders listeners as an AbortSignal does, whatever the adds, removes and aborts', () => {
    fc.assert(
      fc.property(
        fc.array(op, { maxLength: 14 }),
        fc.array(onCall, { minLength: LISTENERS, maxLength: LISTENERS }),
        (ops, onCalls) => {
          const controller = new AbortController();
          const expected = run(controller.signal, () => controller.abort(), ops, onCalls);
          const light = new LightClientSignal();
          const actual = run(light, () => light.abort(), ops, onCalls);
          assert.deepEqual(actual, expected);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('calls no listener added during the abort', () => {
    const signal = new LightClientSignal();
    const calls: string[] = [];
    const late = () => calls.push('late');
    signal.addEventListener('abort', () => {
      calls.push('first');
      signal.addEventListener('abort', late);
    });
    signal.abort();
    assert.deepEqual(calls, ['first']);
  });

  it('keeps the reason and calls the other listeners when one throws', () => {
    const signal = new LightClientSignal();
    const calls: string[] = [];
    signal.addEventListener('abort', () => {
      throw new Error('listener failed');
    });
    signal.addEventListener('abort', () => calls.push('second'));
    // The error is rethrown from a microtask: caught here by taking that microtask instead.
    const queued: (() => void)[] = [];
    const original = globalThis.queueMicrotask;
    globalThis.queueMicrotask = (task) => queued.push(task);
    const reason = new Error('client disconnected');
    try {
      signal.abort(reason);
    } finally {
      globalThis.queueMicrotask = original;
    }
    assert.deepEqual(calls, ['second']);
    assert.equal(signal.reason, reason);
    assert.equal(queued.length, 1);
    assert.throws(() => queued[0]!(), /listener failed/);
  });

  it('converts to a standard AbortSignal that follows it, with its reason', () => {
    const light = new LightClientSignal();
    const standard = abortSignalOf(light);
    assert.ok(standard instanceof AbortSignal);
    assert.equal(standard.aborted, false);
    const reason = new Error('client disconnected');
    light.abort(reason);
    assert.equal(standard.aborted, true);
    assert.equal(standard.reason, reason);

    const already = new LightClientSignal();
    already.abort(reason);
    assert.equal(abortSignalOf(already).reason, reason);

    const native = new AbortController().signal;
    assert.equal(abortSignalOf(native), native);
  });
});
