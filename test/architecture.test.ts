import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { repoRoot } from './helpers/paths.ts';

/**
 * The import rules of design.md, checked on every source file: layers point one way, the browser-safe
 * layers import nothing from node:*, dialects never import each other, the simulator never reuses the
 * client or the gateway (so a decoding bug cannot cancel itself out), and nothing imports the CLI.
 */

type Layer =
  | 'root'
  | 'errors'
  | 'events'
  | 'wire'
  | 'dialects'
  | 'client'
  | 'server'
  | 'sim'
  | 'node'
  | 'bench'
  | 'cli';

const ALLOWED: Record<Layer, readonly Layer[]> = {
  errors: [],
  events: ['errors', 'events'],
  wire: ['errors', 'wire'],
  dialects: ['errors', 'events', 'wire', 'dialects'],
  client: ['errors', 'events', 'wire', 'dialects', 'client'],
  server: ['errors', 'events', 'wire', 'dialects', 'client', 'server'],
  sim: ['errors', 'events', 'wire', 'dialects', 'sim'],
  node: ['errors', 'events', 'wire', 'dialects', 'client', 'server', 'node'],
  bench: ['errors', 'events', 'wire', 'dialects', 'client', 'bench', 'node'],
  cli: ['root', 'errors', 'events', 'wire', 'dialects', 'client', 'server', 'sim', 'node', 'bench', 'cli'],
  root: ['errors', 'events', 'wire', 'dialects', 'client'],
};

/** Layers that run in a browser (or any web-standard runtime): no node:* at run time. */
const WEB_STANDARD = new Set<Layer>([
  'root',
  'errors',
  'events',
  'wire',
  'dialects',
  'client',
  'server',
  'sim',
]);
/** Layers that must not load npm packages at run time (type-only imports are fine). */
const NO_PACKAGES = new Set<Layer>(['root', 'errors', 'events', 'wire', 'dialects', 'client']);

const srcRoot = join(repoRoot, 'src');
/** Folders of code several dialects share (`openai-family/`, `common/`…): not dialects themselves. */
const FAMILY_FOLDERS = /^(common|[a-z0-9]+-family)$/;

function layerOf(file: string): Layer {
  const rel = relative(srcRoot, file).replace(/\\/g, '/');
  if (rel === 'errors.ts') return 'errors';
  if (!rel.includes('/')) return 'root';
  return rel.split('/')[0] as Layer;
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...sourceFiles(path));
    else if (name.endsWith('.ts')) out.push(path);
  }
  return out;
}

interface ImportSite {
  specifier: string;
  typeOnly: boolean;
}

function importsOf(text: string): ImportSite[] {
  const sites: ImportSite[] = [];
  const statement = /^\s*(import|export)\s+(type\s+)?[^'"]*?from\s+['"]([^'"]+)['"]/gm;
  for (const match of text.matchAll(statement))
    sites.push({ specifier: match[3]!, typeOnly: match[2] !== undefined });
  const bare = /^\s*import\s+['"]([^'"]+)['"]/gm;
  for (const match of text.matchAll(bare)) sites.push({ specifier: match[1]!, typeOnly: false });
  const dynamic = /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;
  for (const match of text.matchAll(dynamic)) sites.push({ specifier: match[1]!, typeOnly: false });
  return sites;
}

describe('architecture', () => {
  const files = sourceFiles(srcRoot);

  it('finds the source tree', () => {
    assert.ok(files.length > 50);
  });

  it('keeps imports pointing one way, node:* out of web-standard layers, and npm packages out of the core', () => {
    const violations: string[] = [];
    for (const file of files) {
      const layer = layerOf(file);
      const rel = relative(repoRoot, file);
      for (const site of importsOf(readFileSync(file, 'utf8'))) {
        const { specifier } = site;
        if (
          specifier.startsWith('node:') ||
          ['fs', 'http', 'net', 'path', 'stream', 'crypto', 'os', 'url'].includes(specifier)
        ) {
          if (!site.typeOnly && WEB_STANDARD.has(layer))
            violations.push(`${rel}: ${layer} must not import ${specifier}`);
          continue;
        }
        if (!specifier.startsWith('.')) {
          if (!site.typeOnly && NO_PACKAGES.has(layer))
            violations.push(`${rel}: ${layer} must not load the package ${specifier}`);
          continue;
        }
        const target = resolve(dirname(file), specifier);
        const targetLayer = layerOf(target);
        if (!ALLOWED[layer].includes(targetLayer))
          violations.push(`${rel}: ${layer} must not import ${targetLayer} (${specifier})`);
        if (layer === 'dialects' && targetLayer === 'dialects') {
          const own = relative(srcRoot, file).split('/')[1];
          const other = relative(srcRoot, target).split('/')[1];
          const isFolder = (part: string | undefined) =>
            part !== undefined && !part.endsWith('.ts') && !FAMILY_FOLDERS.test(part);
          if (isFolder(own) && isFolder(other) && own !== other) {
            violations.push(`${rel}: the ${own} dialect must not import the ${other} dialect`);
          }
          if (own !== undefined && FAMILY_FOLDERS.test(own) && isFolder(other)) {
            violations.push(`${rel}: shared code (${own}) must not import the ${other} dialect`);
          }
        }
      }
    }
    assert.deepEqual(violations, []);
  });

  it('checks the rules it enforces (a planted violation is caught)', () => {
    const sites = importsOf(
      "import { x } from '../client/index.ts';\nimport type { Y } from 'node:http';\nconst m = await import('node:fs');",
    );
    assert.deepEqual(
      sites.map((s) => [s.specifier, s.typeOnly]),
      [
        ['../client/index.ts', false],
        ['node:http', true],
        ['node:fs', false],
      ],
    );
    assert.equal(ALLOWED.sim.includes('client'), false);
    assert.equal(ALLOWED.wire.includes('events'), false);
  });
});
