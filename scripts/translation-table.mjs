#!/usr/bin/env node
// Writes docs/translation.md from the request field table (src/dialects/request-field-table.ts), so the
// documented translation is the one the gateway applies. Run after `tsc -p tsconfig.json`:
//   node scripts/translation-table.mjs          (writes the file)
//   node scripts/translation-table.mjs --check  (exits 1 when the file is out of date)
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const { translationMarkdown } = await import(join(root, '.build/src/dialects/translation-markdown.js'));
const path = join(root, 'docs/translation.md');
const text = translationMarkdown();
if (process.argv.includes('--check')) {
  const current = readFileSync(path, 'utf8');
  if (current !== text) {
    console.error('docs/translation.md is out of date: run node scripts/translation-table.mjs');
    process.exit(1);
  }
} else {
  writeFileSync(path, text);
  console.log(`wrote ${path}`);
}
