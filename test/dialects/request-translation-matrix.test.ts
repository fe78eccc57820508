import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DIALECT_IDS, type DialectId } from '../../src/dialects/dialect.ts';
import { getDialect } from '../../src/dialects/registry.ts';
import {
  type FieldRow,
  fieldValue,
  REQUEST_FIELDS,
  untranslatableFields,
} from '../../src/dialects/request-field-table.ts';
import { bodyAt, requestWith, SAMPLES } from '../helpers/request-samples.ts';

/**
 * The request-translation matrix, at the translation's own level: for every row of the
 * table and every (client dialect, upstream dialect) pair, a client body that asks for the field — the
 * client dialect's own body, written by its mapping and read back as the gateway reads it — either
 * reaches the upstream at the upstream's cell, or is named as lost (the gateway's 400, or the dropped
 * header with drop_params) in the client's own name for it. Nothing in between: never silently dropped.
 */

/** Cells a dialect writes but does not read back as the same normalized field (documented in the table). */
function readsBack(row: FieldRow, client: DialectId): boolean {
  // `developer` is a system turn outside the two OpenAI dialects.
  if (row.field === 'developer') return client === 'openai-chat' || client === 'openai-responses';
  // Only Ollama says `raw`: a completion prompt is raw by nature, with nothing to read.
  if (row.field === 'raw') return client === 'ollama-generate';
  return true;
}

describe('request translation matrix: every field, every client dialect, every upstream dialect', () => {
  for (const row of REQUEST_FIELDS) {
    it(`${String(row.field)}: reaches the upstream's cell, or is named as lost`, () => {
      const sample = SAMPLES[row.field];
      assert.ok(sample !== undefined, `no sample for ${String(row.field)}`);
      let pairs = 0;
      for (const client of DIALECT_IDS) {
        const clientName = row.wire[client];
        if (clientName === undefined || clientName === null) continue;
        const clientBody = getDialect(client).toRequestBody(requestWith(row.field, sample));
        const request = getDialect(client).fromRequestBody(clientBody);
        const value = fieldValue(row, request);
        if (!readsBack(row, client)) continue;
        assert.notEqual(
          value,
          undefined,
          `${client} does not read back ${String(row.field)} at ${clientName}`,
        );
        for (const upstream of DIALECT_IDS) {
          pairs += 1;
          const lost = untranslatableFields(request, client, upstream);
          const cell = row.wire[upstream];
          const pair = `${String(row.field)}: ${client} -> ${upstream}`;
          if (client === upstream) {
            assert.deepEqual(lost, [], `${pair}: a same-dialect upstream gets the body as sent`);
          } else if (cell === undefined || cell === null || row.lossy?.[upstream]?.(value) === true) {
            assert.ok(lost.includes(clientName), `${pair}: not named as lost (${lost.join(', ')})`);
          } else {
            assert.ok(!lost.includes(clientName), `${pair}: named as lost though ${upstream} has ${cell}`);
            const sent = getDialect(upstream).toRequestBody(Object.assign({}, request, { extra: undefined }));
            assert.notEqual(bodyAt(sent, cell), undefined, `${pair}: nothing at ${cell}`);
          }
        }
      }
      assert.ok(pairs > 0, 'at least one client dialect has the field');
    });
  }

  it('names an image given by URL as lost for Ollama, and carries it to the dialects that take URLs', () => {
    const request = {
      model: 'm',
      messages: [{ role: 'user' as const, content: 'x', images: [{ url: 'https://example.com/a.png' }] }],
    };
    const lost = (upstream: DialectId) => untranslatableFields(request, 'openai-chat', upstream);
    assert.deepEqual(lost('ollama-chat'), ['messages[].content[].image_url']);
    assert.deepEqual(lost('ollama-generate'), ['messages[].content[].image_url']);
    assert.deepEqual(lost('anthropic-messages'), []);
    assert.deepEqual(lost('openai-responses'), []);
  });
});
