import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { LightHeaders } from '../../src/server/http/light-headers.ts';

type Op = { kind: 'append' | 'set'; name: string; value: string } | { kind: 'delete'; name: string };

const name = fc.constantFrom(
  'Content-Type',
  'content-type',
  'X-Request-Id',
  'x-request-id',
  'Set-Cookie',
  'set-cookie',
  'Vary',
  'a',
  'Z-last',
  '__proto__',
  'constructor',
);
// Headers trims values and rejects line breaks; these values need neither.
const value = fc.stringMatching(/^[A-Za-z0-9=;,/ ._-]{0,12}$/).map((v) => v.trim());
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constantFrom('append' as const, 'set' as const), name, value }),
  fc.record({ kind: fc.constant('delete' as const), name }),
);

function apply(headers: Headers, ops: readonly Op[]): void {
  for (const o of ops) {
    if (o.kind === 'delete') headers.delete(o.name);
    else headers[o.kind](o.name, o.value);
  }
}

/** The names every comparison reads back, in several cases and with Object.prototype's own. */
const READ_NAMES = [
  'content-type',
  'X-REQUEST-ID',
  'set-cookie',
  'vary',
  'a',
  'z-last',
  '__proto__',
  'constructor',
  'toString',
];

describe('LightHeaders', () => {
  it('answers get, has, getSetCookie and every iteration as Headers does, after any edits', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(name, value)), fc.array(op, { maxLength: 12 }), (init, ops) => {
        const real = new Headers(init);
        const light = new LightHeaders(init);
        apply(real, ops);
        apply(light, ops);
        for (const n of READ_NAMES) {
          assert.equal(light.get(n), real.get(n), `get(${n})`);
          assert.equal(light.has(n), real.has(n), `has(${n})`);
        }
        assert.deepEqual(light.getSetCookie(), real.getSetCookie());
        assert.deepEqual([...light], [...real]);
        assert.deepEqual([...light.keys()], [...real.keys()]);
        assert.deepEqual([...light.values()], [...real.values()]);
        const seen: [string, string][] = [];
        light.forEach((v, k, parent) => {
          assert.equal(parent, light);
          seen.push([k, v]);
        });
        assert.deepEqual(seen, [...real.entries()]);
      }),
    );
  });

  it('reads node:http raw headers in place as Headers reads the same pairs, then after any edits', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(name, value)), fc.array(op, { maxLength: 6 }), (pairs, ops) => {
        const real = new Headers(pairs);
        const light = LightHeaders.fromRaw(pairs.flat());
        // Before anything turns the raw pairs into the map: get and has scan them.
        for (const n of READ_NAMES) {
          assert.equal(light.get(n), real.get(n), `get(${n}) on raw`);
          assert.equal(light.has(n), real.has(n), `has(${n}) on raw`);
        }
        apply(real, ops);
        apply(light, ops);
        for (const n of READ_NAMES) assert.equal(light.get(n), real.get(n), `get(${n}) after edits`);
        assert.deepEqual(light.getSetCookie(), real.getSetCookie());
        assert.deepEqual([...light], [...real]);
      }),
    );
  });

  it('is built from a record, from pairs, from a Headers, and from node:http raw headers', () => {
    assert.equal(new LightHeaders({ 'Content-Type': 'text/plain' }).get('content-type'), 'text/plain');
    assert.equal(new LightHeaders([['A', '1']]).get('a'), '1');
    const copy = new LightHeaders(
      new Headers([
        ['set-cookie', 'x=1'],
        ['set-cookie', 'y=2'],
        ['B', '2'],
      ]),
    );
    assert.deepEqual(copy.getSetCookie(), ['x=1', 'y=2']);
    assert.equal(copy.get('b'), '2');
    const raw = LightHeaders.fromRaw(['Content-Type', 'text/event-stream', 'Vary', 'a', 'vary', 'b']);
    assert.equal(raw.get('content-type'), 'text/event-stream');
    assert.equal(raw.get('vary'), 'a, b');
    // A Headers built from it carries the same entries (the guard copies headers this way).
    assert.deepEqual([...new Headers(raw)], [...raw]);
  });
});
