import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { serveStatic } from '../../src/node/serve-static.ts';
import { startGateway, type TestGateway } from '../helpers/gateway.ts';
import { repoRoot, testOutputPath } from '../helpers/paths.ts';

/** Debian's chromium; .ci/run installs it with apt-get when it is missing. */
const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
];
/** Built by scripts/build-web.mjs (part of `npm test` and `npm run build`). */
const WEB_ROOT = join(repoRoot, 'dist', 'web');
const SCREENSHOT = testOutputPath('playground-finished.png');

interface AnswerState {
  state: string | undefined;
  text: string;
}

/**
 * The playground page in real headless Chromium, against a gateway on 127.0.0.1 fronting a simulator
 * slow enough (30 tokens/s) to watch the answer arrive. One browser for the whole file.
 */
describe('playground page (headless Chromium)', () => {
  let g: TestGateway;
  let context: BrowserContext;
  let page: Page;
  let profile: string;
  const outside: string[] = [];
  const pageErrors: string[] = [];

  /** Set when the browser or the gateway could not start: every test then fails with it (never skips). */
  let setupError: unknown;

  async function setUp(): Promise<void> {
    if (!existsSync(CHROMIUM)) {
      throw new Error(
        `Chromium is not installed at ${CHROMIUM}: the playground tests need a real browser. ` +
          "Install Debian's package (apt-get install -y chromium); .ci/run does this in CI.",
      );
    }
    if (!existsSync(join(WEB_ROOT, 'app.js'))) {
      throw new Error(
        `the playground bundle is not built (${WEB_ROOT}/app.js): run node scripts/build-web.mjs (npm test does)`,
      );
    }
    g = await startGateway({
      sim: { timing: { tokensPerSecond: 30, loadMs: 0, ttftMs: 50, jitter: 0.1 } },
      gateway: { fallback: serveStatic({ root: WEB_ROOT }) },
    });
    profile = mkdtempSync(join(tmpdir(), 'tokenwire-chromium-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      viewport: { width: 1280, height: 900 },
      timeout: 30000,
    });
    // Nothing may be fetched from anywhere but the gateway that served the page.
    await context.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith(`${g.url}/`) || url.startsWith('data:')) return route.continue();
      outside.push(url);
      return route.abort();
    });
    page = context.pages()[0] ?? (await context.newPage());
    page.setDefaultTimeout(20000);
    page.on('pageerror', (error) => pageErrors.push(`pageerror: ${error.message}`));
    page.on('console', (message) => {
      if (message.type() === 'error') pageErrors.push(`console: ${message.text()}`);
    });
  }

  before(async () => {
    try {
      await setUp();
    } catch (error) {
      setupError = error;
    }
  });

  /** A test that needs the browser: it fails with the set-up error when there is none. */
  function browserTest(name: string, body: () => Promise<void> | void): void {
    it(name, async () => {
      if (setupError !== undefined) throw setupError;
      await body();
    });
  }

  after(async () => {
    await context?.close();
    await g?.close();
    if (profile !== undefined) rmSync(profile, { recursive: true, force: true });
  });

  /** A fresh page with the dialect and failure preset chosen. */
  async function open(dialect: string, preset = 'none'): Promise<void> {
    await page.goto(`${g.url}/`);
    await page.selectOption('#dialect', dialect);
    await page.selectOption('#fault-preset', preset);
  }

  /** Waits until the answer leaves the streaming state; returns the state it ended in. */
  async function settled(): Promise<string> {
    const answer = page.locator('#answer:not([data-state="streaming"]):not([data-state="idle"])');
    await answer.waitFor();
    return (await answer.getAttribute('data-state')) ?? '';
  }

  /** The text as rendered (hidden elements left out). */
  // biome-ignore lint/performance/useDomNodeTextContent: Playwright's Locator.innerText, not the DOM property.
  const text = (selector: string) => page.locator(selector).innerText();
  const metricsText = async () => (await fetch(`${g.url}/metrics`)).text();
  const cancelledStreams = (metrics: string) =>
    Number(/^tokenwire_streams_total\{[^}]*outcome="cancelled"[^}]*\} (\d+)/m.exec(metrics)?.[1] ?? 0);

  browserTest(
    'shows the answer growing as it streams, then the finished answer as Markdown with its figures',
    async () => {
      await open('openai-chat');
      await page.fill('#prompt', 'Tell me a story.');
      // Every change to the answer, recorded in the page as it happens (in-page code as a string: the
      // tests compile without the DOM library).
      await page.evaluate(`{
      const answer = document.querySelector('#answer');
      window.answerStates = [];
      new MutationObserver(() => window.answerStates.push({ state: answer.dataset.state, text: answer.textContent }))
        .observe(answer, { subtree: true, childList: true, characterData: true, attributes: true });
    }`);
      // Every control has a label.
      const unlabelled = await page.evaluate(
        `[...document.querySelectorAll('input, select, textarea, button')].filter((e) => e.labels !== null && e.labels.length === 0 && e.textContent.trim() === '').map((e) => e.id)`,
      );
      assert.deepEqual(unlabelled, []);
      await page.focus('#prompt');
      await page.keyboard.press('Control+Enter');
      assert.equal(await settled(), 'finished');

      const states = (await page.evaluate('window.answerStates')) as AnswerState[];
      const streaming: string[] = [];
      for (const s of states) {
        if (s.state !== 'streaming' || s.text === '' || s.text === streaming.at(-1)) continue;
        streaming.push(s.text);
      }
      assert.ok(streaming.length >= 3, `expected at least 3 growing states, saw ${streaming.length}`);
      for (let i = 1; i < streaming.length; i++) {
        assert.ok(streaming[i]!.startsWith(streaming[i - 1]!), `state ${i} does not extend state ${i - 1}`);
      }
      const finishedAt = states.findIndex((s) => s.state === 'finished');
      const lastStreamingAt = states.findLastIndex((s) => s.state === 'streaming');
      assert.ok(lastStreamingAt < finishedAt, 'the growing states came before the finish');

      // Settled: Markdown paragraphs, the same text as streamed.
      assert.ok((await page.locator('#answer p').count()) >= 1);
      assert.equal(await page.locator('#answer .plain').count(), 0);
      const final = await page.locator('#answer').textContent();
      assert.equal(final!.replace(/\s/g, ''), streaming.at(-1)!.replace(/\s/g, ''));
      assert.equal(await page.locator('#banner').isVisible(), false);
      assert.match(await text('#status'), /^Finished\./);

      assert.match(await text('#fig-ttft'), /^\d+ ms$|^\d+\.\d\d s$/);
      assert.match(await text('#fig-tps'), /^\d+\.\d$/);
      assert.ok(Number(await text('#fig-chunks')) >= 3);
      assert.match(await text('#fig-elapsed'), /^\d/);
      assert.match(await text('#fig-finish'), /^stop/);
      assert.match(await text('#fig-usage'), /in \d+ · out \d+ · total \d+ tokens/);

      // The raw wire: every frame with its time offset, ending with the OpenAI sentinel.
      const rows = page.locator('#wire li');
      assert.ok((await rows.count()) >= Number(await text('#fig-chunks')));
      assert.match((await rows.first().textContent()) ?? '', /^\+\d+\.\d ms/);
      assert.match((await rows.last().textContent()) ?? '', /\[DONE\]/);
      assert.match(await text('#wire-summary'), /HTTP 200 · text\/event-stream/);

      mkdirSync(dirname(SCREENSHOT), { recursive: true });
      await page.screenshot({ path: SCREENSHOT, fullPage: true });
    },
  );

  browserTest('Stop aborts the request: the gateway counts it cancelled and the page says so', async () => {
    const before = { sim: g.sim.stats.cancelled, gateway: cancelledStreams(await metricsText()) };
    await open('openai-completions', 'slow');
    assert.equal(await page.inputValue('#fault-spec'), 'tps=3');
    await page.click('#send');
    await page.locator('#answer .plain', { hasText: /\S/ }).waitFor();
    await page.click('#stop');
    assert.equal(await settled(), 'cancelled');
    assert.equal(await page.getAttribute('#banner', 'data-kind'), 'cancelled');
    assert.match(await text('#banner'), /Cancelled/);
    assert.doesNotMatch(await text('#status'), /Finished/);
    assert.match(await text('#fig-finish'), /none/);

    // The connection closed, so the gateway aborted its upstream and counted the stream cancelled.
    const deadline = Date.now() + 10000;
    let cancelled = 0;
    while (Date.now() < deadline) {
      cancelled = cancelledStreams(await metricsText()) - before.gateway;
      if (cancelled >= 1 && g.sim.stats.cancelled > before.sim) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.equal(cancelled, 1, 'tokenwire_streams_total{outcome="cancelled"} went up by one');
    assert.equal(g.sim.stats.cancelled - before.sim, 1, 'the simulator saw the cancel');
    assert.equal(g.sim.stats.log.at(-1)?.outcome, 'cancelled');
  });

  browserTest('a length finish shows the truncation banner', async () => {
    await open('ollama-chat', 'length');
    assert.equal(await page.inputValue('#max-tokens'), '12');
    await page.click('#send');
    assert.equal(await settled(), 'truncated');
    assert.equal(await page.getAttribute('#banner', 'data-kind'), 'truncated');
    assert.match(await text('#banner'), /Truncated by the output limit/);
    assert.match(await text('#banner'), /cut off/);
    assert.match(await text('#fig-finish'), /^length/);
    assert.doesNotMatch(await text('#status'), /Finished/);
  });

  browserTest(
    'a cut stream and an idle timeout show the incomplete banner with the partial text',
    async () => {
      await open('llamacpp', 'cut');
      await page.click('#send');
      assert.equal(await settled(), 'incomplete');
      assert.equal(await page.getAttribute('#banner', 'data-kind'), 'incomplete');
      const banner = await text('#banner');
      assert.match(banner, /^Incomplete/);
      assert.match(banner, /cut after 12 tokens|connection/);
      assert.match(banner, /partial/);
      assert.ok((await text('#answer')).length > 0, 'the partial text is kept');
      assert.doesNotMatch(await text('#status'), /Finished/);

      // The model stalls longer than the client's idle timeout.
      await page.fill('#fault-spec', 'stall=5000,stall-after=2');
      await page.fill('#idle-ms', '400');
      await page.click('#send');
      assert.equal(await settled(), 'incomplete');
      assert.match(await text('#banner'), /Incomplete: idle timeout/);
      assert.match(await text('#banner'), /no event for 400 ms/);
    },
  );

  browserTest('a mid-stream error shows the error; an HTTP error fails the request', async () => {
    await open('tgi', 'error');
    await page.click('#send');
    assert.equal(await settled(), 'incomplete');
    assert.match(await text('#banner'), /Incomplete: server error/);
    assert.match(await text('#banner'), /simulated failure after 10 tokens/);

    await page.fill('#fault-spec', 'status=503');
    assert.equal(await page.inputValue('#fault-preset'), 'custom');
    await page.click('#send');
    assert.equal(await settled(), 'failed');
    assert.match(await text('#banner'), /Request failed/);
    // The gateway answers 502 and passes on what the upstream said.
    assert.match(await text('#banner'), /HTTP 502.*simulated HTTP 503/s);
  });

  browserTest('shows HTML from the model as text, never as markup', async () => {
    await open('openai-chat');
    await page.fill('#fault-spec', 'tps=500,control-tokens=<img src=x onerror=alert(1)>');
    await page.click('#send');
    assert.equal(await settled(), 'finished');
    assert.equal(await page.locator('#answer img').count(), 0);
    assert.match(await text('#answer'), /<img src=x onerror=alert\(1\)>/);
  });

  browserTest('fetched nothing from outside and logged no errors', () => {
    assert.deepEqual(outside, []);
    // The HTTP 502 above is the only expected console error (Chromium logs failed fetches).
    assert.deepEqual(
      pageErrors.filter((line) => !/Failed to load resource: .*status of 502/.test(line)),
      [],
    );
  });
});
