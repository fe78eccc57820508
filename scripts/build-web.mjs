#!/usr/bin/env node
// Builds the playground into dist/web/: bundles web/app.ts — with the project's own client, dialects
// and wire code from src/, and marked — for the browser with esbuild, and copies the static files
// beside it. The gateway serves dist/web as is (src/node/serve-static.ts): no build step at run time,
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
const result = await build({
  entryPoints: [join(web, 'app.ts')],
  outfile: join(out, 'app.js'),
  bundle: true,
  format: 'esm',
  // Browser only: a node:* import anywhere in what the page pulls in fails the build.
  platform: 'browser',
  // AbortSignal.any (used by the client) needs Chrome 116, Firefox 124, Safari 17.4.
  target: ['es2022', 'chrome116', 'firefox124', 'safari17.4'],
  tsconfig: join(web, 'tsconfig.json'),
  minify: true,
  sourcemap: 'linked',
  legalComments: 'none',
  banner: {
    js: `/*! tokenwire playground. Bundles marked ${marked.version} (MIT License); see THIRD_PARTY_NOTICES.txt */`,
  },
  metafile: true,
  logLevel: 'warning',
});

// Only our own code and marked go into the page.
const inputs = Object.keys(result.metafile.inputs);
const foreign = inputs.filter((path) => !/^(src|web)\/|^node_modules\/marked\//.test(path));
if (foreign.length > 0) {
  console.error(`build-web: unexpected modules in the bundle: ${foreign.join(', ')}`);
  process.exit(1);
}

copyFileSync(join(web, 'index.html'), join(out, 'index.html'));
copyFileSync(join(web, 'style.css'), join(out, 'style.css'));
writeFileSync(
  join(out, 'THIRD_PARTY_NOTICES.txt'),
  `The playground bundle (app.js) includes marked ${marked.version} (https://github.com/markedjs/marked):\n\n${readFileSync(join(root, 'node_modules', 'marked', 'LICENSE'), 'utf8')}`,
);

const bytes = result.metafile.outputs[relative(root, join(out, 'app.js'))]?.bytes ?? 0;
console.log(
  `build-web: ${relative(root, out)}/app.js ${(bytes / 1024).toFixed(1)} KiB from ${inputs.length} modules`,
);
