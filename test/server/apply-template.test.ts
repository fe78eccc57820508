import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type ServedHandler, serve } from '../../src/node/serve.ts';
import { createGateway, type Gateway } from '../../src/server/create-gateway.ts';
import { readFixture } from '../helpers/paths.ts';
import { type ScriptServer, scriptServer } from '../helpers/script-server.ts';

const TEMPLATED = '<|system|>\nBe brief<|end|>\n<|user|>\nhello<|end|>\n<|assistant|>\n';

/**
 * Chat turns translated to llama.cpp's /completion are rendered by the server's own chat template
 * (llama-server's POST /apply-template), not by a generic "role: content" layout.
 */
describe('chat turns to a llama.cpp /completion upstream', () => {
  for (const hasTemplateRoute of [true, false]) {
    describe(
      hasTemplateRoute ? 'a llama-server (it has /apply-template)' : 'a server without /apply-template',
      () => {
        let upstream: ScriptServer;
        let gateway: Gateway;
        let served: ServedHandler;
        before(async () => {
          upstream = await scriptServer((request) => {
            if (request.path === '/apply-template') {
              return hasTemplateRoute
                ? {
                    headers: { 'content-type': 'application/json' },
                    steps: [{ write: JSON.stringify({ prompt: TEMPLATED }) }],
                  }
                : { status: 404, headers: { 'content-type': 'text/plain' }, steps: [{ write: 'not found' }] };
            }
            return {
              headers: { 'content-type': 'text/event-stream' },
              steps: [
                { write: readFixture('real-captures/llamacpp-b10108/n01-completion-stream-limit.sse') },
              ],
            };
          });
          gateway = createGateway({
            upstreams: [{ name: 'llama', url: upstream.url, dialects: ['llamacpp'] }],
          });
          served = await serve(gateway.fetch);
        });
        after(async () => {
          await gateway?.close();
          await served?.close();
          await upstream?.close();
        });

        it('sends the prompt the server renders, else the plain layout', async () => {
          const response = await fetch(`${served.url}/v1/chat/completions`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({
              model: 'm',
              stream: true,
              messages: [
                { role: 'system', content: 'Be brief' },
                { role: 'user', content: 'hello' },
              ],
            }),
          });
          assert.equal(response.status, 200);
          assert.match(await response.text(), /data: \[DONE\]/);
          const completion = upstream.requests.find((r) => r.path === '/completion');
          assert.ok(completion !== undefined);
          const prompt = (JSON.parse(completion.body) as { prompt: string }).prompt;
          if (hasTemplateRoute) {
            assert.equal(prompt, TEMPLATED);
            const asked = upstream.requests.find((r) => r.path === '/apply-template');
            assert.deepEqual(JSON.parse(asked!.body), {
              messages: [
                { role: 'system', content: 'Be brief' },
                { role: 'user', content: 'hello' },
              ],
            });
          } else {
            assert.equal(prompt, 'system: Be brief\nuser: hello\nassistant:');
          }
        });
      },
    );
  }
});
