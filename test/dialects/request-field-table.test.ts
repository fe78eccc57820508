import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { DIALECTS } from '../../src/dialects/registry.ts';
import { REQUEST_FIELDS, untranslatableFields } from '../../src/dialects/request-field-table.ts';
import { translationMarkdown } from '../../src/dialects/translation-markdown.ts';
import type { ChatRequest } from '../../src/events/chat-request.ts';
import { repoRoot } from '../helpers/paths.ts';
import { bodyAt as at, requestWith, SAMPLES } from '../helpers/request-samples.ts';

/**
 * The translation table (src/dialects/request-field-table.ts) against the request mapping: each cell
 * that names a body path is where the dialect's toRequestBody writes the field, so the table, the
 * mapping and docs/translation.md cannot drift apart.
 */
describe('request field table', () => {
  it('has a cell for every registered dialect in every row', () => {
    for (const row of REQUEST_FIELDS) {
      for (const id of Object.keys(DIALECTS)) {
        assert.ok(id in row.wire, `${String(row.field)}: no cell for ${id}`);
      }
    }
  });

  for (const row of REQUEST_FIELDS) {
    it(`${String(row.field)}: every dialect with a counterpart writes it where the table says`, () => {
      const sample = SAMPLES[row.field];
      assert.ok(sample !== undefined, `no sample value for ${String(row.field)}`);
      for (const [id, path] of Object.entries(row.wire)) {
        if (path === null || path === undefined) continue;
        const dialect = DIALECTS[id];
        if (dialect === undefined) continue;
        const request = requestWith(row.field, sample);
        const body = dialect.toRequestBody(request);
        assert.notEqual(at(body, path), undefined, `${id} does not write ${String(row.field)} at ${path}`);
      }
    });
  }

  it('lists what a translation loses in the client’s own names, and nothing for a same-dialect call', () => {
    const request: ChatRequest = {
      messages: [{ role: 'user', content: 'hi' }],
      tools: [{ name: 'f' }],
      toolChoice: 'required',
      temperature: 0.2,
      extra: { n: 2, options: { mirostat: 2 } },
    };
    assert.deepEqual(untranslatableFields(request, 'openai-chat', 'openai-chat'), []);
    assert.deepEqual(untranslatableFields(request, 'openai-chat', 'llamacpp'), [
      'tools',
      'tool_choice',
      'n',
      'options.mirostat',
    ]);
    // `auto` is every server's own choice: it needs no counterpart.
    assert.deepEqual(
      untranslatableFields({ tools: [{ name: 'f' }], toolChoice: 'auto' }, 'openai-chat', 'ollama-chat'),
      [],
    );
  });

  it('is what docs/translation.md says (node scripts/translation-table.mjs writes it)', () => {
    assert.equal(readFileSync(join(repoRoot, 'docs/translation.md'), 'utf8'), translationMarkdown());
  });
});
