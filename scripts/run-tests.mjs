#!/usr/bin/env node
// Runs the compiled tests (.build/test/**/*.test.js) with node:test. Node 20 does not expand globs
// given to --test, so the files are listed here. Usage: node scripts/run-tests.mjs [filter...]
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = join(import.meta.dirname, '..', '.build', 'test');
const filters = process.argv.slice(2);

function walk(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...walk(path));
    else if (name.endsWith('.test.js')) out.push(path);
  }
  return out;
}

const files = walk(root)
  .filter((file) => filters.length === 0 || filters.some((f) => relative(root, file).includes(f)))
  .sort();
if (files.length === 0) {
  console.error('no test files found; did tsc run?');
  process.exit(1);
}
const concurrency = process.env.TEST_CONCURRENCY ?? '2';
const result = spawnSync(
  process.execPath,
  ['--test', '--test-reporter=spec', `--test-concurrency=${concurrency}`, '--test-timeout=120000', ...files],
  { stdio: 'inherit' },
);
process.exit(result.status ?? 1);
