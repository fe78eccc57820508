#!/usr/bin/env node
// Builds the playground into dist/web/: bundles web/app.ts — with the project's own client, dialects
// and wire code from src/, and marked — for the browser with esbuild (highlight.js in a chunk of its own,
// loaded when an answer shows code), and copies the static files beside it. The gateway serves dist/web as is (src/node/serve-static.ts): no build step at run time,
// nothing fetched from outside. Usage: node scripts/build-web.mjs
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { build } from 'esbuild';

const root = join(import.meta.dirname, '..');
const web = join(root, 'web');
const out = join(root, 'dist', 'web');

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

const marked = JSON.parse(readFileSync(join(root, 'node_modules', 'marked', 'package.json'), 'utf8'));
const hljs = JSON.parse(readFileSync(join(root, 'node_modules', 'highlight.js', 'package.json'), 'utf8'));
const result = await build({
  entryPoints: { app: join(web, 'app.ts') },
  outdir: out,
  bundle: true,
  format: 'esm',
  // The code highlighter (web/code-highlighter.ts, highlight.js) is imported dynamically: a chunk of its
  // own that the page loads only when an answer holds a code block.
  splitting: true,
  chunkNames: '[name]-[hash]',
  // Browser only: a node:* import anywhere in what the page pulls in fails the build.
  platform: 'browser',
  // AbortSignal.any (used by the client) needs Chrome 116, Firefox 124, Safari 17.4.
  target: ['es2022', 'chrome116', 'firefox124', 'safari17.4'],
  tsconfig: join(web, 'tsconfig.json'),
  minify: true,
  sourcemap: 'linked',
  legalComments: 'none',
  banner: {
    js: `/*! tokenwire playground. Bundles marked ${marked.version} (MIT License) and highlight.js ${hljs.version} (BSD-3-Clause); see THIRD_PARTY_NOTICES.txt */`,
  },
  metafile: true,
  logLevel: 'warning',
});

// Only our own code, marked and highlight.js go into the page.
const inputs = Object.keys(result.metafile.inputs);
const foreign = inputs.filter((path) => !/^(src|web)\/|^node_modules\/(marked|highlight\.js)\//.test(path));
if (foreign.length > 0) {
  console.error(`build-web: unexpected modules in the bundle: ${foreign.join(', ')}`);
  process.exit(1);
}

copyFileSync(join(web, 'index.html'), join(out, 'index.html'));
copyFileSync(join(web, 'style.css'), join(out, 'style.css'));
writeFileSync(
  join(out, 'THIRD_PARTY_NOTICES.txt'),
  `The playground bundle (app.js) includes marked ${marked.version} (https://github.com/markedjs/marked):\n\n${readFileSync(join(root, 'node_modules', 'marked', 'LICENSE'), 'utf8')}\n\n` +
    `Its code-highlighter chunk includes highlight.js ${hljs.version} (https://github.com/highlightjs/highlight.js):\n\n${readFileSync(join(root, 'node_modules', 'highlight.js', 'LICENSE'), 'utf8')}`,
);

const sizes = Object.entries(result.metafile.outputs)
  .filter(([path]) => path.endsWith('.js'))
  .map(([path, output]) => `${relative(relative(root, out), path)} ${(output.bytes / 1024).toFixed(1)} KiB`);
console.log(`build-web: ${relative(root, out)}/ ${sizes.join(', ')} from ${inputs.length} modules`);
