import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { getDialect } from '../../src/dialects/registry.ts';
import { languageOf, markdownLanguage } from '../../src/sim/corpus.ts';
import { createSim } from '../../src/sim/index.ts';
import { ask, FakeClock, run } from './sim-helpers.ts';

const fast = () => {
  const clock = new FakeClock();
  return createSim({ now: clock.now, sleep: clock.sleep });
};
const openAiChat = getDialect('openai-chat');

describe('sim: Markdown answers when the prompt asks for a list, code or a table', () => {
  it('picks the blocks from the prompt words; other prompts stay prose', () => {
    assert.equal(markdownLanguage('Show me a list, some code and a table.'), 'md-list-code-table');
    assert.equal(markdownLanguage('Two tables and a LIST please'), 'md-list-table');
    assert.equal(markdownLanguage('Write the code'), 'md-code');
    assert.equal(markdownLanguage('Tell me how a river reaches the sea.'), undefined);
    // Words that only contain one: no Markdown.
    assert.equal(markdownLanguage('a listing of codecs on the tablet'), undefined);
    assert.equal(languageOf('Tell me how a river reaches the sea.'), 'en');
    assert.equal(languageOf('コードを見せて code'), 'ja', 'other scripts keep their language');
  });

  it('answers with each block asked for, whole, once, under the default output cap, the same every time', async () => {
    const sim = fast();
    const cases: [string, RegExp[]][] = [
      ['Give me a list.', [/^1\. Rain and snow feed small streams\.$/m, /^- sand and silt$/m]],
      ['Show me some code.', [/^```ts\n[\s\S]+\n```$/m]],
      ['Put it in a table.', [/^\| Stage \| Where \| Pace \|\n\| --- \| --- \| --- \|$/m]],
      [
        'A list, some code and a table, please.',
        [/^1\. Rain/m, /^```ts$/m, /^\| Delta \| coast \| slow \|$/m],
      ],
    ];
    for (const [prompt, blocks] of cases) {
      const first = await run(sim, openAiChat, ask(prompt));
      assert.equal(first.complete, true, prompt);
      const finish = first.events.find((event) => event.type === 'finish');
      assert.equal(
        finish?.type === 'finish' ? finish.reason : undefined,
        'stop',
        `${prompt}: not cut by the default cap`,
      );
      for (const block of blocks) assert.match(first.text, block, prompt);
      assert.match(first.text, /^Here is how a river reaches the sea/, 'starts at its first line');
      assert.equal(first.text.match(/^Here is how/gm)?.length, 1, 'sent once');
      assert.equal((first.text.match(/```/g)?.length ?? 0) % 2, 0, 'every fence closed');
      const again = await run(sim, openAiChat, ask(prompt));
      assert.equal(again.text, first.text, 'deterministic');
    }
  });
});
