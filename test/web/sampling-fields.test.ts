import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DIALECT_IDS } from '../../src/dialects/dialect.ts';
import { getDialect } from '../../src/dialects/registry.ts';
import { fieldRow } from '../../src/dialects/request-field-table.ts';
import { parseExtraJson, reservedKeys, SAMPLING_SETTINGS, wireName } from '../../web/sampling-fields.ts';

describe('the playground sampling settings', () => {
  it('names each setting as the request field table does, for every dialect', () => {
    for (const dialect of DIALECT_IDS) {
      for (const setting of SAMPLING_SETTINGS) {
        const cell = fieldRow(setting.field)?.wire[dialect];
        assert.equal(wireName(setting.field, dialect), typeof cell === 'string' ? cell : undefined);
      }
    }
    assert.equal(wireName('topK', 'ollama-chat'), 'options.top_k');
    assert.equal(wireName('repetitionPenalty', 'tgi'), 'parameters.repetition_penalty');
    const without = DIALECT_IDS.find((dialect) => fieldRow('minP')?.wire[dialect] === null);
    assert.ok(without !== undefined, 'some dialect has no min_p');
    assert.equal(wireName('minP', without), undefined);
  });

  it('the settings reach the body where the dialect mapping writes them', () => {
    for (const dialect of DIALECT_IDS) {
      const request = {
        messages: [{ role: 'user' as const, content: 'hi' }],
        topK: 40,
        minP: 0.05,
        repetitionPenalty: 1.1,
      };
      const written: Record<string, unknown> = {};
      for (const setting of SAMPLING_SETTINGS) {
        if (wireName(setting.field, dialect) !== undefined) written[setting.field] = request[setting.field];
      }
      let body: Record<string, unknown>;
      try {
        body = getDialect(dialect).toRequestBody({ messages: request.messages, ...written });
      } catch {
        continue;
      }
      const read = getDialect(dialect).fromRequestBody(body);
      for (const [field, value] of Object.entries(written))
        assert.equal(read[field as 'topK'], value, `${dialect} ${field}`);
    }
  });

  it('extra JSON: an object of body fields, never one the page sets itself', () => {
    assert.deepEqual(parseExtraJson('', 'openai-chat'), { extra: undefined });
    assert.deepEqual(parseExtraJson(' {"keep_alive": "5m"} ', 'ollama-chat'), {
      extra: { keep_alive: '5m' },
    });
    assert.match((parseExtraJson('[1]', 'openai-chat') as { error: string }).error, /JSON object/);
    assert.match((parseExtraJson('{x', 'openai-chat') as { error: string }).error, /^not JSON/);
    assert.match(
      (parseExtraJson('{"temperature": 1, "top_p": 1}', 'openai-chat') as { error: string }).error,
      /^temperature, top_p are set by the page's own fields for openai-chat/,
    );
    assert.match(
      (parseExtraJson('{"messages": []}', 'ollama-chat') as { error: string }).error,
      /messages is set/,
    );
    // Ollama's options group stays open: its unnamed members travel as they are.
    assert.equal(reservedKeys('ollama-chat').has('options'), false);
    assert.ok(reservedKeys('openai-chat').has('repeat_penalty'));
  });
});
