import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { openAiChat } from '../../src/dialects/openai-chat/index.ts';
import { openAiCompletions } from '../../src/dialects/openai-completions/index.ts';
import { untranslatableFields } from '../../src/dialects/request-field-table.ts';

const SCHEMA = { type: 'object', properties: { a: { type: 'integer' } } };

/**
 * The repetition penalty and the completions schema on the OpenAI routes: vLLM and llama-server name the repetition penalty and the
 * completions schema differently (each ignoring the other's name), so both names are written and either
 * is read — and two that disagree are not silently merged.
 */
describe('llama-server’s names on the OpenAI routes', () => {
  it('writes the penalty as repetition_penalty and repeat_penalty, and reads either', () => {
    const body = openAiChat.toRequestBody({
      messages: [{ role: 'user', content: 'hi' }],
      repetitionPenalty: 1.3,
    });
    assert.equal(body.repetition_penalty, 1.3);
    assert.equal(body.repeat_penalty, 1.3);
    const read = openAiCompletions.fromRequestBody({ prompt: 'hi', repeat_penalty: 1.4 });
    assert.equal(read.repetitionPenalty, 1.4);
    assert.equal(read.extra, undefined);
  });

  it('writes a completions schema as response_format and json_schema, and reads json_schema alone', () => {
    const body = openAiCompletions.toRequestBody({
      prompt: 'hi',
      responseFormat: { type: 'json_schema', schema: SCHEMA },
    });
    assert.deepEqual(body.json_schema, SCHEMA);
    assert.deepEqual(
      (body.response_format as { json_schema: { schema: unknown } }).json_schema.schema,
      SCHEMA,
    );
    // What the gateway writes reads back as one format.
    const back = openAiCompletions.fromRequestBody(body);
    assert.deepEqual(back.responseFormat?.schema, SCHEMA);
    assert.equal(back.extra, undefined);
    assert.deepEqual(
      openAiCompletions.fromRequestBody({ prompt: 'hi', json_schema: SCHEMA }).responseFormat,
      {
        type: 'json_schema',
        schema: SCHEMA,
      },
    );
  });

  it('a json_schema that disagrees with response_format is named by a translation, not dropped', () => {
    const request = openAiCompletions.fromRequestBody({
      prompt: 'hi',
      response_format: { type: 'json_object' },
      json_schema: SCHEMA,
    });
    assert.deepEqual(untranslatableFields(request, 'openai-completions', 'tgi'), ['json_schema']);
  });
});
