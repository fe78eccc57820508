import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DIALECTS } from '../../src/dialects/registry.ts';
import { fieldValue, REQUEST_FIELDS } from '../../src/dialects/request-field-table.ts';
import type { ChatRequest } from '../../src/events/chat-request.ts';
import { requestWith, SAMPLES } from '../helpers/request-samples.ts';

/** The same request without the row's field (the turns of a turn feature without the feature). */
function without(field: string, request: ChatRequest): ChatRequest {
  const base: ChatRequest = structuredClone(request);
  if (field === 'images') base.messages = [{ role: 'user', content: 'hi' }];
  else if (field === 'developer')
    base.messages = [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'hi' },
    ];
  else delete (base as Record<string, unknown>)[field];
  return base;
}

/**
 * The translation table and the request mappings agree both ways. The table test
 * (request-field-table.test.ts) checks that a dialect writes a field where its cell says; this one checks
 * the converse: a dialect whose cell is **—** writes nothing for the field (its body is the same with or
 * without it: docs/translation.md said Responses had no `seed` or `stop` while the mapping sent both), and
 * a dialect with a cell reads back what it wrote.
 */
describe('request field table and request mappings agree both ways', () => {
  for (const row of REQUEST_FIELDS) {
    const field = String(row.field);
    it(`${field}: a dialect with no cell writes nothing for it; one with a cell reads it back`, () => {
      const sample = SAMPLES[row.field];
      assert.ok(sample !== undefined, `no sample value for ${field}`);
      const request = requestWith(row.field, sample);
      for (const [id, cell] of Object.entries(row.wire)) {
        const dialect = DIALECTS[id];
        if (dialect === undefined) continue;
        if (cell === null || cell === undefined) {
          assert.deepEqual(
            dialect.toRequestBody(request),
            dialect.toRequestBody(without(field, request)),
            `${id} has no cell for ${field} in the table, but its request mapping writes it`,
          );
          continue;
        }
        // The roles and prompt rows say where a feature is rendered (a `developer` turn as a system turn,
        // a raw prompt as the prompt): no field carries it back.
        if (row.family === 'roles' || row.family === 'prompt') continue;
        const back = dialect.fromRequestBody(dialect.toRequestBody(request));
        assert.notEqual(
          fieldValue(row, back),
          undefined,
          `${id} writes ${field} at ${cell} but does not read it`,
        );
      }
    });
  }
});
