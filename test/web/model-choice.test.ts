import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { modelNames, pickModel } from '../../web/model-choice.ts';

describe('the playground model picker', () => {
  it('reads the names from /v1/models and /api/tags bodies, once each', () => {
    assert.deepEqual(modelNames({ object: 'list', data: [{ id: 'md' }, { id: 'qwen3:8b' }, { id: 'md' }] }), [
      'md',
      'qwen3:8b',
    ]);
    assert.deepEqual(modelNames({ models: [{ name: 'llama3.2:latest' }, { model: 'qwen3:8b' }] }), [
      'llama3.2:latest',
      'qwen3:8b',
    ]);
    assert.deepEqual(modelNames({ data: [{ id: 3 }, null, { id: '' }] }), []);
    assert.deepEqual(modelNames('nope'), []);
    assert.deepEqual(modelNames(null), []);
  });

  it('keeps a chosen model the gateway serves, else picks the first it lists', () => {
    assert.equal(pickModel(['md', 'qwen3:8b'], 'qwen3:8b'), 'qwen3:8b');
    // The page's old default, in front of a server that has no `sim`: the server's own first model.
    assert.equal(pickModel(['md', 'qwen3:8b'], 'sim'), 'md');
    assert.equal(pickModel(['md'], undefined), 'md');
    assert.equal(pickModel([], 'sim'), undefined);
  });
});
