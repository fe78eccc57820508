#!/usr/bin/env node
// Run first by `npm test`, before anything is built: the system packages the tests need beyond npm
// (redis-server for the Redis resume store's tests, Debian's chromium for the playground and the bench
// report, nginx for the deployment guide's proxy configuration). Missing ones are installed with
// apt-get when we are root on a Debian-like machine (as .ci/run does: apt-get update first); otherwise
// it stops at once, naming each missing package and the one command that installs it.
// TOKENWIRE_SKIP_DEP_CHECK=1 skips the check.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/** Each need: how to tell it is there, and the Debian package that provides it. */
const NEEDS = [
  { what: 'redis-server', package: 'redis-server', present: () => onPath('redis-server') },
  // The tests launch /usr/bin/chromium (Debian's package; playwright-core brings no browser).
  { what: '/usr/bin/chromium', package: 'chromium', present: () => existsSync('/usr/bin/chromium') },
  // test/node/nginx.test.ts runs docs/deploy.md's configuration in Debian's nginx (started by the test).
  { what: '/usr/sbin/nginx', package: 'nginx', present: () => existsSync('/usr/sbin/nginx') },
];

function onPath(command) {
  return spawnSync('/bin/sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

if (process.env.TOKENWIRE_SKIP_DEP_CHECK === '1') process.exit(0);
const missing = NEEDS.filter((need) => !need.present());
if (missing.length === 0) process.exit(0);

const packages = missing.map((need) => need.package);
const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
const sudo = isRoot ? '' : 'sudo ';
const install = `${sudo}apt-get update && ${sudo}apt-get install -y --no-install-recommends ${packages.join(' ')}`;
const hasApt = onPath('apt-get');
const say = (line) => process.stderr.write(`[check-test-deps] ${line}\n`);

if (isRoot && hasApt) {
  say(
    `installing ${packages.join(', ')} (missing: ${missing.map((need) => need.what).join(', ')}): ${install}`,
  );
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [
    ['update', '-qq'],
    ['install', '-y', '-qq', '--no-install-recommends', ...packages],
  ]) {
    const run = spawnSync('apt-get', args, { stdio: ['ignore', 'ignore', 'inherit'], env });
    if (run.status !== 0) {
      say(`apt-get ${args[0]} failed (exit ${run.status}); install by hand: ${install}`);
      process.exit(1);
    }
  }
  const still = NEEDS.filter((need) => !need.present());
  if (still.length > 0) {
    say(`still missing after apt-get: ${still.map((need) => need.what).join(', ')}`);
    process.exit(1);
  }
  process.exit(0);
}

for (const need of missing) say(`missing: ${need.what} (Debian package ${need.package})`);
say(`the tests need it; install with:  ${install}`);
if (!hasApt) say('(no apt-get here: install the same packages with your system package manager)');
process.exit(1);
