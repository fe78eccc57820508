import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { DIALECT_IDS } from '../../src/dialects/dialect.ts';
import { fieldRow } from '../../src/dialects/request-field-table.ts';
import { type ServedHandler, serve } from '../../src/node/serve.ts';
import { serveStatic } from '../../src/node/serve-static.ts';
import { createGateway, type Gateway } from '../../src/server/create-gateway.ts';
import { createSim } from '../../src/sim/index.ts';
import { cli } from '../cli/cli-helpers.ts';
import { repoRoot, testOutputPath } from '../helpers/paths.ts';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
];
const WEB_ROOT = join(repoRoot, 'dist', 'web');
/** The names the upstream serves: none of them is `sim`, as in front of a real server. */
const SERVED = ['md', 'qwen3:8b'];
const shot = (name: string) => testOutputPath(`playground-${name}.png`);

/**
 * The playground in headless Chromium in front of a gateway whose upstream serves other model names
 * and has no simulator's own bytes to read (as `serve --upstream` in front of a real server): the model
 * picker, Load capture's dialect detection, the extra sampling settings, Markdown answers with code
 * highlighted on demand, and conversations kept in the browser's storage.
 */
describe('playground chats in front of a server with its own model names (headless Chromium)', () => {
  let gateway: Gateway;
  let served: ServedHandler;
  let url: string;
  let context: BrowserContext;
  let page: Page;
  let profile: string;
  const outside: string[] = [];
  const pageErrors: string[] = [];
  /** Every request the page made, by path. */
  const requested: string[] = [];
  /** Generation request bodies, in order. */
  const bodies: { path: string; body: Record<string, unknown> }[] = [];
  let setupError: unknown;

  async function setUp(): Promise<void> {
    if (!existsSync(CHROMIUM))
      throw new Error(`Chromium is not installed at ${CHROMIUM} (apt-get install -y chromium)`);
    if (!existsSync(join(WEB_ROOT, 'app.js')))
      throw new Error(
        `the playground bundle is not built (${WEB_ROOT}/app.js): run node scripts/build-web.mjs`,
      );
    const sim = createSim({
      models: SERVED,
      timing: { tokensPerSecond: 400, loadMs: 0, ttftMs: 5, jitter: 0 },
    });
    const statics = serveStatic({ root: WEB_ROOT });
    gateway = createGateway({
      upstreams: [
        {
          name: 'server',
          url: 'http://server.internal',
          dialects: DIALECT_IDS,
          fetch: sim.fetch,
          models: SERVED,
        },
      ],
      fallback: statics,
    });
    served = await serve(gateway.fetch);
    url = served.url;
    profile = mkdtempSync(join(tmpdir(), 'tokenwire-chromium-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      viewport: { width: 1400, height: 900 },
      acceptDownloads: true,
      timeout: 30000,
    });
    await context.route('**/*', (route) => {
      const target = route.request().url();
      if (target.startsWith(`${url}/`) || target.startsWith('data:')) return route.continue();
      outside.push(target);
      return route.abort();
    });
    page = context.pages()[0] ?? (await context.newPage());
    page.setDefaultTimeout(20000);
    page.on('pageerror', (error) => pageErrors.push(`pageerror: ${error.message}`));
    page.on('console', (message) => {
      if (message.type() === 'error') pageErrors.push(`console: ${message.text()}`);
    });
    page.on('request', (request) => {
      const path = new URL(request.url()).pathname;
      requested.push(path);
      if (request.method() === 'POST') bodies.push({ path, body: JSON.parse(request.postData() ?? '{}') });
    });
  }

  before(async () => {
    try {
      await setUp();
    } catch (error) {
      setupError = error;
    }
  });

  after(async () => {
    await context?.close();
    await gateway?.close();
    await served?.close();
    if (profile !== undefined) rmSync(profile, { recursive: true, force: true });
  });

  function browserTest(name: string, body: () => Promise<void>): void {
    it(name, async () => {
      if (setupError !== undefined) throw setupError;
      await body();
    });
  }

  async function open(dialect: string): Promise<void> {
    await page.goto(`${url}/`);
    await page.locator('body[data-sim-raw]').waitFor();
    await page.selectOption('#dialect', dialect);
  }

  async function send(prompt: string): Promise<string> {
    await page.fill('#prompt', prompt);
    await page.click('#send');
    const answer = page.locator('#answer:not([data-state="streaming"]):not([data-state="idle"])');
    await answer.waitFor();
    return (await answer.getAttribute('data-state')) ?? '';
  }

  /** Opens the kept conversations' menu (a toggle: only when closed). */
  async function openSaved(): Promise<void> {
    if ((await page.getAttribute('#saved', 'open')) === null) await page.click('#saved summary');
  }

  // biome-ignore lint/performance/useDomNodeTextContent: Playwright's Locator.innerText, not the DOM property.
  const text = (selector: string) => page.locator(selector).innerText();
  const lastBody = () => bodies.at(-1)?.body ?? {};

  browserTest('picks a model the gateway serves and offers the others; the first Send works', async () => {
    // What the page used to send: this gateway has no model `sim`.
    const refused = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim', messages: [{ role: 'user', content: 'hi' }], stream: true }),
    });
    assert.equal(refused.status, 404);
    await refused.body?.cancel();

    await open('openai-chat');
    assert.equal(await page.inputValue('#model'), 'md');
    const offered = await page
      .locator('#model option')
      .evaluateAll((options) => options.map((option) => (option as unknown as { value: string }).value));
    assert.deepEqual(offered, SERVED);
    assert.match(await text('#gateway-info'), /models: md, qwen3:8b/);
    assert.equal(await page.isDisabled('#raw-sim'), true, 'no simulator to read');
    assert.equal(await send('Tell me how a river reaches the sea.'), 'finished');
    assert.equal(lastBody().model, 'md');
    await page.screenshot({ path: shot('real-server-model') });

    await page.selectOption('#model', 'qwen3:8b');
    await page.selectOption('#dialect', 'ollama-chat');
    assert.equal(await send('And then?'), 'finished');
    assert.equal(lastBody().model, 'qwen3:8b');
    assert.ok(requested.includes('/v1/models'));
  });

  browserTest(
    'Load capture finds the dialect of an Ollama NDJSON body and a Messages body, as inspect does',
    async () => {
      const dir = testOutputPath('playground-loaded-bodies');
      mkdirSync(dir, { recursive: true });
      const bodyOf = async (path: string, body: Record<string, unknown>) => {
        const response = await fetch(`${url}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        assert.equal(response.status, 200);
        return new Uint8Array(await response.arrayBuffer());
      };
      const messages = [{ role: 'user', content: 'Tell me how a river reaches the sea.' }];
      const files = [
        {
          dialect: 'ollama-chat',
          path: join(dir, 'ollama-chat.ndjson'),
          bytes: await bodyOf('/api/chat', { model: 'md', messages, stream: true }),
        },
        {
          dialect: 'anthropic-messages',
          path: join(dir, 'messages.sse'),
          bytes: await bodyOf('/v1/messages', { model: 'md', messages, max_tokens: 400, stream: true }),
        },
      ];
      for (const file of files) {
        writeFileSync(file.path, file.bytes);
        const inspected = await cli(['inspect', '--file', file.path, '--json']);
        const report = JSON.parse(inspected.io.out) as { result: { complete: boolean; text: string } };
        assert.equal(report.result.complete, true, file.dialect);
        assert.ok(report.result.text.length > 20);

        // The bar says openai-chat: the body's own dialect is found all the same.
        await open('openai-chat');
        await page.setInputFiles('#load-capture', file.path);
        await page.locator('#status', { hasText: /^Replayed/ }).waitFor();
        assert.equal(await page.getAttribute('#answer', 'data-state'), 'finished', file.dialect);
        assert.equal(
          ((await page.locator('#answer').textContent()) ?? '').replace(/\s/g, ''),
          report.result.text.replace(/\s/g, ''),
        );
        assert.match(await text('#status'), new RegExp(`\\(${file.dialect}, detected\\): finished`));
        assert.doesNotMatch(await text('#answer'), /\(no text\)/);
        assert.match(await text('#wire-summary'), /complete: terminal event received/);
      }
      await page.screenshot({ path: shot('loaded-messages-body') });
    },
  );

  browserTest('top k, min p, repeat penalty and extra JSON go out as each dialect names them', async () => {
    await open('ollama-chat');
    await page.click('#settings summary');
    await page.fill('#top-k', '40');
    await page.fill('#min-p', '0.05');
    await page.fill('#repeat-penalty', '1.1');
    await page.fill('#extra-json', '{"keep_alive": "5m", "options": {"num_ctx": 4096}}');
    assert.match(await text('#top-k-hint'), /sent as options\.top_k/);
    assert.match(await text('#repeat-penalty-hint'), /sent as options\.repeat_penalty/);
    await page.screenshot({ path: shot('settings-sampling') });
    await page.click('#settings summary');
    assert.equal(await send('Tell me a story.'), 'finished');
    const ollama = lastBody() as { options: Record<string, unknown>; keep_alive: unknown };
    assert.equal(ollama.options.top_k, 40);
    assert.equal(ollama.options.min_p, 0.05);
    assert.equal(ollama.options.repeat_penalty, 1.1);
    assert.equal(ollama.options.num_ctx, 4096);
    assert.equal(ollama.keep_alive, '5m');

    await page.selectOption('#dialect', 'openai-chat');
    await page.click('#settings summary');
    assert.match(await text('#top-k-hint'), /sent as top_k/);
    await page.fill('#extra-json', '{"logit_bias": {"42": -100}}');
    await page.click('#settings summary');
    assert.equal(await send('Tell me another.'), 'finished');
    const openai = lastBody();
    assert.equal(openai.top_k, 40);
    assert.equal(openai.min_p, 0.05);
    assert.equal(openai.repetition_penalty, 1.1);
    assert.equal(openai.repeat_penalty, 1.1);
    assert.deepEqual(openai.logit_bias, { '42': -100 });

    // A dialect without the field (the request field table's null cell): the setting is off and says
    // so, so nothing is dropped unseen.
    const without = DIALECT_IDS.find((dialect) => fieldRow('minP')?.wire[dialect] === null);
    assert.ok(without !== undefined);
    await page.selectOption('#dialect', without);
    assert.equal(await page.isDisabled('#min-p'), true);
    await page.click('#settings summary');
    assert.match(await text('#min-p-hint'), new RegExp(`${without} has no such field`));
    // Extra JSON that is not an object, or that sets what the page's own fields set, is refused.
    await page.selectOption('#dialect', 'openai-chat');
    const before = bodies.length;
    for (const [extra, message] of [
      ['[1]', /give a JSON object/],
      ['{"temperature": 2}', /temperature is set by the page's own fields/],
      ['{oops', /not JSON/],
    ] as const) {
      await page.fill('#extra-json', extra);
      await page.click('#send');
      assert.match(await text('#extra-error'), message);
    }
    assert.equal(bodies.length, before, 'nothing was sent');
    await page.fill('#extra-json', '');
    await page.click('#settings summary');
  });

  browserTest(
    'a prompt asking for a list, code and a table: Markdown, with the code highlighted by a chunk loaded only then',
    async () => {
      const chunk = () => requested.filter((path) => /\/code-highlighter-[\w-]+\.js$/.test(path)).length;
      await open('openai-chat');
      assert.equal(await send('Tell me how a river reaches the sea.'), 'finished');
      assert.equal(await page.locator('#answer pre').count(), 0);
      assert.equal(chunk(), 0, 'no code block: the highlighter is not loaded');

      assert.equal(await send('Show me a list, some code and a table.'), 'finished');
      await page.locator('#answer pre code.hljs').waitFor();
      assert.equal(chunk(), 1);
      assert.equal(await page.locator('#answer ol > li').count(), 4);
      assert.equal(await page.locator('#answer ul > li').count(), 3);
      assert.equal(await page.locator('#answer table tr').count(), 5);
      assert.match((await page.getAttribute('#answer pre code', 'data-language')) ?? '', /^(ts|typescript)$/);
      assert.ok((await page.locator('#answer pre code .hljs-keyword').count()) >= 3);
      assert.ok((await page.locator('#answer pre code .hljs-string').count()) >= 1);
      // The highlighted code reads as the model wrote it.
      assert.match(
        (await page.locator('#answer pre code').textContent()) ?? '',
        /for await \(const event of tokens\)/,
      );
      await page.screenshot({ path: shot('markdown-code-table') });

      // The next one moves up into the history, highlighted there too; the chunk is not loaded again.
      assert.equal(await send('And just the code, please.'), 'finished');
      await page.locator('#conversation pre code.hljs').first().waitFor();
      await page.locator('#answer pre code.hljs').waitFor();
      assert.equal(chunk(), 1);
    },
  );

  browserTest(
    'conversations are kept: a reload comes back, the list opens earlier ones, export as JSON and Markdown',
    async () => {
      await open('openai-chat');
      await page.click('#new-chat');
      assert.equal(await send('First question about rivers'), 'finished');
      assert.equal(await send('Second question, with a list'), 'finished');
      assert.match(page.url(), /#chat=[\w-]+$/);
      const kept = page.url();

      await page.reload();
      await page.locator('body[data-sim-raw]').waitFor();
      assert.equal(page.url(), kept);
      assert.equal(await page.locator('#conversation li.turn').count(), 4, 'both exchanges are back');
      assert.match(await text('#conversation li.user >> nth=0'), /First question about rivers/);
      assert.ok(
        (await page.locator('#conversation li.assistant ol li').count()) >= 4,
        'the list answer rendered',
      );

      // Export the conversation on the page.
      await openSaved();
      const [json] = await Promise.all([page.waitForEvent('download'), page.click('#export-json')]);
      const jsonPath = testOutputPath('playground-chat-export.json');
      await json.saveAs(jsonPath);
      const exported = JSON.parse(readFileSync(jsonPath, 'utf8')) as {
        format: string;
        title: string;
        dialect: string;
        model: string;
        turns: { role: string; content: string }[];
      };
      assert.equal(exported.format, 'tokenwire-conversation');
      assert.equal(exported.title, 'First question about rivers');
      assert.equal(exported.dialect, 'openai-chat');
      assert.equal(exported.model, 'md');
      assert.deepEqual(
        exported.turns.map((turn) => turn.role),
        ['user', 'assistant', 'user', 'assistant'],
      );
      assert.equal(exported.turns[2]?.content, 'Second question, with a list');
      const [markdown] = await Promise.all([page.waitForEvent('download'), page.click('#export-markdown')]);
      const markdownPath = testOutputPath('playground-chat-export.md');
      await markdown.saveAs(markdownPath);
      const md = readFileSync(markdownPath, 'utf8');
      assert.match(md, /^# First question about rivers\n/);
      assert.equal(md.match(/^## You$/gm)?.length, 2);
      assert.equal(md.match(/^## Model$/gm)?.length, 2);
      assert.match(md, /^1\. Rain and snow feed small streams\.$/m, "the answer's Markdown as it is");

      // A new chat, then back to the first one from the list.
      await page.click('#new-chat');
      assert.equal(await page.locator('#conversation li.turn').count(), 0);
      assert.equal(await send('A different topic'), 'finished');
      await openSaved();
      const items = page.locator('#saved-list li');
      assert.ok((await items.count()) >= 2);
      assert.match(await text('#saved-list li >> nth=0'), /A different topic/);
      await page.screenshot({ path: shot('saved-conversations') });
      await page.locator('#saved-list .open-saved', { hasText: 'First question about rivers' }).click();
      assert.equal(await page.locator('#conversation li.turn').count(), 4);
      assert.match(await text('#status'), /Opened "First question about rivers"/);
      // Sending goes on with it: its turns are the history.
      assert.equal(await send('Third question'), 'finished');
      assert.equal((lastBody().messages as unknown[]).length, 5);
    },
  );

  browserTest('fetched nothing from outside and logged no errors', async () => {
    assert.deepEqual(outside, []);
    // The page asks /sim/v1/models whether a simulator is there to read: a real server says 404, which
    // Chromium logs. Nothing else.
    assert.deepEqual(
      pageErrors.filter((line) => !/Failed to load resource: .*status of 404/.test(line)),
      [],
    );
    assert.ok(requested.filter((path) => path === '/sim/v1/models').length >= pageErrors.length);
  });
});
