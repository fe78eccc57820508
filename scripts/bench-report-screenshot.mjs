#!/usr/bin/env node
// Renders the README's bench report screenshot (docs/bench-report.png): a sweep against the built-in
// simulator, its HTML report opened in headless Chromium (/usr/bin/chromium, as the web tests use),
// the top of the page (sweep table and charts) captured. Run after a build:
//   npx tsc -p tsconfig.json && node scripts/bench-report-screenshot.mjs
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';

const root = join(import.meta.dirname, '..');
const out = join(root, 'docs', 'bench-report.png');
const scratch = mkdtempSync(join(tmpdir(), 'tokenwire-bench-shot-'));
const report = join(scratch, 'report.html');
try {
  execFileSync(
    process.execPath,
    [
      join(root, '.build', 'src', 'cli', 'bin.js'),
      'bench',
      '-c',
      '1,4,16,48',
      '-n',
      '48',
      '--output-tokens',
      '48-96',
      '--sim-tps',
      '120',
      '--slo',
      'ttft=300ms,tpot=20ms',
      '--html',
      report,
      '--no-progress',
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
  });
  const page = await browser.newPage({ viewport: { width: 1160, height: 900 }, deviceScaleFactor: 1 });
  await page.goto(pathToFileURL(report).href);
  // The heading, the sweep table and its two charts; the page's command line stays out (it names a temp path).
  const top = await page.locator('h2').first().boundingBox();
  const charts = await page.locator('.sweep').boundingBox();
  if (top === null || charts === null) throw new Error('the report has no sweep section');
  mkdirSync(join(root, 'docs'), { recursive: true });
  await page.screenshot({
    path: out,
    clip: { x: 0, y: top.y - 8, width: 1160, height: charts.y + charts.height - top.y + 16 },
  });
  await browser.close();
  console.log(`wrote ${out}`);
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
