import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root, found from this file whether it runs from `test/` (tsx) or `.build/test/`. */
export const repoRoot: string = (() => {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && JSON.parse(readFileSync(manifest, 'utf8')).name === 'tokenwire') return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error('repository root not found');
    dir = parent;
  }
})();

export function fixturePath(...parts: string[]): string {
  return join(repoRoot, 'test', 'fixtures', ...parts);
}

export function readFixture(...parts: string[]): Uint8Array {
  return new Uint8Array(readFileSync(fixturePath(...parts)));
}

/** Where tests write files a person may look at (screenshots, reports). */
export function testOutputPath(...parts: string[]): string {
  return join(repoRoot, 'test-output', ...parts);
}
