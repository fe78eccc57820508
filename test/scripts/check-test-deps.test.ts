import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { repoRoot } from '../helpers/paths.ts';

const script = join(repoRoot, 'scripts', 'check-test-deps.mjs');

describe('scripts/check-test-deps.mjs (run first by npm test)', () => {
  it('is the first step of the test script, before anything is built', () => {
    const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    assert.match(pkg.scripts.test ?? '', /^node scripts\/check-test-deps\.mjs && /);
  });

  it('passes at once when everything is installed (this machine runs the whole suite)', () => {
    const run = spawnSync(process.execPath, [script], { encoding: 'utf8' });
    assert.equal(run.status, 0, run.stderr);
  });

  it('stops at once when it cannot install, naming the missing package and the command that installs it', () => {
    // A PATH with nothing on it: no redis-server and no apt-get, so nothing can be installed.
    const empty = mkdtempSync(join(tmpdir(), 'tokenwire-empty-path-'));
    try {
      const run = spawnSync(process.execPath, [script], {
        encoding: 'utf8',
        env: { PATH: empty, HOME: process.env.HOME ?? '/' },
      });
      assert.equal(run.status, 1);
      assert.match(run.stderr, /missing: redis-server \(Debian package redis-server\)/);
      assert.match(
        run.stderr,
        /(sudo )?apt-get update && (sudo )?apt-get install -y --no-install-recommends [a-z -]*redis-server/,
      );
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it('can be skipped with TOKENWIRE_SKIP_DEP_CHECK=1', () => {
    const empty = mkdtempSync(join(tmpdir(), 'tokenwire-empty-path-'));
    try {
      const run = spawnSync(process.execPath, [script], {
        encoding: 'utf8',
        env: { PATH: empty, TOKENWIRE_SKIP_DEP_CHECK: '1' },
      });
      assert.equal(run.status, 0);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
  it('as root with apt-get, runs apt-get update then install of exactly the missing package', () => {
    // A stand-in apt-get that logs its arguments and "installs" redis-server onto the same PATH.
    const dir = mkdtempSync(join(tmpdir(), 'tokenwire-fake-apt-'));
    try {
      const fake = join(dir, 'apt-get');
      writeFileSync(
        fake,
        `#!${process.execPath}\nconst fs = require('node:fs');\nfs.appendFileSync(${JSON.stringify(join(dir, 'log'))}, process.argv.slice(2).join(' ') + '\\n');\nif (process.argv[2] === 'install') { fs.writeFileSync(${JSON.stringify(join(dir, 'redis-server'))}, '#!/bin/sh\\n'); fs.chmodSync(${JSON.stringify(join(dir, 'redis-server'))}, 0o755); }\n`,
      );
      chmodSync(fake, 0o755);
      const run = spawnSync(process.execPath, [script], { encoding: 'utf8', env: { PATH: dir } });
      const root = typeof process.getuid === 'function' && process.getuid() === 0;
      if (root) {
        assert.equal(run.status, 0, run.stderr);
        assert.deepEqual(readFileSync(join(dir, 'log'), 'utf8').trim().split('\n'), [
          'update -qq',
          'install -y -qq --no-install-recommends redis-server',
        ]);
      } else {
        // Not root: nothing is installed; the message says to use sudo.
        assert.equal(run.status, 1);
        assert.match(run.stderr, /sudo apt-get update && sudo apt-get install/);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
