import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type ServedHandler, serve } from '../../src/node/serve.ts';
import { startServe } from './cli-helpers.ts';

/** The two lines of `curl` the start-up banner suggests. */
const tryLine = (out: string) => out.slice(out.indexOf('try:'), out.indexOf('metrics:'));

describe('tokenwire serve: the start-up "try:" line', () => {
  let upstream: ServedHandler;
  before(async () => {
    // A bare OpenAI-compatible server: it lists one model and answers nothing else.
    upstream = await serve((request) =>
      new URL(request.url).pathname === '/v1/models'
        ? Response.json({ object: 'list', data: [{ id: 'qwen2.5-7b-instruct', object: 'model' }] })
        : new Response('not found', { status: 404 }),
    );
  });
  after(() => upstream.close());

  it('names "sim" when fronting the simulator', async () => {
    const run = startServe([]);
    try {
      await run.started;
      assert.match(tryLine(run.out()), /"model":"sim"/);
    } finally {
      await run.stop();
    }
  });

  it("names the upstream's own model (the first it lists), not sim", async () => {
    const run = startServe(['--upstream', upstream.url]);
    try {
      await run.started;
      const line = tryLine(run.out());
      assert.match(line, /"model":"qwen2\.5-7b-instruct"/);
      assert.doesNotMatch(line, /"sim"/);
    } finally {
      await run.stop();
    }
  });

  it('with --upstream-dialect (no probe, so no model list): a placeholder, not sim', async () => {
    const run = startServe(['--upstream', upstream.url, '--upstream-dialect', 'openai-chat']);
    try {
      await run.started;
      const line = tryLine(run.out());
      assert.match(line, /"model":"<model>"/);
      assert.doesNotMatch(line, /"sim"/);
    } finally {
      await run.stop();
    }
  });
});
