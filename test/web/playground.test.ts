import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { parseCaptureFile } from '../../src/capture/capture-file.ts';
import { replayRecording } from '../../src/cli/inspect/replay-recording.ts';
import { DIALECT_IDS } from '../../src/dialects/dialect.ts';
import { serveStatic } from '../../src/node/serve-static.ts';
import { simRawRoute } from '../../src/sim/index.ts';
import { cli } from '../cli/cli-helpers.ts';
import { ContinuePool } from '../helpers/continue-pool.ts';
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
/** One screenshot per state, written by the run (test-output/ is not committed). */
const shot = (name: string) => testOutputPath(`playground-${name}.png`);

/** A bounding box as getBoundingClientRect().toJSON() gives it. */
interface Box {
  top: number;
  bottom: number;
  left: number;
  right: number;
  height: number;
}

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
  /** Another gateway a test serves the page from (its own pool), allowed while that test runs. */
  const otherGateways: string[] = [];
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
    const statics = serveStatic({ root: WEB_ROOT });
    // As `tokenwire serve` mounts them with the simulator upstream: its own bytes at /sim/, then the page.
    const raw = simRawRoute((request) => g.sim.fetch(request));
    g = await startGateway({
      // splitGapMs as `tokenwire serve` sets it: split writes reach the browser as separate reads.
      sim: { timing: { tokensPerSecond: 30, loadMs: 0, ttftMs: 50, jitter: 0.1 }, splitGapMs: 2 },
      gateway: { fallback: async (request) => (await raw(request)) ?? statics(request) },
    });
    mkdirSync(dirname(SCREENSHOT), { recursive: true });
    profile = mkdtempSync(join(tmpdir(), 'tokenwire-chromium-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      viewport: { width: 1400, height: 900 },
      acceptDownloads: true,
      timeout: 30000,
    });
    // Nothing may be fetched from anywhere but the gateway that served the page.
    await context.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith(`${g.url}/`) || url.startsWith('data:')) return route.continue();
      if (otherGateways.some((origin) => url.startsWith(`${origin}/`))) return route.continue();
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
    // The page asks the gateway whether it serves the simulator's own bytes; wait for the answer.
    await page.locator('body[data-sim-raw]').waitFor();
    await page.selectOption('#dialect', dialect);
    await page.selectOption('#fault-preset', preset);
  }

  /** Sends the prompt in the box (the page empties it after each send: a default one when empty). */
  async function send(prompt = 'Tell me a story.'): Promise<void> {
    if ((await page.inputValue('#prompt')).trim() === '') await page.fill('#prompt', prompt);
    await page.click('#send');
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
      assert.match((await page.locator('#wire li.frame').last().textContent()) ?? '', /\[DONE\]/);
      // The client's verdict closes the column.
      assert.match((await rows.last().textContent()) ?? '', /complete · finish stop/);
      assert.match(await text('#wire-summary'), /HTTP 200 · text\/event-stream/);
      assert.match(await text('#wire-summary'), /answered by sim/, 'the upstream that answered is named');

      mkdirSync(dirname(SCREENSHOT), { recursive: true });
      await page.screenshot({ path: SCREENSHOT, fullPage: true });
    },
  );

  browserTest('Stop aborts the request: the gateway counts it cancelled and the page says so', async () => {
    const before = { sim: g.sim.stats.cancelled, gateway: cancelledStreams(await metricsText()) };
    await open('openai-completions', 'slow');
    assert.equal(await page.inputValue('#fault-spec'), 'tps=3');
    await send();
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
    await send();
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
      await send();
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
      await send();
      assert.equal(await settled(), 'incomplete');
      assert.match(await text('#banner'), /Incomplete: idle timeout/);
      assert.match(await text('#banner'), /no event for 400 ms/);
    },
  );

  browserTest('a mid-stream error shows the error; an HTTP error fails the request', async () => {
    await open('tgi', 'error');
    await send();
    assert.equal(await settled(), 'incomplete');
    assert.match(await text('#banner'), /Incomplete: server error/);
    assert.match(await text('#banner'), /simulated failure after 10 tokens/);

    await page.fill('#fault-spec', 'status=503');
    assert.equal(await page.inputValue('#fault-preset'), 'custom');
    await send();
    assert.equal(await settled(), 'failed');
    assert.match(await text('#banner'), /Request failed/);
    // The gateway answers 502 and passes on what the upstream said.
    assert.match(await text('#banner'), /HTTP 50[23].*simulated HTTP 503/s);
  });

  browserTest('shows HTML from the model as text, never as markup', async () => {
    await open('openai-chat');
    await page.fill('#fault-spec', 'tps=500,control-tokens=<img src=x onerror=alert(1)>');
    await send();
    assert.equal(await settled(), 'finished');
    assert.equal(await page.locator('#answer img').count(), 0);
    assert.match(await text('#answer'), /<img src=x onerror=alert\(1\)>/);
  });

  browserTest(
    'at 1400×900 the conversation and the raw wire fill the window under a compact bar',
    async () => {
      await open('openai-chat');
      await send();
      assert.equal(await settled(), 'finished');
      const layout = (await page.evaluate(`(() => {
      const box = (selector) => document.querySelector(selector).getBoundingClientRect().toJSON();
      return {
        scroll: document.scrollingElement.scrollHeight,
        height: window.innerHeight,
        bar: box('#request-form').height,
        thread: box('#thread'),
        reads: box('#wire-reads'),
        frames: box('#wire'),
        answer: box('#answer'),
      };
    })()`)) as {
        scroll: number;
        height: number;
        bar: number;
        thread: Box;
        reads: Box;
        frames: Box;
        answer: Box;
      };
      assert.ok(
        layout.scroll <= layout.height,
        `the page itself does not scroll (${layout.scroll} > ${layout.height})`,
      );
      assert.ok(layout.bar < 200, `the control bar is compact: ${layout.bar}px`);
      assert.ok(layout.thread.height > 450, `the conversation fills the window: ${layout.thread.height}px`);
      assert.ok(layout.reads.height > 450 && layout.frames.height > 450, 'the wire columns fill the window');
      // Side by side: the reads column left of the frames column, at the same height.
      assert.ok(layout.reads.right <= layout.frames.left + 1);
      assert.ok(Math.abs(layout.reads.top - layout.frames.top) < 2);
      // The whole answer is in view without scrolling.
      assert.ok(layout.answer.bottom <= layout.height, `answer bottom ${layout.answer.bottom}`);
      await page.screenshot({ path: shot('layout-1400x900') });
      // Every dialect of the registry is offered as the output dialect (new ones as they are added).
      const offered = await page
        .locator('#dialect option')
        .evaluateAll((options) => options.map((option) => (option as unknown as { value: string }).value));
      assert.deepEqual(offered, [...DIALECT_IDS]);
    },
  );

  browserTest(
    'the hint says what a custom spec does, from the fault table; a preset says what it sets',
    async () => {
      await open('openai-chat');
      await page.fill('#fault-spec', 'tps=8,cut-after=8');
      assert.equal(await page.inputValue('#fault-preset'), 'custom');
      const hint = await text('#fault-hint');
      assert.match(hint, /cut-after=8: after n output tokens, break the connection/);
      assert.match(hint, /tps=8: output tokens per second/);
      assert.doesNotMatch(hint, /clean stream/);
      await page.fill('#fault-spec', 'split-utf8');
      assert.match(await text('#fault-hint'), /split-utf8 only show with "Simulator's own bytes"/);
      await page.fill('#fault-spec', '');
      assert.match(await text('#fault-hint'), /No fault/);
      await page.selectOption('#fault-preset', 'stall');
      assert.match(
        await text('#preset-sets'),
        /fault spec stall=4000,stall-after=8 · max tokens: server default · idle timeout 2000 ms/,
      );
      assert.equal(await page.inputValue('#idle-ms'), '2000');
      await page.selectOption('#fault-preset', 'length');
      assert.match(await text('#preset-sets'), /max tokens 12/);
      await page.selectOption('#fault-preset', 'keepalives');
      assert.match(await text('#preset-sets'), /reads the simulator's own bytes/);
      assert.equal(await page.isChecked('#raw-sim'), true);
      await page.screenshot({ path: shot('preset-sets') });
    },
  );

  browserTest(
    'a server that dies mid-answer: the answer is whole, and the wire view marks the seam where another went on',
    async () => {
      const timing = { tokensPerSecond: 200, loadMs: 0, jitter: 0 };
      const replicas = new ContinuePool();
      const dying = await replicas.replica('dying', { timing, faults: 'die-after=6' });
      const sibling = await replicas.replica('sibling', { timing });
      const served = await replicas.gateway([dying.upstream, sibling.upstream], {
        continueOnFailure: true,
        fallback: serveStatic({ root: WEB_ROOT }),
      });
      otherGateways.push(served.url);
      const errorsBefore = pageErrors.length;
      try {
        await page.goto(`${served.url}/`);
        await page.locator('body[data-sim-raw]').waitFor();
        await page.selectOption('#dialect', 'openai-chat');
        await page.fill('#max-tokens', '30');
        await send();
        assert.equal(await settled(), 'truncated', 'ended at its cap: whole, not cut');
        const seam = page.locator('#wire li.comment', { hasText: 'seam' });
        assert.equal(await seam.count(), 1);
        assert.match((await seam.textContent()) ?? '', /seam: sibling went on after \d+ tokens/);
        assert.match(await text('#wire-summary'), / 0 keepalive comments/);
        assert.match(
          await text('#wire-summary'),
          /answered by dying · continued on sibling after \d+ tokens/,
        );
        await page.screenshot({ path: shot('continued-seam') });
      } finally {
        // This gateway fronts no simulator of its own: the page's probe of /sim/v1/models is a 404.
        const added = pageErrors.splice(errorsBefore);
        pageErrors.push(...added.filter((error) => !/status of 404/.test(error)));
        otherGateways.length = 0;
        await replicas.close();
      }
    },
  );

  browserTest(
    'keepalives: seen on the simulator own wire, beside the frames; through the gateway there are none',
    async () => {
      await open('openai-chat', 'keepalives');
      await page.fill('#fault-spec', 'keepalive=100,stall=600,stall-after=3');
      await page.fill('#max-tokens', '8');
      await send();
      assert.equal(await settled(), 'truncated');
      const summary = await text('#wire-summary');
      const keepalives = Number(/(\d+) keepalive comments/.exec(summary)?.[1]);
      assert.ok(keepalives >= 3, summary);
      // The reads column shows the comment bytes as they arrived; the frames column the comments parsed.
      assert.ok((await page.locator('#wire-reads li.comment').count()) >= 3);
      assert.equal(await page.locator('#wire li.comment').count(), keepalives);
      assert.match((await page.locator('#wire-reads li.comment').first().textContent()) ?? '', /:/);
      assert.match(await text('#dialect-hint'), /\/sim\/v1\/chat\/completions/);
      await page.screenshot({ path: shot('raw-keepalives') });

      // The same faults through the gateway: it decodes and re-encodes, so the comments never arrive.
      await page.uncheck('#raw-sim');
      await send();
      assert.equal(await settled(), 'truncated');
      assert.match(await text('#wire-summary'), / 0 keepalive comments/);
    },
  );

  browserTest(
    'split-utf8 on the raw wire: reads split inside characters, the answer whole beside them',
    async () => {
      await open('ollama-chat', 'split-utf8');
      assert.equal(await page.isChecked('#raw-sim'), true);
      await page.fill('#max-tokens', '40');
      await send();
      assert.equal(await settled(), 'truncated');
      const splits = Number(/(\d+) split inside a character/.exec(await text('#wire-summary'))?.[1]);
      assert.ok(splits > 3, `reads split inside a character: ${splits}`);
      const splitRows = page.locator('#wire-reads li', { hasText: 'split inside a character' });
      assert.ok((await splitRows.count()) > 3);
      // The bytes of a split character are shown as bytes (‹e3 81›), on both sides of the split.
      assert.match((await splitRows.first().textContent()) ?? '', /‹[0-9a-f]{2}( [0-9a-f]{2})*›$/);
      const answerText = await text('#answer');
      assert.doesNotMatch(answerText, /\uFFFD/);
      assert.match(answerText, /[^\u0000-\u007f]/, 'multi-byte text');
      await page.screenshot({ path: shot('raw-split-utf8') });
    },
  );

  /** The banner, the status line, the wire column's last row and the wire summary, read together. */
  async function endingEverywhere() {
    return {
      banner: (await page.locator('#banner').isVisible()) ? await text('#banner') : '',
      status: await text('#status'),
      wireEnd: (await page.locator('#wire-reads li').last().textContent()) ?? '',
      missing: await page.locator('#wire-reads li.end.missing').count(),
      summary: await text('#wire-summary'),
    };
  }

  browserTest(
    'no-done and a cut stream: the banner, status line, wire column and summary say the same ending',
    async () => {
      // openai-chat without [DONE]: the finish_reason is the terminal marker ([DONE] is optional), so
      // the client's Result is complete, and every place says so; the missing [DONE] is a note.
      await open('openai-chat', 'no-done');
      await page.fill('#max-tokens', '6');
      await send();
      assert.equal(await settled(), 'truncated');
      let seen = await endingEverywhere();
      assert.doesNotMatch(seen.banner, /Incomplete/);
      assert.doesNotMatch(seen.status, /Finished/, 'a length finish is not "Finished"');
      assert.match(seen.wireEnd, /terminal event: a finish_reason/);
      assert.doesNotMatch(seen.wireEnd, /no terminal event/);
      assert.match(seen.wireEnd, /no \[DONE\] \(optional after the finish\)/);
      assert.equal(seen.missing, 0);
      assert.match(seen.summary, /complete: terminal event received · no \[DONE\]/);
      await page.fill('#max-tokens', '');
      await page.fill('#fault-spec', 'no-done,tps=1000');
      await send();
      assert.equal(await settled(), 'finished');
      seen = await endingEverywhere();
      assert.match(seen.status, /^Finished\. The stream ended with its terminal event/);
      assert.match(seen.wireEnd, /terminal event: a finish_reason/);
      assert.match(seen.summary, /complete: terminal event received/);
      await page.screenshot({ path: shot('raw-no-done') });

      // ollama-chat without its terminal line ("done": true): incomplete, everywhere.
      await open('ollama-chat', 'no-done');
      await page.fill('#max-tokens', '6');
      await send();
      assert.equal(await settled(), 'incomplete');
      seen = await endingEverywhere();
      assert.match(seen.banner, /^Incomplete/);
      assert.doesNotMatch(seen.status, /Finished/);
      assert.match(seen.wireEnd, /no terminal event \(a line with "done": true never came\)/);
      assert.equal(seen.missing, 1);
      assert.match(seen.summary, /incomplete \([^)]+\): no terminal event/);
      assert.doesNotMatch(seen.summary, /terminal event received/);
      await page.screenshot({ path: shot('raw-no-done-ollama') });

      // A cut stream, through the gateway and on the raw wire: incomplete, everywhere.
      for (const raw of [false, true]) {
        await open('openai-chat', 'cut');
        if (raw) await page.check('#raw-sim');
        else await page.uncheck('#raw-sim');
        await send();
        assert.equal(await settled(), 'incomplete', `raw=${raw}`);
        seen = await endingEverywhere();
        assert.match(seen.banner, /^Incomplete/);
        assert.doesNotMatch(seen.status, /Finished/);
        assert.match(seen.wireEnd, /no terminal event|ended by/);
        assert.equal(seen.missing, 1);
        assert.match(seen.summary, /incomplete \([^)]+\)/);
        assert.doesNotMatch(seen.summary, /terminal event received/);
      }
      await page.screenshot({ path: shot('cut-ending') });

      // A clean stream says it got one; the answer before it moves up, marked as not finished.
      await page.selectOption('#fault-preset', 'none');
      await page.check('#raw-sim');
      await page.fill('#fault-spec', 'tps=1000');
      await send();
      assert.equal(await settled(), 'finished');
      assert.match(
        (await page.locator('#wire-reads li').last().textContent()) ?? '',
        /terminal event: a finish_reason, then data: \[DONE\].*\[DONE\] came/,
      );
      assert.equal(await page.locator('#conversation li.assistant.partial').count(), 1);
      assert.match(await text('#conversation li.assistant'), /did not finish/);
      await page.screenshot({ path: shot('raw-clean-after-cut') });
    },
  );

  browserTest(
    'a conversation: history, system prompt and sampling sent; copy, regenerate, edit and resend',
    async () => {
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: g.url });
      await open('openai-chat');
      const bodies: Record<string, unknown>[] = [];
      const onRequest = (request: { url(): string; postData(): string | null }) => {
        if (request.url().endsWith('/v1/chat/completions'))
          bodies.push(JSON.parse(request.postData() ?? '{}'));
      };
      page.on('request', onRequest);
      try {
        await page.click('#settings summary');
        await page.fill('#system-prompt', 'You are terse.');
        await page.fill('#temperature', '0.3');
        await page.fill('#top-p', '0.9');
        await page.fill('#seed', '42');
        await page.fill('#stop-strings', 'END, STOP');
        await page.click('#settings summary');
        await page.fill('#max-tokens', '12');
        await page.fill('#prompt', 'First question');
        await send();
        await settled();
        const first = (await page.locator('#answer').textContent())?.trim() ?? '';
        await page.fill('#prompt', 'Second question');
        await send();
        await settled();
        assert.equal(bodies.length, 2);
        const second = bodies[1] as { messages: { role: string; content: string }[] } & Record<
          string,
          unknown
        >;
        assert.deepEqual(
          second.messages.map((m) => m.role),
          ['system', 'user', 'assistant', 'user'],
        );
        assert.equal(second.messages[0]?.content, 'You are terse.');
        assert.equal(second.messages[2]?.content.replace(/\s/g, ''), first.replace(/\s/g, ''));
        assert.equal(second.temperature, 0.3);
        assert.equal(second.top_p, 0.9);
        assert.equal(second.seed, 42);
        assert.deepEqual(second.stop, ['END', 'STOP']);
        assert.equal(await page.locator('#conversation li.turn').count(), 2, 'the first exchange moved up');
        assert.equal(await page.locator('#answer').getAttribute('data-prompt'), 'Second question');
        await page.screenshot({ path: shot('conversation') });

        // Copy puts the answer on the clipboard.
        await page.click('#copy');
        await page.locator('#status', { hasText: /Copied|did not allow/ }).waitFor();
        assert.match(await text('#status'), /Copied the answer/);
        const copied = (await page.evaluate('navigator.clipboard.readText()')) as string;
        assert.equal(
          copied.replace(/\s/g, ''),
          ((await page.locator('#answer').textContent()) ?? '').replace(/\s/g, ''),
        );

        // Regenerate asks the same question again, with the same history, in place of the answer.
        await page.click('#regenerate');
        await settled();
        assert.equal(bodies.length, 3);
        assert.deepEqual(bodies[2]?.messages, second.messages);
        assert.equal(await page.locator('#conversation li.turn').count(), 2);

        // Edit-and-resend: the first question goes back into the box; it and what followed are dropped.
        await page.click('#conversation li.user .edit');
        assert.equal(await page.inputValue('#prompt'), 'First question');
        assert.equal(await page.locator('#conversation li.turn').count(), 0);
        await page.fill('#prompt', 'First question, edited');
        await send();
        await settled();
        const edited = bodies[3] as { messages: { role: string; content: string }[] };
        assert.deepEqual(
          edited.messages.map((m) => [m.role, m.content]),
          [
            ['system', 'You are terse.'],
            ['user', 'First question, edited'],
          ],
        );
        await page.click('#new-chat');
        assert.equal(await page.locator('#conversation li.turn').count(), 0);
      } finally {
        page.off('request', onRequest);
      }
    },
  );

  browserTest(
    'reasoning shows collapsed above the answer; a tool call assembles, then shows its parsed input',
    async () => {
      await open('openai-chat');
      await page.click('#settings summary');
      await page.check('#want-reasoning');
      await page.click('#settings summary');
      await send();
      assert.equal(await settled(), 'finished');
      assert.equal(await page.locator('#reasoning-box').isVisible(), true);
      assert.equal(await page.getAttribute('#reasoning-box', 'open'), null, 'collapsed');
      const reasoningBox = await page.locator('#reasoning-box').boundingBox();
      const answerBox = await page.locator('#answer').boundingBox();
      assert.ok(
        reasoningBox !== null && answerBox !== null && reasoningBox.y < answerBox.y,
        'above the answer',
      );
      await page.click('#reasoning-box summary');
      assert.ok(((await page.locator('#reasoning').textContent()) ?? '').length > 20);
      await page.screenshot({ path: shot('reasoning') });

      await page.click('#settings summary');
      await page.uncheck('#want-reasoning');
      await page.check('#offer-tool');
      await page.click('#settings summary');
      await page.evaluate(`{
      window.toolArgs = [];
      new MutationObserver(() => {
        const args = document.querySelector('#tool-calls .tool-args');
        if (args !== null) window.toolArgs.push(args.textContent);
      }).observe(document.querySelector('#tool-calls'), { subtree: true, childList: true, characterData: true });
    }`);
      await page.fill('#prompt', 'What is the weather in Lisbon?');
      await send();
      assert.equal(await settled(), 'finished');
      const growth = [...new Set((await page.evaluate('window.toolArgs')) as string[])].filter(
        (t) => t !== '',
      );
      assert.ok(growth.length >= 3, `the arguments grew in ${growth.length} steps`);
      for (let i = 1; i < growth.length; i++) assert.ok(growth[i]!.startsWith(growth[i - 1]!));
      assert.match(await text('#tool-calls .tool-name'), /get_weather/);
      const input = await text('#tool-calls .tool-input');
      assert.match(input, /^input: \{/);
      assert.match(input, /"city"/);
      assert.deepEqual(JSON.parse(input.slice('input: '.length)), JSON.parse(growth.at(-1)!));
      assert.match(await text('#fig-finish'), /tool-calls/);
      await page.screenshot({ path: shot('tool-call') });
    },
  );

  browserTest(
    'saves the wire as a capture that inspect replays alike, and loads one to replay it',
    async () => {
      await open('openai-chat', 'cut');
      await page.check('#raw-sim');
      await send();
      assert.equal(await settled(), 'incomplete');
      const pageText = (await page.locator('#answer').textContent()) ?? '';
      const reads = await page.locator('#wire-reads li.read').count();
      const [download] = await Promise.all([page.waitForEvent('download'), page.click('#save-capture')]);
      const path = testOutputPath('playground-capture.json');
      await download.saveAs(path);
      const bytes = new Uint8Array(readFileSync(path));
      const recording = parseCaptureFile(bytes, path);
      assert.ok(recording !== undefined, 'a capture file');
      assert.equal(recording.reads.length, reads);
      assert.ok(recording.reads.every((read, i) => i === 0 || read.atMs! >= recording.reads[i - 1]!.atMs!));
      assert.equal(recording.response?.status, 200);
      assert.equal(recording.end.kind, 'read-error');
      assert.match(recording.request?.url ?? '', /\/sim\/v1\/chat\/completions$/);
      // What inspect's replay makes of it is what the page showed.
      const replayed = await replayRecording(recording, 'openai-chat');
      assert.equal(replayed?.complete, false);
      assert.equal(replayed?.incomplete, 'connection-closed');
      assert.equal(replayed?.text.replace(/\s/g, ''), pageText.replace(/\s/g, ''));
      // "Save body": the raw bytes, which `tokenwire inspect --file` reads as they are.
      const [bodyDownload] = await Promise.all([page.waitForEvent('download'), page.click('#save-body')]);
      assert.equal(bodyDownload.suggestedFilename(), 'tokenwire-openai-chat.sse');
      const bodyPath = testOutputPath('playground-body.sse');
      await bodyDownload.saveAs(bodyPath);
      const inspected = await cli(['inspect', '--file', bodyPath, '--dialect', 'openai-chat', '--json']);
      const report = JSON.parse(inspected.io.out) as { result: { complete: boolean; text: string } };
      assert.equal(report.result.complete, false);
      assert.equal(report.result.text.replace(/\s/g, ''), pageText.replace(/\s/g, ''));

      // Load it back: the page replays it through its client, read by read.
      await open('openai-chat');
      await page.setInputFiles('#load-capture', path);
      assert.equal(await settled(), 'incomplete');
      assert.equal(
        (await page.locator('#answer').textContent())?.replace(/\s/g, ''),
        pageText.replace(/\s/g, ''),
      );
      assert.equal(await page.locator('#wire-reads li.read').count(), reads);
      assert.match(await text('#status'), /Replayed playground-capture\.json/);
      await page.screenshot({ path: shot('replayed-capture') });
    },
  );

  browserTest('an image goes with the prompt, in the shape of each dialect that takes images', async () => {
    // A 1×1 PNG.
    const png = Buffer.from(
      'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
      'base64',
    );
    const base64 = png.toString('base64');
    const bodies: Record<string, unknown>[] = [];
    const onRequest = (request: { url(): string; postData(): string | null }) => {
      if (/\/(v1\/chat\/completions|api\/chat|api\/generate|v1\/messages|v1\/responses)$/.test(request.url()))
        bodies.push(JSON.parse(request.postData() ?? '{}'));
    };
    page.on('request', onRequest);
    const dialects = [
      'openai-chat',
      'ollama-chat',
      'ollama-generate',
      'anthropic-messages',
      'openai-responses',
    ];
    try {
      for (const dialect of dialects) {
        await open(dialect);
        await page.setInputFiles('#image', { name: 'dot.png', mimeType: 'image/png', buffer: png });
        await page.fill('#prompt', 'What is in this picture?');
        await send();
        assert.equal(await settled(), 'finished', dialect);
        assert.equal(await page.inputValue('#image'), '', 'the image went with this prompt only');
      }
      type Turn = { content?: unknown; images?: string[] };
      const [openai, ollama, generate, messages, responses] = bodies as [
        { messages: Turn[] },
        { messages: Turn[] },
        { prompt: string; images?: string[] },
        { messages: Turn[] },
        { input: Turn[] },
      ];
      assert.equal(bodies.length, dialects.length);
      assert.deepEqual(openai.messages.at(-1)?.content, [
        { type: 'text', text: 'What is in this picture?' },
        { type: 'image_url', image_url: { url: `data:image/png;base64,${base64}` } },
      ]);
      assert.equal(ollama.messages.at(-1)?.content, 'What is in this picture?');
      assert.deepEqual(ollama.messages.at(-1)?.images, [base64]);
      assert.equal(generate.prompt, 'What is in this picture?');
      assert.deepEqual(generate.images, [base64]);
      assert.deepEqual(messages.messages.at(-1)?.content, [
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: base64 } },
        { type: 'text', text: 'What is in this picture?' },
      ]);
      assert.deepEqual(responses.input.at(-1)?.content, [
        { type: 'input_text', text: 'What is in this picture?' },
        { type: 'input_image', image_url: `data:image/png;base64,${base64}` },
      ]);
      // Dialects without images: the picker is off.
      for (const dialect of ['tgi', 'llamacpp', 'openai-completions']) {
        await page.selectOption('#dialect', dialect);
        assert.equal(await page.isDisabled('#image'), true, dialect);
      }
    } finally {
      page.off('request', onRequest);
    }
  });

  browserTest(
    'the dialects added to the registry work: through the gateway and on the raw wire',
    async () => {
      for (const dialect of DIALECT_IDS.filter(
        (id) => id === 'openai-responses' || id === 'anthropic-messages',
      )) {
        for (const raw of [false, true]) {
          await open(dialect);
          if (raw) await page.check('#raw-sim');
          await page.fill('#max-tokens', '20');
          await send();
          const state = await settled();
          assert.ok(state === 'finished' || state === 'truncated', `${dialect} raw=${raw}: ${state}`);
          assert.ok(((await page.locator('#answer').textContent()) ?? '').trim().length > 0);
          assert.match(
            (await page.locator('#wire-reads li').last().textContent()) ?? '',
            /terminal event: (response\.completed|a message_delta)/,
          );
        }
      }
    },
  );

  browserTest('fetched nothing from outside and logged no errors', () => {
    assert.deepEqual(outside, []);
    // The HTTP 502 above is the only expected console error (Chromium logs failed fetches).
    // The cut stream read from the simulator's own bytes ends in a broken chunked body, which Chromium logs.
    assert.deepEqual(
      pageErrors.filter(
        (line) => !/Failed to load resource: .*(status of 50[23]|ERR_INCOMPLETE_CHUNKED_ENCODING)/.test(line),
      ),
      [],
    );
  });
});
