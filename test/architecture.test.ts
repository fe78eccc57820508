import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { repoRoot } from './helpers/paths.ts';

/**
 * The import rules of design.md, checked on every source file and the playground's (web/): layers point
 * one way, the browser-safe layers import nothing from node:*, dialects never import each other, the
 * simulator never reuses the client or the gateway (so a decoding bug cannot cancel itself out), nothing
 * imports the CLI, and the page bundles only web-standard layers.
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
  | 'capture'
  | 'node'
  | 'bench'
  | 'cli'
  /** The playground page (web/*.ts, bundled for the browser by scripts/build-web.mjs). */
  | 'web'
  /** Anything outside src/ and web/ (a relative import that leaves them). */
  | 'outside';

const ALLOWED: Record<Layer, readonly Layer[]> = {
  errors: [],
  events: ['errors', 'events'],
  wire: ['errors', 'wire'],
  dialects: ['errors', 'events', 'wire', 'dialects'],
  client: ['errors', 'events', 'wire', 'dialects', 'client'],
  server: ['errors', 'events', 'wire', 'dialects', 'client', 'server'],
  sim: ['errors', 'events', 'wire', 'dialects', 'sim'],
  // Recordings and the capture file format: shared by `tokenwire inspect` and the playground.
  capture: ['errors', 'events', 'wire', 'dialects', 'capture'],
  node: ['errors', 'events', 'wire', 'dialects', 'client', 'server', 'node'],
  bench: ['errors', 'events', 'wire', 'dialects', 'client', 'bench', 'node'],
  cli: [
    'root',
    'errors',
    'events',
    'wire',
    'dialects',
    'client',
    'server',
    'sim',
    'capture',
    'node',
    'bench',
    'cli',
  ],
  root: ['errors', 'events', 'wire', 'dialects', 'client'],
  // The page: the client, what it decodes with, the simulator's fault table, capture files. Never the
  // gateway, node/ or the CLI (the bundle must stay small and browser-only).
  web: ['errors', 'events', 'wire', 'dialects', 'client', 'sim', 'capture', 'web'],
  outside: [],
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
  'capture',
  'web',
]);
/**
 * Layers that must not load npm packages at run time (type-only imports are fine). The page may (it
 * bundles marked); scripts/build-web.mjs fails on any package in the bundle but marked.
 */
const NO_PACKAGES = new Set<Layer>(['root', 'errors', 'events', 'wire', 'dialects', 'client', 'capture']);

const srcRoot = join(repoRoot, 'src');
const webRoot = join(repoRoot, 'web');
/** Folders of code several dialects share (`openai-family/`, `common/`…): not dialects themselves. */
const FAMILY_FOLDERS = /^(common|[a-z0-9]+-family)$/;

function layerOf(file: string): Layer {
  if (isInside(webRoot, file)) return 'web';
  if (!isInside(srcRoot, file)) return 'outside';
  const rel = relative(srcRoot, file).replace(/\\/g, '/');
  if (rel === 'errors.ts') return 'errors';
  if (!rel.includes('/')) return 'root';
  return rel.split('/')[0] as Layer;
}

function isInside(dir: string, file: string): boolean {
  const rel = relative(dir, file);
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel);
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

/** What breaks the rules in one file's text (`file` says which layer it is in). */
function violationsOf(file: string, text: string): string[] {
  const violations: string[] = [];
  const layer = layerOf(file);
  const rel = relative(repoRoot, file);
  for (const site of importsOf(text)) {
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
    // Type-only imports count too: a type from the CLI in the page ties the page to the CLI's files.
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
  return violations;
}

describe('architecture', () => {
  const files = [...sourceFiles(srcRoot), ...sourceFiles(webRoot)];

  it('finds the source tree and the page', () => {
    assert.ok(files.filter((file) => layerOf(file) !== 'web').length > 50);
    assert.ok(files.includes(join(webRoot, 'app.ts')));
    assert.ok(files.some((file) => layerOf(file) === 'capture'));
  });

  it('keeps imports pointing one way, node:* out of web-standard layers, and npm packages out of the core', () => {
    const violations = files.flatMap((file) => violationsOf(file, readFileSync(file, 'utf8')));
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

    const page = join(webRoot, 'app.ts');
    assert.deepEqual(
      violationsOf(
        page,
        [
          "import type { Recording } from '../src/cli/inspect/recording.ts';",
          "import { serve } from '../src/node/serve.ts';",
          "import { createGateway } from '../src/server/create-gateway.ts';",
          "import { readFile } from 'node:fs/promises';",
          "import { parseCaptureFile } from '../src/capture/capture-file.ts';",
          "import { stream } from '../src/client/token-stream.ts';",
          "import { Marked } from 'marked';",
        ].join('\n'),
      ),
      [
        'web/app.ts: web must not import cli (../src/cli/inspect/recording.ts)',
        'web/app.ts: web must not import node (../src/node/serve.ts)',
        'web/app.ts: web must not import server (../src/server/create-gateway.ts)',
        'web/app.ts: web must not import node:fs/promises',
      ],
    );
    const capture = join(srcRoot, 'capture', 'capture-file.ts');
    assert.deepEqual(
      violationsOf(
        capture,
        "import type { DialectSource } from '../cli/chat/resolve-endpoint.ts';\nimport { x } from '../client/index.ts';\nimport { btoa } from 'node:buffer';",
      ),
      [
        'src/capture/capture-file.ts: capture must not import cli (../cli/chat/resolve-endpoint.ts)',
        'src/capture/capture-file.ts: capture must not import client (../client/index.ts)',
        'src/capture/capture-file.ts: capture must not import node:buffer',
      ],
    );
  });
});
