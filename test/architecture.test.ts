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

/**
 * The gateway's parts (src/server/): a folder, or one of the files at its top. The request's path is on
 * top (the guard, the gateway, the stages in request/); what the stages share and use sits below.
 */
type ServerPart =
  | 'http'
  | 'upstream'
  | 'observability'
  | 'resume'
  | 'relay'
  | 'pool'
  | 'routes'
  | 'context'
  | 'request'
  | 'gateway'
  | 'guard'
  | 'api';

/** Which parts each part of the gateway may import (its own always): imports point one way. */
const SERVER_ALLOWED: Record<ServerPart, readonly ServerPart[]> = {
  // Requests and responses as HTTP: headers, bodies, signals, ids, output format, error answers.
  http: [],
  // The upstreams: what goes upstream, which upstream serves a model, calls beside generation.
  upstream: ['http'],
  // Metrics (Prometheus), telemetry (OpenTelemetry), the request log line.
  observability: ['http', 'upstream', 'pool'],
  // Resume stores and resumed bodies.
  resume: ['http'],
  // Writing one stream to the client: SSE/NDJSON or plain text, coalescing, verbatim frames.
  relay: ['http', 'resume'],
  // The pool of replicas behind a model, used by the upstream-call stage.
  pool: ['http', 'upstream'],
  // The answers that are not a generation: side routes, token counts, model lists, the Responses cursor.
  routes: ['http', 'upstream', 'observability', 'resume'],
  // gateway-context.ts and gateway-options.ts: what every stage shares; it imports no stage.
  context: ['http', 'upstream', 'observability', 'resume', 'relay', 'pool'],
  // The stages in order: admit, read, upstream call, relay or answer whole, end.
  request: ['http', 'upstream', 'observability', 'resume', 'relay', 'pool', 'routes', 'context'],
  // create-gateway.ts: the fetch handler that runs the stages.
  gateway: ['http', 'upstream', 'observability', 'resume', 'relay', 'pool', 'routes', 'context', 'request'],
  // The security layer in front of the gateway.
  guard: ['http', 'upstream', 'observability', 'resume', 'relay', 'context', 'gateway'],
  // index.ts: the public API (`tokenwire/server`).
  api: [
    'http',
    'upstream',
    'observability',
    'resume',
    'relay',
    'pool',
    'routes',
    'context',
    'request',
    'gateway',
    'guard',
  ],
};

/** The files at the top of src/server/ and the part each belongs to. */
const SERVER_TOP_FILES: Readonly<Record<string, ServerPart>> = {
  'gateway-context.ts': 'context',
  'gateway-options.ts': 'context',
  'create-gateway.ts': 'gateway',
  'index.ts': 'api',
};

const serverRoot = join(srcRoot, 'server');

/** The gateway part a file is in; a folder or top file missing from the tables is returned as its name. */
function serverPartOf(file: string): { part: ServerPart | undefined; name: string } {
  const rel = relative(serverRoot, file).replace(/\\/g, '/');
  const name = rel.includes('/') ? rel.split('/')[0]! : rel;
  const part = rel.includes('/')
    ? Object.hasOwn(SERVER_ALLOWED, name)
      ? (name as ServerPart)
      : undefined
    : SERVER_TOP_FILES[name];
  return { part, name };
}

/** Imports between the gateway's parts that point the wrong way (`file` is under src/server/). */
function serverViolationsOf(file: string, text: string): string[] {
  if (!isInside(serverRoot, file)) return [];
  const rel = relative(repoRoot, file);
  const own = serverPartOf(file);
  if (own.part === undefined)
    return [`${rel}: ${own.name} is not a part in SERVER_ALLOWED or SERVER_TOP_FILES`];
  const violations: string[] = [];
  for (const site of importsOf(text)) {
    if (!site.specifier.startsWith('.')) continue;
    const target = resolve(dirname(file), site.specifier);
    if (!isInside(serverRoot, target)) continue;
    const other = serverPartOf(target);
    if (other.part === own.part) continue;
    if (other.part === undefined || !SERVER_ALLOWED[own.part].includes(other.part))
      violations.push(`${rel}: ${own.part} must not import ${other.part ?? other.name} (${site.specifier})`);
  }
  return violations;
}

/** Each file's relative imports (type imports included), resolved to files. */
function importGraph(texts: ReadonlyMap<string, string>): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const [file, text] of texts) {
    const targets = importsOf(text)
      .filter((site) => site.specifier.startsWith('.'))
      .map((site) => resolve(dirname(file), site.specifier));
    graph.set(file, [...new Set(targets)]);
  }
  return graph;
}

/** The import circles of a graph: its strongly connected components of more than one file (or a self-import). */
function importCircles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  const visit = (file: string): void => {
    index.set(file, counter);
    low.set(file, counter);
    counter++;
    stack.push(file);
    onStack.add(file);
    for (const next of graph.get(file) ?? []) {
      if (!graph.has(next)) continue;
      if (!index.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(file, Math.min(low.get(file)!, index.get(next)!));
    }
    if (low.get(file) !== index.get(file)) return;
    const members: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      members.push(member);
    } while (member !== file);
    if (members.length > 1 || (graph.get(file) ?? []).includes(file))
      circles.push(members.map((path) => relative(repoRoot, path).replace(/\\/g, '/')).sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return circles;
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

  it('has no import circle under src/ (type imports included)', () => {
    const texts = new Map(sourceFiles(srcRoot).map((file) => [file, readFileSync(file, 'utf8')] as const));
    assert.deepEqual(importCircles(importGraph(texts)), []);
  });

  it('finds a planted import circle, type-only imports included', () => {
    const context = join(serverRoot, 'gateway-context.ts');
    const end = join(serverRoot, 'request', 'end-request.ts');
    const call = join(serverRoot, 'request', 'call.ts');
    const texts = new Map([
      [context, "import type { Call } from './request/call.ts';"],
      [call, "import type { RequestEnd } from './end-request.ts';"],
      [end, "import type { GatewayContext } from '../gateway-context.ts';"],
      [join(serverRoot, 'create-gateway.ts'), "import { GatewayContext } from './gateway-context.ts';"],
    ]);
    assert.deepEqual(importCircles(importGraph(texts)), [
      ['src/server/gateway-context.ts', 'src/server/request/call.ts', 'src/server/request/end-request.ts'],
    ]);
    texts.set(context, '');
    assert.deepEqual(importCircles(importGraph(texts)), []);
  });

  it("keeps imports between the gateway's parts pointing one way", () => {
    const violations = sourceFiles(serverRoot).flatMap((file) =>
      serverViolationsOf(file, readFileSync(file, 'utf8')),
    );
    assert.deepEqual(violations, []);
    // The table itself points one way: no part reaches itself through the others.
    const parts = new Map(
      Object.entries(SERVER_ALLOWED).map(([part, allowed]) => [part, allowed.map(String)] as const),
    );
    assert.deepEqual(importCircles(parts), []);
  });

  it("checks the gateway's table (planted violations are caught)", () => {
    assert.deepEqual(
      serverViolationsOf(
        join(serverRoot, 'http', 'read-body.ts'),
        "import type { GatewayContext } from '../gateway-context.ts';\nimport { x } from './incoming-request.ts';",
      ),
      ['src/server/http/read-body.ts: http must not import context (../gateway-context.ts)'],
    );
    assert.deepEqual(
      serverViolationsOf(
        join(serverRoot, 'gateway-context.ts'),
        "import type { Call } from './request/call.ts';\nimport { GatewayMetrics } from './observability/gateway-metrics.ts';",
      ),
      ['src/server/gateway-context.ts: context must not import request (./request/call.ts)'],
    );
    assert.deepEqual(
      serverViolationsOf(join(serverRoot, 'request', 'read-request.ts'), "import { y } from '../misc/y.ts';"),
      ['src/server/request/read-request.ts: request must not import misc (../misc/y.ts)'],
    );
    assert.deepEqual(serverViolationsOf(join(serverRoot, 'misc', 'y.ts'), ''), [
      'src/server/misc/y.ts: misc is not a part in SERVER_ALLOWED or SERVER_TOP_FILES',
    ]);
  });
});
